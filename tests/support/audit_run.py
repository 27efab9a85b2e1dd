"""Test helpers: where the shared corpora are, and an in-process scan with ``scan``'s options."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_audit.audit.results import ScanResult
from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.audit.scan_options import scan_options as build_scan_options
from kafka_audit.engines.local import audit_in_process
from kafka_audit.log.log_dir import discover

_REPO = Path(__file__).resolve().parent.parent.parent
# /work/shared beside the main checkout, or two levels up from a worktree (/work/wt/<name>).
# The one place tests find it; SHARED names the first candidate when neither exists.
SHARED = next(
    (p for p in (_REPO.parent / "shared", _REPO.parent.parent / "shared") if p.is_dir()), _REPO.parent / "shared"
)
# The corpora real brokers wrote for this project, bundled in the repository (corpus/README.md).
BUNDLED = _REPO / "corpus"
BUNDLED_CORPORA = ("real-broker", "real-broker-4", "real-broker-4-live", "real-broker-replicas", "real-broker-probes")
# Third-party data dirs with no stated license: never bundled, read from ../shared where present.
THIRD_PARTY_CORPUS = "real"
THIRD_PARTY_SKIP = "third-party corpus ../shared/corpus/real not found beside the checkout"


def corpus_dir(name: str) -> Path:
    """The corpus ``name``: a bundled one always (missing is a failure, never a skip); the
    third-party one from ``../shared`` where present, else the test is skipped with one reason."""
    if name in BUNDLED_CORPORA:
        path = BUNDLED / name
        if not path.is_dir():
            pytest.fail(f"bundled corpus {path} is missing: the checkout is incomplete")
        return path
    if name != THIRD_PARTY_CORPUS:
        raise ValueError(f"unknown corpus {name!r}")
    path = SHARED / "corpus" / name
    if path.is_dir():
        return path
    pytest.skip(THIRD_PARTY_SKIP)


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
