"""The terminal's words and widths: counts with their noun in the right number, a rate in a unit
that reads, a path shortened from the left with its file name kept, and the line that closes a
long report."""

from __future__ import annotations

from typing import Any

from kafka_audit.rules.catalogue import SEVERITIES

ELLIPSIS = "…"
# Below this many seconds a rate says nothing (the start-up dominates): it is left out.
_RATE_MIN_SECONDS = 1.0
_RATE_UNITS = ("B/s", "KB/s", "MB/s", "GB/s")
# A severity's plural in the closing line ("1 error", "2 errors", "3 info").
_SEVERITY_PLURALS = {"error": "errors", "warning": "warnings", "info": "info"}


def plural(count: int, one: str, many: str | None = None) -> str:
    """``1 segment``, ``2 segments``, ``1,024 batches`` (``many`` where ``s`` is not the plural)."""
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


# Decimal units (KB = 1000 B), and three significant digits at most.
_DECIMAL_STEP = 1000
_WHOLE_FROM = 100


def rate(byte_count: int, seconds: float) -> str | None:
    """Bytes per second in decimal units (B/s, KB/s, MB/s, GB/s) with three significant digits at
    most; None for a run shorter than a second, whose rate would be start-up time."""
    if seconds < _RATE_MIN_SECONDS:
        return None
    value = byte_count / seconds
    unit = 0
    while value >= _DECIMAL_STEP and unit < len(_RATE_UNITS) - 1:
        value /= _DECIMAL_STEP
        unit += 1
    digits = 0 if value >= _WHOLE_FROM or unit == 0 else 1
    return f"{value:.{digits}f} {_RATE_UNITS[unit]}"


def wall_time(summary: dict[str, Any]) -> str:
    """The summary's wall time and, for a run of a second or more, the rate it read at."""
    seconds = float(summary.get("wall_time_s", 0.0))
    speed = rate(int(summary.get("bytes_read", summary.get("bytes", 0))), seconds)
    return f"{seconds:.1f} s" + (f" ({speed})" if speed else "")


def shorten_left(path: str, width: int) -> str:
    """``path`` in at most ``width`` characters: whole when it fits, else its leading folders
    replaced by ``…`` (``…/orders-0/00000000000000000000.log``), keeping the file name whole as
    long as ``…/`` and the name fit, and its tail only when even they do not."""
    if len(path) <= width:
        return path
    parts = path.split("/")
    kept = parts[-1]
    for part in reversed(parts[:-1]):
        if len(ELLIPSIS) + 1 + len(part) + 1 + len(kept) > width:
            break
        kept = f"{part}/{kept}"
    shortened = f"{ELLIPSIS}/{kept}"
    if len(shortened) <= width:
        return shortened
    return ELLIPSIS + path[len(path) - max(width - 1, 0):] if width > 0 else ""


def severity_counts(severities: dict[str, int]) -> str:
    """``2 errors, 1 warning, 2 info``: the counts by severity, most severe first."""
    return ", ".join(plural(severities[s], s, _SEVERITY_PLURALS[s]) for s in SEVERITIES if severities.get(s))


def findings_line(severities: dict[str, int], exit_code: int) -> str:
    """The line that closes a scan's table: ``5 findings: 2 errors, 1 warning, 2 info — exit code 1``."""
    total = sum(severities.values())
    counts = severity_counts(severities)
    return f"{plural(total, 'finding')}" + (f": {counts}" if counts else "") + f" — exit code {exit_code}"
