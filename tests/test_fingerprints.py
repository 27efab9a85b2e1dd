"""Finding fingerprints (SPEC section 2): the same anomaly gives the same fingerprint across runs,
machines and path prefixes; two findings of one scan never share one. Through the Python API
(``kafka_audit.scan``), whose findings carry ``fingerprint`` and ``baseline`` like every output."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import kafka_audit
from kafka_audit.rules.findings import assign_fingerprints, make_finding
from tests.conftest import FIXTURES
from tests.support.audit_run import corpus_dir

FAULTY_ARGS = {
    "max_message_bytes": 1000,
    "reference_time": 1700003600000,
    "timestamp_before_max_ms": 86400000,
    "timestamp_after_max_ms": 3600000,
    "compacted_topics": ["missing-key-compacted"],
}


def _fingerprints(path: Path, **options) -> list[tuple[str, str, int | None, str]]:
    result = kafka_audit.scan(path, engine="local", **options)
    return [(f["check"], f["topic"], f["offset"], f["fingerprint"]) for f in result.findings]


def test_same_log_dir_under_two_parent_paths_gives_the_same_fingerprints(tmp_path):
    """Copies (new modification times, other folders above) fingerprint as the original does."""
    first = tmp_path / "machine-a" / "faulty"
    second = tmp_path / "b" / "deeper" / "captured-logs" / "faulty"
    for copy in (first, second):
        shutil.copytree(FIXTURES / "faulty", copy, symlinks=True, copy_function=shutil.copy)
    original = _fingerprints(FIXTURES / "faulty", **FAULTY_ARGS)
    assert len(original) > 40
    assert _fingerprints(first, **FAULTY_ARGS) == original
    assert _fingerprints(second, **FAULTY_ARGS) == original


def test_a_partition_scanned_alone_keeps_its_fingerprints():
    """Scanning one partition folder instead of its log dir (another PATH, other relative
    segment paths) does not change its findings' fingerprints."""
    whole = kafka_audit.scan(FIXTURES / "producer-errors", engine="local").findings
    alone = kafka_audit.scan(FIXTURES / "producer-errors" / "test-8", engine="local").findings
    assert [f["segment"] for f in whole] != [f["segment"] for f in alone]
    assert [f["fingerprint"] for f in alone] == [f["fingerprint"] for f in whole]


@pytest.mark.parametrize(
    "corpus, options",
    [
        (FIXTURES / "faulty", FAULTY_ARGS),
        (FIXTURES / "producer-errors", {"broker_logs": [FIXTURES / "broker-logs" / "producer-errors.server.log"]}),
        ("real-broker", {}),
        ("real-broker-4", {}),
        ("real-broker-probes", {}),
        ("real", {}),
    ],
)
def test_no_two_findings_of_a_scan_share_a_fingerprint(corpus, options):
    path = corpus if isinstance(corpus, Path) else corpus_dir(corpus)
    findings = kafka_audit.scan(path, engine="local", **options).findings
    fingerprints = [f["fingerprint"] for f in findings]
    assert all(len(fp) == 32 and int(fp, 16) >= 0 for fp in fingerprints)
    assert len(set(fingerprints)) == len(fingerprints)
    assert not any(f["baseline"] for f in findings)


def test_findings_no_field_tells_apart_get_distinct_stable_fingerprints():
    """Two findings alike in every identity field (SPEC: never share one) are told apart by their
    rank in SPEC order, the same on every run."""

    def alike():
        return [make_finding("skipped_file", "not a segment", segment=f"{folder}/notes.txt") for folder in ("a", "b")]

    first, second = alike(), alike()
    assign_fingerprints(first)
    assign_fingerprints(second)
    assert first[0].fingerprint != first[1].fingerprint
    assert [f.fingerprint for f in first] == [f.fingerprint for f in second]


def test_fingerprint_changes_with_what_tells_anomalies_apart():
    base = {"topic": "orders", "partition": 3, "segment": "orders-3/00000000000000000000.log", "offset": 42}
    variants = [
        make_finding("crc_mismatch", "m", **base),
        make_finding("crc_mismatch", "m", **{**base, "offset": 43}),
        make_finding("crc_mismatch", "m", **{**base, "partition": 4}),
        make_finding("crc_mismatch", "m", **{**base, "topic": "payments"}),
        make_finding("truncated_batch", "m", **base),
        make_finding("crc_mismatch", "m", **{**base, "segment": "orders-3/00000000000000000042.log"}),
        make_finding("crc_mismatch", "m", **{**base, "record_index": 2}),
    ]
    for finding in variants:
        assign_fingerprints([finding])
    assert len({f.fingerprint for f in variants}) == len(variants)
    # The folders above the segment's file and the message are not part of it.
    moved = make_finding("crc_mismatch", "other words", **{**base, "segment": "/mnt/x/orders-3/00000000000000000000.log"})
    assign_fingerprints([moved])
    assert moved.fingerprint == variants[0].fingerprint
