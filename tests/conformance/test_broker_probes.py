"""A real Kafka 3.6.2 broker's answers to crafted produce requests (shared/corpus/real-broker-probes):
one test per case. Read as its README says: where the broker rejected the probe, the audit reports
an error finding on the probe batch with the broker's error code (with KIP-467 ``record_errors``,
exactly those record indexes) and no error on the prefix; where it accepted the probe, no error
finding; where it deduplicated a retry, a ``duplicate_sequence`` finding on the probe and nothing
else (SPEC section 2)."""

from __future__ import annotations

import json

import pytest

from tests.support.audit_run import corpus_dir, scan

CASES = (
    "seq-gap",
    "new-epoch-nonzero-seq",
    "old-epoch",
    "dup-last",
    "dup-beyond-window",
    "unknown-pid-nonzero-seq",
    "pid-seq-minus1",
    "compact-keyless",
    "ts-too-old",
    "too-large",
    "offset-deltas-nonmonotonic",
    "crc-corrupt",
    "producer-control-batch",
    "seq-next-ok",
    "compact-tombstone-ok",
)


def _case(name: str) -> dict:
    root = corpus_dir("real-broker-probes")
    return json.loads((root / "expected.json").read_text())[name] | {"root": root}


def _predict(name: str) -> None:
    case = _case(name)
    result = scan(case["root"] / case["path"], case["args"])
    probe = case["probe_base_offset"]
    on_probe = [f for f in result.findings if f.batch_base_offset == probe]
    prefix_errors = [(f.check, f.offset) for f in result.findings if f.severity == "error" and f not in on_probe]
    assert prefix_errors == [], "the prefix was answered NONE"
    broker = case["broker"]
    if case["duplicate_of_offset"] is not None:
        assert [(f.check, f.details.get("original_offset")) for f in result.findings] == [
            ("duplicate_sequence", case["duplicate_of_offset"])
        ]
        assert on_probe[0].error_code is None  # the broker answered NONE
    elif case["accepted"]:
        assert [(f.check, f.message) for f in on_probe if f.severity == "error"] == []
    else:
        code = broker["error_code"]
        hits = [f for f in on_probe if f.severity == "error" and f.error_code == code]
        assert hits, (code, [(f.check, f.error_code) for f in on_probe])
        if broker["record_error_indexes"]:
            assert sorted(f.record_index for f in hits) == broker["record_error_indexes"]


@pytest.mark.parametrize("name", CASES)
def test_the_audit_predicts_the_brokers_answer(name):
    _predict(name)
