"""The producer-state parts of Kafka's ``LogSegmentTest`` (core, kafka.log) ported to offline logs.

Not ported: the index, time index, read, truncate and preallocation tests (no producer state;
the index checks have their own tests), testRecoveryRebuildsEpochCache (leader epochs, not producer
state).
"""

from __future__ import annotations

from tests.support.conformance import ABORT, COMMIT, Scenario
from tests.support.writer import TS_BASE, BatchSpec, Faults, ProducerState, RecordSpec


def _segment_at_100(tmp_path) -> Scenario:
    """pid 5 and pid 10 transactions (sequence 100), plain records, ABORT pid 10, COMMIT pid 5."""
    log = Scenario(tmp_path, start_offset=100)
    log.data(5, 0, 100, 2, txn=True)  # 100..101
    log.data(10, 0, 100, 2, txn=True)  # 102..103
    log.raw(BatchSpec(records=(RecordSpec(value=b"a"), RecordSpec(value=b"b"))))  # 104..105
    log.marker(10, 0, ABORT)  # 106
    log.marker(5, 0, COMMIT)  # 107
    return log


def test_recover_transaction_index(tmp_path):
    """testRecoverTransactionIndex: recovery indexes the aborted transaction of pid 10 as
    (102, 106); when pid 10's transaction began in an earlier segment (its state says 75) the entry
    starts there."""
    out = _segment_at_100(tmp_path).run()
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in out.replay.transactions.aborted_transactions()] == [(10, 102, 106)]
    assert [f.check for f in out.findings if f.severity != "info"] == ["retention_gap", "retention_gap"]
    assert not [f for f in out.findings if f.check == "txn_index_mismatch"]
    # The transaction from pid 10 began on a previous segment: the snapshot at 100 says 75. (Its
    # last sequence is 99 here, not Kafka's 10, so that sequence 100 goes on from it.)
    began_earlier = _segment_at_100(tmp_path)
    began_earlier.snapshot(100, [ProducerState(10, 0, 99, 74, 0, TS_BASE, 0, 75)])
    out = began_earlier.run()
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in out.replay.transactions.aborted_transactions()] == [(10, 75, 106)]


def test_recovery_with_corrupt_message(tmp_path):
    """testRecoveryWithCorruptMessage: recovery truncates the log at the first corrupt batch, so
    no broker builds producer state past it; the audit reports the corrupt batch and no
    producer-state finding that would only follow from its absence."""
    log = Scenario(tmp_path)
    for seq in range(20):
        faults = Faults(bad_crc=True) if seq == 7 else Faults()
        log.raw(BatchSpec(records=(RecordSpec(value=b"%d" % seq),), producer_id=1, producer_epoch=0,
                          base_sequence=seq, faults=faults))
    out = log.run()
    assert [(f.check, f.offset) for f in out.findings] == [("crc_mismatch", 7)]
    assert out.entry(1).last_seq == 19
