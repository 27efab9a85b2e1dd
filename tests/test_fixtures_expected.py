"""The bundled fixture dirs against their EXPECTED.json, and the real-broker corpus.

Each of ``fixtures/healthy``, ``fixtures/faulty`` and ``fixtures/producer-errors`` is audited in
one process (``audit_in_process``) with the scan options its EXPECTED.json names; the findings
must be exactly the expected ones (no more, no fewer), carry the SPEC error code, name and
KIP-691 client outcome of their check, and together the faulty dirs must exercise every check
of SPEC section 2. The logs under ``../shared/corpus/real/`` were written by real brokers and
must give no error or warning.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from kafka_audit.audit.scan_options import ScanOptions, scan_options
from kafka_audit.engines.local import audit_in_process
from kafka_audit.io.broker_log import read_broker_logs
from kafka_audit.log.log_dir import discover
from kafka_audit.rules.catalogue import CHECKS, ERRORS
from tests.conftest import FIXTURES, REPO
from tests.support.audit_run import SHARED

# The contract: ../shared/SPEC.md where it is beside the checkout, else the copy in tests/contract
# (test_the_contract_copy_is_the_shared_contract holds the two equal where both exist).
SHARED_SPEC = SHARED / "SPEC.md"
CONTRACT_COPY = REPO / "tests" / "contract" / "SPEC.md"
SPEC_PATH = SHARED_SPEC if SHARED_SPEC.is_file() else CONTRACT_COPY

# SPEC section 2, both tables: check -> (severity, error code, error name). Written out here
# so that a change to kafka_audit/rules/catalogue.py cannot move the contract along with it.
SPEC_CHECKS: dict[str, tuple[str, int | None, str | None]] = {
    "crc_mismatch": ("error", 2, "CORRUPT_MESSAGE"),
    "truncated_batch": ("error", 2, "CORRUPT_MESSAGE"),
    "invalid_batch_size": ("error", 2, "CORRUPT_MESSAGE"),
    "unknown_magic": ("error", 2, "CORRUPT_MESSAGE"),
    "decompression_failed": ("error", 2, "CORRUPT_MESSAGE"),
    "nested_compression": ("error", 87, "INVALID_RECORD"),
    "inner_magic_mismatch": ("error", 87, "INVALID_RECORD"),
    "missing_key_compacted": ("error", 87, "INVALID_RECORD"),
    "non_monotonic_offsets": ("error", 87, "INVALID_RECORD"),
    "invalid_control_batch": ("error", 87, "INVALID_RECORD"),
    "invalid_producer_fields": ("error", 87, "INVALID_RECORD"),
    "timestamp_out_of_range": ("error", 32, "INVALID_TIMESTAMP"),
    "invalid_timestamp_type": ("error", 32, "INVALID_TIMESTAMP"),
    "record_too_large": ("error", 10, "MESSAGE_TOO_LARGE"),
    "offset_overlap": ("error", None, None),
    "offset_gap": ("warning", None, None),
    "index_mismatch": ("warning", None, None),
    "unreadable_segment": ("error", None, None),
    "skipped_file": ("info", None, None),
    "epoch_bump": ("info", None, None),
    "fenced_epoch_write": ("error", 47, "INVALID_PRODUCER_EPOCH"),
    "new_epoch_nonzero_sequence": ("error", 45, "OUT_OF_ORDER_SEQUENCE_NUMBER"),
    "out_of_order_sequence": ("error", 45, "OUT_OF_ORDER_SEQUENCE_NUMBER"),
    "duplicate_sequence": ("error", None, None),
    "unknown_producer_id": ("warning", None, None),
    "retention_gap": ("warning", None, None),
    "snapshot_mismatch": ("warning", None, None),
    "hanging_transaction": ("error", None, None),
    "open_transaction": ("info", None, None),
    "transaction_state_violation": ("error", 48, "INVALID_TXN_STATE"),
    "orphan_marker": ("info", None, None),
    "coordinator_epoch_regression": ("error", 52, "TRANSACTION_COORDINATOR_FENCED"),
    "txn_index_mismatch": ("warning", None, None),
    "producer_expired": ("info", None, None),
    # Its error is the one in the broker's log line.
    "broker_rejection": ("warning", None, None),
    "segment_changed": ("warning", None, None),
    "missing_segment": ("warning", None, None),
}
# SPEC rows with two severities ("info / warning"): the second is the check's own, the first its
# variant (incomplete_tail: info when the file changed during the scan).
SPEC_TWO_SEVERITIES = {"incomplete_tail": (("warning", None, None), ("info", None, None))}
# Checks whose SPEC rows name a second error a finding may carry instead (record_too_large over
# segment.bytes: UnifiedLog.append's RECORD_LIST_TOO_LARGE).
SPEC_ALTERNATIVE_ERRORS = {"record_too_large": (18, "RECORD_LIST_TOO_LARGE")}
# SPEC section 5: the checks of __remote_log_metadata (no Kafka error code).
SPEC_REMOTE_CHECKS = {
    "remote_segment_incomplete": ("warning", None, None),
    "remote_segment_overlap": ("error", None, None),
    "remote_log_gap": ("warning", None, None),
    "remote_segment_missing": ("error", None, None),
    "remote_txn_index_flag": ("info", None, None),
}
# SPEC section 6 (replica_truncation is a warning when its records were above every high watermark).
SPEC_REPLICA_CHECKS = {
    "replica_divergence": ("error", None, None),
    "replica_truncation": ("error", None, None),
    "replica_lag": ("info", None, None),
}
# SPEC non_monotonic_offsets: in an uncompressed v2 batch, non-consecutive deltas are a warning
# (Kafka 3.6 accepts them): no error a producer saw.
SPEC_WARNING_VARIANTS = {"non_monotonic_offsets": ("warning", None, None)}
# SPEC missing_segment: the checkpoint case on a copy of a running broker is info.
SPEC_INFO_VARIANTS = {"missing_segment": ("info", None, None)}
# SPEC section 2 / LogValidator.processRecordErrors: every culprit record of a batch carries the
# batch's answer, INVALID_TIMESTAMP when any of its records' timestamps is out of range.
RECORD_CHECKS = {"nested_compression", "inner_magic_mismatch", "missing_key_compacted", "non_monotonic_offsets",
                 "timestamp_out_of_range", "invalid_timestamp_type"}

# The two producer-state errors of fixtures/producer-errors, in the broker's words
# (ProducerAppendInfo.checkSequence).
KAFKA_PRODUCER_ERRORS = {
    "new_epoch_nonzero_sequence": "Invalid sequence number for new epoch of producer 557891 at offset 120 in "
    "partition test-8: 3 (request epoch), 4 (seq. number), 2 (current producer epoch)",
    "out_of_order_sequence": "Out of order sequence number for producer 557891 at offset 130 in partition "
    "test-8: 9 (incoming seq. number), 7 (current end sequence number)",
}

FIXTURE_DIRS = ("healthy", "faulty", "producer-errors", "transactions-v2")
MATCH_KEYS = ("check", "severity", "topic", "partition", "offset", "record_index", "segment", "position")
OUTCOMES = {"retriable", "abortable", "fatal", "none"}


def load_expected(name: str) -> dict:
    return json.loads((FIXTURES / name / "EXPECTED.json").read_text())


def options_of(options: dict) -> ScanOptions:
    """The ScanOptions of an EXPECTED.json ``options`` object (names as in ScanOptions and
    ValidationConfig; absent ones take the SPEC defaults)."""
    known = {
        "max_message_bytes",
        "reference_time",
        "timestamp_before_max_ms",
        "timestamp_after_max_ms",
        "compacted_topics",
        "transaction_timeout_ms",
        "broker_log",
    }
    assert set(options) <= known, f"EXPECTED.json options the test does not know: {set(options) - known}"
    named = ("max_message_bytes", "timestamp_before_max_ms", "timestamp_after_max_ms", "reference_time",
             "transaction_timeout_ms")
    return scan_options(
        compacted_topics=options.get("compacted_topics", ()),
        **{name: options[name] for name in named if name in options},
        # --broker-log files, named relative to fixtures/
        broker_log=read_broker_logs([str(FIXTURES / p) for p in options["broker_log"]]) if "broker_log" in options else None,
    )


_RESULTS: dict[str, object] = {}


def audit_fixture(name: str):
    if name not in _RESULTS:
        expected = load_expected(name)
        _RESULTS[name] = audit_in_process(discover([str(FIXTURES / name)]), options_of(expected["options"]))
    return _RESULTS[name]


def matches(expected: dict, finding) -> bool:
    for key in MATCH_KEYS:
        if key in expected and getattr(finding, key) != expected[key]:
            return False
    return all(finding.details.get(k, object()) == v for k, v in expected.get("details", {}).items())


def describe(finding) -> str:
    return (
        f"{finding.check} {finding.topic}-{finding.partition} offset={finding.offset} "
        f"record_index={finding.record_index} segment={finding.segment} position={finding.position} "
        f"details={finding.details}: {finding.message}"
    )


# ---------------------------------------------------------------------------------------------
# the contract itself
# ---------------------------------------------------------------------------------------------


def test_the_contract_copy_is_the_shared_contract():
    if not SHARED_SPEC.is_file():
        pytest.skip("../shared/SPEC.md not beside the checkout: tests/contract/SPEC.md is the contract here")
    assert CONTRACT_COPY.read_bytes() == SHARED_SPEC.read_bytes(), "tests/contract/SPEC.md differs from ../shared/SPEC.md"


def test_spec_table_written_here_is_the_spec():
    text = SPEC_PATH.read_text()
    section = text[text.index("## 2. Findings") : text.index("## 3. Reports")]
    rows = re.findall(r"^\| `([a-z_]+)` \|.*\| (none|\d+ [A-Z_]+|the error in the line) \| (error|warning|info) \|$", section, re.M)
    parsed: dict[str, tuple] = {}
    alternatives: dict[str, tuple] = {}
    for check, error, severity in rows:
        entry = (severity, None, None) if not error[0].isdigit() else (severity, int(error.split()[0]), error.split()[1])
        if check in parsed:
            alternatives[check] = entry[1:]
        else:
            parsed[check] = entry
    assert parsed == SPEC_CHECKS
    assert alternatives == SPEC_ALTERNATIVE_ERRORS
    two = re.findall(r"^\| `([a-z_]+)` \|.*\| none \| (info|warning|error) / (info|warning|error) \|$", section, re.M)
    assert {c: ((b, None, None), (a, None, None)) for c, a, b in two} == SPEC_TWO_SEVERITIES


def test_remote_checks_written_here_are_the_spec():
    text = SPEC_PATH.read_text()
    section = text[text.index("## 5. Remote inputs") : text.index("## 6. Replicas")]
    rows = re.findall(r"^\| `([a-z_]+)` \|.*\| (error|warning|info) \|$", section, re.M)
    assert {check: (severity, None, None) for check, severity in rows} == SPEC_REMOTE_CHECKS


def test_replica_checks_written_here_are_the_spec():
    text = SPEC_PATH.read_text()
    section = text[text.index("## 6. Replicas") :]
    rows = re.findall(r"^\| `([a-z_]+)` \|.*\| (error|warning|info)[^|]*\|$", section, re.M)
    assert {check: (severity, None, None) for check, severity in rows} == SPEC_REPLICA_CHECKS


def test_errors_table_matches_the_spec():
    assert set(CHECKS) == set(SPEC_CHECKS) | set(SPEC_REMOTE_CHECKS) | set(SPEC_REPLICA_CHECKS) | set(SPEC_TWO_SEVERITIES)
    own = {check: severities[0] for check, severities in SPEC_TWO_SEVERITIES.items()}
    for check, (severity, code, name) in {**SPEC_CHECKS, **SPEC_REMOTE_CHECKS, **SPEC_REPLICA_CHECKS, **own}.items():
        spec = CHECKS[check]
        assert spec.severity == severity, check
        assert (spec.error.code if spec.error else None, spec.error.name if spec.error else None) == (code, name), check
        assert spec.client_outcome in OUTCOMES


# ---------------------------------------------------------------------------------------------
# fixtures against EXPECTED.json
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURE_DIRS)
def test_findings_are_exactly_the_expected_ones(name):
    expected = load_expected(name)["findings"]
    findings = list(audit_fixture(name).findings)
    unmatched = list(findings)
    missing = []
    for entry in expected:
        candidates = [f for f in unmatched if matches(entry, f)]
        if len(candidates) != 1:
            missing.append((entry, [describe(f) for f in candidates]))
            continue
        unmatched.remove(candidates[0])
    assert not missing, "expected findings not matched exactly once:\n" + "\n".join(
        f"{json.dumps(e)} -> {c}" for e, c in missing
    )
    assert not unmatched, "findings not in EXPECTED.json:\n" + "\n".join(describe(f) for f in unmatched)
    assert len(findings) == len(expected)


def spec_answers(f) -> set[tuple]:
    """The (severity, error code, error name) triples the SPEC allows a finding of ``f.check``."""
    if f.check in SPEC_TWO_SEVERITIES:
        return set(SPEC_TWO_SEVERITIES[f.check])
    severity, code, error_name = SPEC_CHECKS[f.check]
    allowed = {(severity, code, error_name)}
    if f.check in SPEC_INFO_VARIANTS:
        allowed.add(SPEC_INFO_VARIANTS[f.check])
    if f.check in SPEC_ALTERNATIVE_ERRORS:
        allowed.add((severity, *SPEC_ALTERNATIVE_ERRORS[f.check]))
    if f.check in SPEC_WARNING_VARIANTS:
        allowed.add(SPEC_WARNING_VARIANTS[f.check])
    if f.check in RECORD_CHECKS and f.record_index is not None:
        allowed.add((severity, 32, "INVALID_TIMESTAMP"))
    if f.check == "broker_rejection" and f.error_name in ERRORS:
        # SPEC broker_rejection: "the error in the line".
        allowed.add((severity, ERRORS[f.error_name].code, f.error_name))
    return allowed


@pytest.mark.parametrize("name", FIXTURE_DIRS)
def test_every_finding_carries_the_spec_error_and_outcome(name):
    for f in audit_fixture(name).findings:
        error_name = f.error_name
        assert (f.severity, f.error_code, error_name) in spec_answers(f), describe(f)
        if f.check == "epoch_bump":
            # SPEC section 2: only a fenced instance is fatal (ProducerFencedException).
            assert f.client_outcome == ("fatal" if f.details["reason"] == "fenced" else "none"), describe(f)
        elif error_name is None:
            # No error a producer saw: the check's own outcome, or none for the warning variant.
            variant = f.severity != CHECKS[f.check].severity
            assert f.client_outcome == ("none" if variant else CHECKS[f.check].client_outcome), describe(f)
        else:
            # KIP-691: what a producer does with the error the broker answers
            assert f.client_outcome == ERRORS[error_name].client_outcome, describe(f)
        assert f.client_outcome in OUTCOMES
        assert f.message and f.message.strip() == f.message
        assert f.topic is not None and f.partition is not None


def test_findings_are_in_spec_order():
    # SPEC section 3: ordered by topic, partition, offset, check.
    for name in FIXTURE_DIRS:
        findings = audit_fixture(name).findings
        keys = [(f.topic, f.partition, -1 if f.offset is None else f.offset, f.check) for f in findings]
        assert keys == sorted(keys), name


def test_producer_errors_are_kafkas_words():
    findings = audit_fixture("producer-errors").findings
    notes = {e["check"]: e["note"] for e in load_expected("producer-errors")["findings"]}
    for check, kafka_message in KAFKA_PRODUCER_ERRORS.items():
        (finding,) = [f for f in findings if f.check == check]
        assert finding.message == kafka_message
        assert notes[check] == kafka_message  # EXPECTED.json quotes the same words
        assert (finding.topic, finding.partition, finding.producer_id) == ("test", 8, 557891)
        assert (finding.error_code, finding.error_name) == (45, "OUT_OF_ORDER_SEQUENCE_NUMBER")


# Checks no still fixture can show: a file changed while the scan ran (tests/test_live.py).
SCAN_TIME_CHECKS = {"segment_changed"}


def test_every_spec_check_is_exercised_by_the_faulty_fixtures():
    checks = (set(SPEC_CHECKS) | set(SPEC_TWO_SEVERITIES)) - SCAN_TIME_CHECKS
    seen = Counter(f.check for name in ("faulty", "producer-errors") for f in audit_fixture(name).findings)
    assert checks - set(seen) == set()
    assert set(seen) <= checks
    expected = Counter(e["check"] for name in ("faulty", "producer-errors") for e in load_expected(name)["findings"])
    assert checks <= set(expected)


def test_healthy_fixture_summary():
    expected = load_expected("healthy")
    result = audit_fixture("healthy")
    assert result.findings == []
    assert result.summary["partitions"] == expected["summary"]["partitions"]
    assert result.summary["segments"] == expected["summary"]["segments"]
    assert result.summary["batches"] > 0 and result.summary["records"] > 0
    assert result.summary["findings_by_check"] == {}
    assert result.summary["transactions"]["committed"] > 0 and result.summary["transactions"]["aborted"] > 0


def test_transactions_v2_fixture_is_clean_with_a_timeline_of_its_epochs():
    """fixtures/transactions-v2 (Kafka 4, transaction.version 2): ordinary transactions give no
    finding at all; each end marker, at its transaction's epoch + 1, is an epoch_bump event of the
    timeline (8 ends of ledger-writer in each partition, 8 of ledger-audit in partition 1)."""
    result = audit_in_process(discover([str(FIXTURES / "transactions-v2")]), ScanOptions(timeline=True))
    assert result.findings == []
    assert result.summary["transactions"] == {"committed": 16, "aborted": 8, "open": 0}
    bumps = Counter((e.partition, e.producer_id) for e in result.events if e.kind == "epoch_bump")
    assert bumps == {(0, 5001): 8, (1, 5001): 8, (1, 5002): 8}
    epochs = {(e.partition, e.producer_id): [] for e in result.events if e.kind == "epoch_bump"}
    for e in result.events:
        if e.kind == "epoch_bump":
            epochs[(e.partition, e.producer_id)].append(e.producer_epoch)
    assert all(got == list(range(1, 9)) for got in epochs.values())


# ---------------------------------------------------------------------------------------------
# the real-broker corpus
# ---------------------------------------------------------------------------------------------

# Batches per source as SOURCES.md gives them (kafka-python's decoder): the audit must have read
# them all, so "no finding" cannot come from reading nothing.
CORPUS_BATCHES = {
    "marioBarbozaA__AIBulb": 11_366,
    "fuzibotond__Experts-in-team-innovation": 6_387,
    "silvagois__project_data_enginnering": 98,
    "DanielMorales9__kafkafun": 873,
    "Bheem6005__kafka": 19,
}


def corpus_sources(corpus: Path) -> list[Path]:
    return sorted(p for p in corpus.iterdir() if p.is_dir())


def test_corpus_sources_are_the_known_ones(corpus):
    assert {p.name for p in corpus_sources(corpus)} == set(CORPUS_BATCHES)


@pytest.mark.parametrize("source", sorted(CORPUS_BATCHES))
def test_real_broker_logs_give_no_error_or_warning(corpus, source):
    path = corpus / source
    result = audit_in_process(discover([str(path)]), ScanOptions())
    bad = [describe(f) for f in result.findings if f.severity in ("error", "warning")]
    assert bad == []
    assert result.summary["batches"] == CORPUS_BATCHES[source]
    # Nothing of these logs is left unread.
    assert not [n for n in result.notes if "skipped" in n and ".log" in n]


def test_real_broker_idempotent_producers_are_replayed(corpus):
    # fuzibotond's node holds 5 idempotent producer ids and their .snapshot files: the replay
    # saw them (and found nothing to report, above).
    result = audit_in_process(discover([str(corpus / "fuzibotond__Experts-in-team-innovation")]), ScanOptions())
    assert result.summary["producers"] == 5
    assert [f for f in result.findings if f.check in CHECKS and CHECKS[f.check].group != "Culprit records"] == []
