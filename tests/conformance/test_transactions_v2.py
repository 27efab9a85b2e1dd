"""Kafka 4.x's transactions v2 rules (KIP-890 part 2) ported to offline logs: the TV2 cases of
``ProducerStateManagerTest`` (storage module) and ``TransactionMetadataTest`` (core, the
coordinator), as the other conformance files port Kafka's tests. A TV2 producer is recognised
from the log (a COMMIT at its transaction's epoch + 1), as the replay does without
``__transaction_state``; the same history under TV0/1 (markers at the data's epoch) keeps the
Kafka 3.x rules.

An ``assertThrows`` on an append is a log ending with that append: the audit reports the
exception's error code there (InvalidProducerEpochException -> 47)."""

from __future__ import annotations

import pytest

from kafka_audit.audit.scan_options import ScanOptions
from tests.support.conformance import ABORT, COMMIT, Scenario

PID = 1


@pytest.fixture
def log(tmp_path) -> Scenario:
    return Scenario(tmp_path)


def tv2_history(log: Scenario, transactions: int, start_epoch: int = 0) -> int:
    """``transactions`` TV2 transactions (data at E, COMMIT at E + 1, the next from sequence 0):
    TransactionMetadataTest.testEpochBumpOnEndTxn, once per transaction. Returns the epoch after."""
    epoch = start_epoch
    for _ in range(transactions):
        log.data(PID, epoch, 0, 2, txn=True).marker(PID, epoch + 1, COMMIT)
        epoch += 1
    return epoch


def test_epoch_bump_on_end_txn(log):
    """TransactionMetadataTest.testEpochBumpOnEndTxn: each end bumps the epoch by one; the log of
    ordinary TV2 transactions holds no finding, and the timeline one epoch_bump per end."""
    tv2_history(log, 4)
    out = log.run()
    assert out.findings == []
    bumps = [(e.offset, e.producer_epoch) for e in out.replay.events if e.kind == "epoch_bump"]
    assert bumps == [(2, 1), (5, 2), (8, 3), (11, 4)]


def test_control_record_bumps_producer_epoch(log):
    """ProducerStateManagerTest.testControlRecordBumpsProducerEpoch: after an ABORT at epoch + 1
    the entry has the new epoch and no sequence; data at it from sequence 0 is accepted."""
    log.data(PID, 0, 0, txn=True).marker(PID, 1, ABORT).data(PID, 1, 0, txn=True).marker(PID, 2, COMMIT)
    out = log.run()
    assert out.findings == []
    entry = out.entry(PID)
    assert (entry.producer_epoch, entry.current_txn_first_offset) == (2, -1)


@pytest.mark.parametrize("version", [0, 2])
def test_old_epoch_for_control_record(log, version):
    """ProducerStateManagerTest.testOldEpochForControlRecord (TV0 and TV2): a marker below the
    current epoch is fenced; at the current epoch with the transaction open only TV2 fences it."""
    # TV2: two transactions make the producer's version known (epoch 5 after them); TV0: epoch 5.
    epoch = tv2_history(log, 5) if version == 2 else 5
    log.data(PID, epoch, 0, txn=True)
    below = log.then(lambda s: s.marker(PID, 3, COMMIT))
    assert [(c, e) for c, e, _ in below.errors()] == [("fenced_epoch_write", 47)]
    same = log.then(lambda s: s.marker(PID, epoch, COMMIT))
    if version == 2:
        (fenced,) = same.errors()
        assert fenced[:2] == ("fenced_epoch_write", 47)
        (finding,) = [f for f in same.findings if f.check == "fenced_epoch_write"]
        assert finding.details["transaction_version"] == 2 and "4.x" in finding.details["broker_rule"]
        assert "<= the last seen epoch" in finding.message
    else:
        assert same.errors() == []


def test_idempotent_tv2_marker_retry_is_legal(log):
    """KAFKA-19999 (``ProducerAppendInfo.checkProducerEpoch``): a TV2 marker written again at the
    current epoch with no transaction open is a retry of one already written: accepted, and no
    orphan either."""
    epoch = tv2_history(log, 2)
    log.marker(PID, epoch, COMMIT)
    out = log.run()
    assert out.findings == []


def test_producer_state_after_fencing_abort_marker(log):
    """ProducerStateManagerTest.testProducerStateAfterFencingAbortMarker with the TV2 coordinator's
    +2 (TransactionCoordinator.handleInitProducerId, TransactionMetadata.prepareFenceProducerEpoch):
    the open transaction at E is aborted at E + 1, the new instance writes at E + 2. One fencing,
    reported at the ABORT, and the zombie's later write at E is fenced."""
    epoch = tv2_history(log, 2)
    log.data(PID, epoch, 0, txn=True).marker(PID, epoch + 1, ABORT).data(PID, epoch + 2, 0, txn=True)
    log.marker(PID, epoch + 3, COMMIT)
    out = log.run()
    (bump,) = [f for f in out.findings if f.check == "epoch_bump"]
    assert (bump.offset, bump.details["reason"], bump.details["previous_epoch"]) == (out.offsets[-3], "fenced", epoch)
    assert bump.details["new_instance_epoch"] == epoch + 2 and bump.details["open_transaction_aborted"]
    assert out.errors() == []
    entry = out.entry(PID)
    assert (entry.producer_epoch, entry.last_data_offset) == (epoch + 3, -1)
    zombie = log.then(lambda s: s.data(PID, epoch, 1, txn=True))
    assert [(c, e) for c, e, o in zombie.errors()] == [("fenced_epoch_write", 47)]


def test_timeout_abort_told_from_client_abort(log):
    """TransactionCoordinator.abortTimedOutTransactions: an ABORT (at epoch + 1) written after the
    transaction had run the transaction timeout is the coordinator's (``timeout_abort``); one
    written sooner is the client's (no finding)."""
    epoch = tv2_history(log, 1)
    start = 1_700_000_000_000
    log.data(PID, epoch, 0, txn=True, ts=start).marker(PID, epoch + 1, ABORT, ts=start + 5_000)
    log.data(PID, epoch + 1, 0, txn=True, ts=start + 6_000).marker(PID, epoch + 2, ABORT, ts=start + 6_000 + 61_000)
    out = log.run(ScanOptions(transaction_timeout_ms=60_000))
    (bump,) = out.findings
    assert (bump.check, bump.details["reason"], bump.offset) == ("epoch_bump", "timeout_abort", out.last)
    assert bump.details["transaction_timeout_ms"] == 60_000 and bump.details["duration_ms"] == 61_000


def test_tv0_markers_keep_the_kafka_3_rules(log):
    """The same fencing under TV0/1 (markers at the data's epoch): the Kafka 3.x reading, a fenced
    bump at the ABORT and another at the new instance's first batch."""
    log.data(PID, 0, 0, txn=True).marker(PID, 0, COMMIT)
    log.data(PID, 0, 1, txn=True).marker(PID, 1, ABORT).data(PID, 2, 0, txn=True).marker(PID, 2, COMMIT)
    out = log.run()
    bumps = [(f.details["reason"], f.producer_epoch) for f in out.findings if f.check == "epoch_bump"]
    assert bumps == [("fenced", 1), ("fenced", 2)]
    assert all("broker_rule" not in f.details for f in out.findings)
