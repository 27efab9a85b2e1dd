"""Test helpers: where the shared corpora are, and an in-process scan with ``scan``'s options."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_audit.audit.plan import ScanOptions, ScanResult, audit_in_process
from kafka_audit.audit.scan_options import scan_options as build_scan_options
from kafka_audit.log.log_dir import discover

_REPO = Path(__file__).resolve().parent.parent.parent
# /work/shared beside the main checkout, or two levels up from a worktree (/work/wt/<name>).
# The one place tests find it; SHARED names the first candidate when neither exists.
SHARED = next(
    (p for p in (_REPO.parent / "shared", _REPO.parent.parent / "shared") if p.is_dir()), _REPO.parent / "shared"
)


def shared_corpus(name: str) -> Path:
    """``shared/corpus/<name>``, or skip the test when the shared corpora are absent."""
    path = SHARED / "corpus" / name
    if path.is_dir():
        return path
    pytest.skip(f"shared corpus {name!r} not found beside the repository")


def scan_options(args: list[str] = ()) -> ScanOptions:
    """The ScanOptions ``kafka-audit scan`` builds from these options (the subset the corpora use)."""
    values: dict[str, list[str]] = {}
    it = iter(args)
    for name in it:
        values.setdefault(name, []).append(next(it))
    one = lambda name, default=None: int(values[name][-1]) if name in values else default  # noqa: E731
    names = {
        "--max-message-bytes": "max_message_bytes",
        "--timestamp-before-max-ms": "timestamp_before_max_ms",
        "--timestamp-after-max-ms": "timestamp_after_max_ms",
        "--reference-time": "reference_time",
        "--producer-id-expiration-ms": "producer_id_expiration_ms",
        "--transaction-timeout-ms": "transaction_timeout_ms",
    }
    options = build_scan_options(
        compacted_topics=values.get("--compacted-topic", ()),
        **{name: one(flag) for flag, name in names.items() if flag in values},
    )
    unknown = set(values) - {
        "--compacted-topic", "--max-message-bytes", "--timestamp-before-max-ms", "--timestamp-after-max-ms",
        "--reference-time", "--producer-id-expiration-ms", "--transaction-timeout-ms",
    }
    assert not unknown, f"scan_options does not map {sorted(unknown)}"
    return options


def scan(path: Path | str, args: list[str] = ()) -> ScanResult:
    """``kafka-audit scan PATH [args]`` in this process (the engine-independent audit core)."""
    options = scan_options(list(args))
    return audit_in_process(discover([str(path)]), options)
