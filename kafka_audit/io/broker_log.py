"""Broker ``server.log`` files (``scan --broker-log``): read into log entries (one header line and
its continuation lines: a multi-line exception's class and message, then its stack trace), of
which the produce errors and the retention lines become :class:`BrokerLogLine` values
(``broker_log_lines.py``) that the partition step joins with the replayed log
(``rules/rejection/broker_rejection.py``).

Kafka logs through log4j (``config/log4j.properties``, Kafka 2.x-3.x) and log4j2
(``config/log4j2.yaml``, Kafka 4.x). Both ship the layout ``[%d] %p %m (%c)%n``:
``[2022-03-14 16:11:02,431] ERROR [ReplicaManager broker=23] ... (kafka.server.ReplicaManager)``,
the throwable printed on the lines after the message. Operators often change the layout; a header
is recognised wherever it starts on the line (a journald or container prefix before it is
skipped) with the date as ``yyyy-MM-dd HH:mm:ss,SSS`` or ISO-8601 (``T``, ``.`` or ``,``
milliseconds, an optional zone), an optional ``[thread]`` and the level. A time without a zone
is read as UTC (Kafka's own images log in UTC).

Files: plain text or gzip (by content, so ``server.log.3.gz`` and a renamed one both work);
rotated files (``server.log.1``, ``server.log.2022-03-14-16``) are ordinary files; a directory
stands for every ``server.log*`` file in it.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache

from kafka_audit.errors import KafkaAuditError
from kafka_audit.io.broker_log_lines import LOG_START, REJECTION, SEGMENT_DELETED, BrokerLogLine, LogEntry, classify

__all__ = ["BrokerLog", "BrokerLogError", "BrokerLogLine", "LOG_START", "REJECTION", "SEGMENT_DELETED", "read_broker_logs"]

# A header: [date time,ms zone] [thread] LEVEL rest  (brackets and thread optional).
_HEADER = re.compile(
    r"\[?(?P<date>\d{4}-\d{2}-\d{2})[ T](?P<clock>\d{2}:\d{2}:\d{2})(?:[,.](?P<fraction>\d{1,9}))?"
    r"(?P<zone>Z|[+-]\d{2}:?\d{2})?\]?"
    r"(?:\s+\[[^\]]*\])?\s+(?P<level>TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\s+(?P<message>.*)$"
)
# A header may start this far into its line (after a journald or container prefix).
_MAX_PREFIX = 120
_DATE = re.compile(r"\[?\d{4}-\d{2}-\d{2}[ T]\d")
# At most this many lines of one entry are kept (a stack trace of a deep call is long).
MAX_ENTRY_LINES = 64
_GZIP_MAGIC = b"\x1f\x8b"
# KafkaApis' DEBUG line for a failure ReplicaManager also logged comes within this time of it.
_SAME_FAILURE_MS = 1000
_KAFKA_APIS_LINE = "Produce request with correlation id"


class BrokerLogError(KafkaAuditError):
    """A ``--broker-log`` file that cannot be read: missing, unreadable, a broken gzip stream."""


@dataclass(slots=True)
class BrokerLog:
    """The lines of interest of every given file, in time order (file order for equal times)."""

    files: list[str]
    lines: list[BrokerLogLine] = field(default_factory=list)
    by_partition: dict[tuple[str, int], tuple[BrokerLogLine, ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        grouped: dict[tuple[str, int], list[BrokerLogLine]] = {}
        for line in self.lines:
            grouped.setdefault(line.key, []).append(line)
        self.by_partition = {key: tuple(lines) for key, lines in grouped.items()}

    def for_partition(self, topic: str, partition: int) -> tuple[BrokerLogLine, ...]:
        return self.by_partition.get((topic, partition), ())

    def summary(self, scanned: Iterable[tuple[str, int]]) -> dict[str, int]:
        """Counts for the scan summary: lines read, produce errors among them, and lines about
        partitions the scan did not hold (reported nowhere else)."""
        keys = set(scanned)
        return {
            "broker_log_files": len(self.files),
            "broker_log_lines": len(self.lines),
            "broker_log_rejections": sum(1 for line in self.lines if line.kind == REJECTION),
            "broker_log_lines_unmatched": sum(len(lines) for key, lines in self.by_partition.items() if key not in keys),
        }


def read_broker_logs(paths: Iterable[str]) -> BrokerLog:
    """Read and classify every file (a directory: its ``server.log*`` files). Raises
    :class:`BrokerLogError` with a one-line reason for a file that cannot be read."""
    files = broker_log_files(paths)
    lines: list[BrokerLogLine] = []
    for path in files:
        lines.extend(classify(read_entries(path)))
    lines.sort(key=lambda line: line.time)
    return BrokerLog(files, _without_repeats(lines))


def _without_repeats(lines: list[BrokerLogLine]) -> list[BrokerLogLine]:
    """A failure that ReplicaManager logged at ERROR is also KafkaApis' DEBUG line when debug
    logging is on: one rejection, kept once (the ERROR line, which carries the message)."""
    logged: dict[tuple, list[int]] = {}
    for line in lines:
        if line.kind == REJECTION and not _from_kafka_apis(line):
            logged.setdefault((line.key, line.exception), []).append(line.time)  # in time order

    def repeats(line: BrokerLogLine) -> bool:
        if line.kind != REJECTION or not _from_kafka_apis(line):
            return False
        times = logged.get((line.key, line.exception), [])
        index = bisect_right(times, line.time)
        return index > 0 and line.time - times[index - 1] <= _SAME_FAILURE_MS

    return [line for line in lines if not repeats(line)]


def _from_kafka_apis(line: BrokerLogLine) -> bool:
    return _KAFKA_APIS_LINE in line.text.split("\n", 1)[0]


def broker_log_files(paths: Iterable[str]) -> list[str]:
    """The files to read: each path itself, or for a directory its ``server.log*`` files (oldest
    rotation first: ``server.log.2`` before ``server.log.1`` before ``server.log``). Raises
    :class:`BrokerLogError` naming a path that does not exist or cannot be read."""
    files: list[str] = []
    for path in paths:
        if not os.path.exists(path):
            raise BrokerLogError(f"--broker-log {path}: no such file or directory")
        if os.path.isdir(path):
            try:
                names = [n for n in os.listdir(path) if n.startswith("server.log")]
            except OSError as exc:
                raise BrokerLogError(f"--broker-log {path}: {exc.strerror or exc}") from None
            if not names:
                raise BrokerLogError(f"--broker-log {path}: no server.log* file in this folder")
            files.extend(os.path.join(path, n) for n in sorted(names, key=_rotation_order))
        elif not os.access(path, os.R_OK):
            raise BrokerLogError(f"--broker-log {path}: permission denied")
        else:
            files.append(path)
    return files


def _rotation_order(name: str) -> tuple:
    """RollingFileAppender numbers older files higher (``.1`` is the newest rotated file);
    DailyRollingFileAppender suffixes dates. Oldest first; the live ``server.log`` last."""
    suffix = name.removeprefix("server.log").removesuffix(".gz").lstrip(".")
    if not suffix:
        return (2, 0, "")
    if suffix.isdigit():
        return (0, -int(suffix), "")
    return (1, 0, suffix)


def read_entries(path: str) -> Iterator[LogEntry]:
    """The entries of one file in file order. Lines before the first header are not an entry."""
    entry: LogEntry | None = None
    for number, raw in enumerate(_lines(path), start=1):
        line = raw.rstrip("\r\n")
        # Kafka's own layout starts the line with the header; other layouts may put a prefix first
        # (``Jan 26 10:07:14 host kafka-server-start.sh[15550]: ``), but a date deep inside a
        # message line is not a header.
        header = _header(line)
        if header is not None:
            if entry is not None:
                yield entry
            entry = LogEntry(
                path, number, parse_time(header), header["level"].replace("WARNING", "WARN"), header["message"],
                line[header.start():],
            )
        elif entry is not None and len(entry.more) < MAX_ENTRY_LINES and line.strip():
            entry.more.append(line.strip())
    if entry is not None:
        yield entry


def _header(line: str) -> re.Match | None:
    header = _HEADER.match(line)
    if header is None:
        date = _DATE.search(line, 0, _MAX_PREFIX + 16)
        header = _HEADER.match(line, date.start()) if date else None
    return header


def parse_time(header: re.Match) -> int:
    """Epoch milliseconds of a header's date, time, fraction and zone (UTC without a zone)."""
    fraction = (header["fraction"] or "0").ljust(3, "0")[:3]
    return _epoch_seconds(header["date"], header["clock"], header["zone"]) * 1000 + int(fraction)


@lru_cache(maxsize=4096)
def _epoch_seconds(date: str, clock: str, zone: str | None) -> int:
    """Lines of one second share the work (a busy broker logs hundreds a second)."""
    moment = datetime.fromisoformat(f"{date}T{clock}").replace(tzinfo=timezone.utc)
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        moment -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return int(moment.timestamp())


def _lines(path: str) -> Iterator[str]:
    try:
        with open(path, "rb") as probe:
            compressed = probe.read(2) == _GZIP_MAGIC
        opener = gzip.open if compressed else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
            yield from handle
    except (OSError, EOFError, zlib.error) as exc:
        raise BrokerLogError(f"--broker-log {path}: {getattr(exc, 'strerror', None) or exc}") from None
