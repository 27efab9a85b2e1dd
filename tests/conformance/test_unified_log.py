"""The producer-state parts of Kafka's ``UnifiedLogTest`` (core, kafka.log) ported to offline logs,
read as :mod:`tests.conformance.test_producer_state_manager` reads ProducerStateManagerTest: an
``assertThrows`` on ``appendAsLeader`` is a log ending with that append, whose error code the audit
must report on it; ``appendAsFollower`` is ``AppendOrigin.REPLICATION`` (nothing rejected).

Not ported (broker operations on a live log an offline copy cannot hold): the snapshot file
management and truncation tests (testProducerIdMapTruncateTo, testProducerIdMapTruncateToWithNoSnapshots,
testProducerIdMapTruncateFullyAndStartAt, testRetentionDeletesProducerStateSnapshots,
testCompactionDeletesProducerStateSnapshots, testLoadingLogDeletesProducerStateSnapshotsPastLogEndOffset,
testTakeSnapshotOnRollAndDeleteSnapshotOnRecoveryPointCheckpoint, testInitializationOfProducerSnapshotsUpgradePath,
testProducerIdMapOffsetUpdatedForNonIdempotentData, testProducerExpireCheckAfterDelete: scheduler and
snapshot files of a running broker).
"""

from __future__ import annotations

from types import SimpleNamespace

from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.rules.replay.producer_state_entry import AppendOrigin
from kafka_audit.rules.replay.producer_state_manager import ProducerStates
from kafka_audit.rules.validation.log_validator import ALWAYS_COMPACTED_TOPICS, ValidationConfig
from tests.support.conformance import ABORT, Scenario
from tests.support.writer import TS_BASE, BatchSpec, Faults, ProducerState, RecordSpec

PID = 1
EPOCH = 0


def _rejected(outcome, check: str, code: int) -> None:
    assert [(c, e) for c, e, o in outcome.errors() if o == outcome.last] == [(check, code)], outcome.errors()
    assert [x for x in outcome.errors() if x[2] != outcome.last] == []


def test_duplicate_appends(tmp_path):
    """testDuplicateAppends: the last 5 batches are the duplicate window."""
    log = Scenario(tmp_path)
    for seq in range(6):  # pad the beginning of the log: sequences 0..5
        log.data(PID, EPOCH, seq)
    log.data(PID, EPOCH, 6, 3)  # an entry with multiple records: 6..8
    multi = log.run().last
    # A duplicate of the tail with multiple records: the original offsets, nothing appended.
    dup = log.then(lambda s: s.data(PID, EPOCH, 6, 3))
    assert [(f.check, f.error_code, f.details["original_offset"]) for f in dup.on(dup.last)] == [
        ("duplicate_sequence", None, multi)
    ]
    # A partial duplicate of the tail is not allowed: OutOfOrderSequenceException.
    _rejected(log.then(lambda s: s.data(PID, EPOCH, 7, 2)), "out_of_order_sequence", 45)
    # The batch 4th from the tail (sequence 2) is still retained: a duplicate.
    fourth = log.then(lambda s: s.data(PID, EPOCH, 2))
    assert [(f.check, f.details["original_offset"]) for f in fourth.on(fourth.last)] == [("duplicate_sequence", 2)]
    # Older than the last 5 batches (sequence 1): OutOfOrderSequenceException.
    _rejected(log.then(lambda s: s.data(PID, EPOCH, 1)), "out_of_order_sequence", 45)
    # A single-record duplicate at the tail returns the original entry's offsets.
    log.data(PID, EPOCH, 9)
    single = log.run().last
    again = log.then(lambda s: s.data(PID, EPOCH, 9))
    assert [(f.check, f.details["original_offset"]) for f in again.on(again.last)] == [("duplicate_sequence", single)]


def test_duplicate_append_to_follower():
    """testDuplicateAppendToFollower: validation is not performed on the follower."""
    follower = ProducerStates("t-0", AppendOrigin.REPLICATION)
    first = SimpleNamespace(producer_id=PID, producer_epoch=EPOCH, base_offset=0, last_offset=1, base_sequence=0,
                            last_sequence=1, max_timestamp=1, is_transactional=False)
    again = SimpleNamespace(**{**vars(first), "base_offset": 2, "last_offset": 3})
    assert follower.append_data(first) is None
    assert follower.append_data(again) is None  # the duplicate sequences are accepted
    assert follower.get(PID).last_data_offset == 3


def test_multiple_producers_with_duplicates_in_single_append():
    """testMultipleProducersWithDuplicatesInSingleAppend: a follower accepts batches with duplicates."""
    follower = ProducerStates("t-0", AppendOrigin.REPLICATION)
    for offset, (pid, seq) in enumerate([(1, 0), (2, 0), (1, 1), (2, 1), (1, 1)]):
        batch = SimpleNamespace(producer_id=pid, producer_epoch=EPOCH, base_offset=offset, last_offset=offset,
                                base_sequence=seq, last_sequence=seq, max_timestamp=1, is_transactional=False)
        assert follower.append_data(batch) is None
    assert follower.get(1).last_data_offset == 4


def test_old_producer_epoch(tmp_path):
    """testOldProducerEpoch: InvalidProducerEpochException."""
    log = Scenario(tmp_path).data(PID, 1, 0)
    _rejected(log.then(lambda s: s.data(PID, 0, 0)), "fenced_epoch_write", 47)


def test_producer_id_expiration_on_segment_deletion(tmp_path):
    """testProducerIdExpirationOnSegmentDeletion: deleting segments keeps producer state (the
    snapshot at the new log start knows pid 1, whose only batch was deleted)."""
    log = Scenario(tmp_path, start_offset=1)
    log.snapshot(1, [ProducerState(1, 0, 0, 0, 0, TS_BASE)])
    log.data(2, 0, 0).data(2, 0, 1)
    out = log.run()
    assert out.findings == []
    assert set(out.replay.producers.client.entries) == {1, 2}


def test_delete_snapshots_on_increment_log_start_offset(tmp_path):
    """testDeleteSnapshotsOnIncrementLogStartOffset: deleting records does not remove producer
    state; pid 2's last sequence stays 0."""
    log = Scenario(tmp_path, start_offset=2)
    log.snapshot(2, [ProducerState(1, 0, 0, 0, 0, TS_BASE), ProducerState(2, 0, 0, 1, 0, TS_BASE)])
    out = log.run()
    assert len(out.replay.producers.client.entries) == 2
    assert out.entry(2).last_seq == 0


def test_producer_snapshot_after_segment_roll_on_append(tmp_path):
    """testProducerSnapshotAfterSegmentRollOnAppend: the snapshot at the roll (offset 1) holds the
    first batch, first and last data offset 0, and agrees with the log."""
    log = Scenario(tmp_path)
    log.data(PID, 0, 0).data(PID, 0, 1)
    log.snapshot(1, [ProducerState(PID, 0, 0, 0, 0, TS_BASE)])
    out = log.run()
    assert out.findings == []
    assert out.replay.stats.snapshots_compared == 1


def test_rebuild_transactional_state(tmp_path):
    """testRebuildTransactionalState: after an ABORT there is no first unstable offset."""
    log = Scenario(tmp_path)
    log.data(137, 5, 0, 3, txn=True).marker(137, 5, ABORT)
    out = log.run()
    assert out.replay.transactions.open_transactions() == {}
    assert [f.check for f in out.findings] == []  # the writer indexed the aborted transaction
    assert [(t.first_offset, t.last_offset) for t in out.replay.transactions.aborted_transactions()] == [(0, 3)]


def test_periodic_producer_id_expiration(tmp_path):
    """testPeriodicProducerIdExpiration: producer.id.expiration.ms 200; 100 ms idle keeps the
    producer, 200 ms forgets it (isProducerExpired: now - lastTimestamp >= expiration)."""
    options = ScanOptions(producer_id_expiration_ms=200)
    kept = Scenario(tmp_path).data(23, 0, 0, ts=TS_BASE).data(23, 0, 1, ts=TS_BASE + 100).run(options)
    assert kept.checks() == []
    gone = Scenario(tmp_path).data(23, 0, 0, ts=TS_BASE).data(23, 0, 1, ts=TS_BASE + 200).run(options)
    assert gone.checks() == ["producer_expired"]


def test_rebuild_producer_id_map_with_compacted_data(tmp_path):
    """testRebuildProducerIdMapWithCompactedData: a cleaned batch (offsets 23..26, records at 24
    and 26) keeps its header's sequence range: last sequence 3."""
    log = Scenario(tmp_path, topic="foo", start_offset=23)
    records = (RecordSpec(key=b"key", value=b"b", offset_delta=1), RecordSpec(key=b"key", value=b"d", offset_delta=3))
    log.raw(BatchSpec(records=records, producer_id=PID, producer_epoch=0, base_sequence=0,
                      faults=Faults(last_offset_delta=3)))
    out = log.run(ScanOptions(validation=_compacted("foo")))
    assert out.written(PID).last_seq == 3
    assert out.errors() == []


def test_rebuild_producer_state_with_empty_compacted_batch(tmp_path):
    """testRebuildProducerStateWithEmptyCompactedBatch: an empty batch retained for its producer
    state (offsets 23..24) gives last sequence 1."""
    log = Scenario(tmp_path, topic="foo", start_offset=23)
    log.raw(BatchSpec(records=(), producer_id=PID, producer_epoch=0, base_sequence=0,
                      faults=Faults(last_offset_delta=1)))
    out = log.run(ScanOptions(validation=_compacted("foo")))
    assert out.written(PID).last_seq == 1
    assert out.errors() == []


def test_update_producer_id_map_with_compacted_data(tmp_path):
    """testUpdateProducerIdMapWithCompactedData: the follower's append of the cleaned batch sets
    last sequence 3 (the same batch as testRebuildProducerIdMapWithCompactedData, appended live)."""
    follower = ProducerStates("foo-0", AppendOrigin.REPLICATION)
    cleaned = SimpleNamespace(producer_id=PID, producer_epoch=0, base_offset=23, last_offset=26, base_sequence=0,
                              last_sequence=3, max_timestamp=1, is_transactional=False)
    assert follower.append_data(cleaned) is None
    assert follower.get(PID).last_seq == 3


def _compacted(topic: str) -> ValidationConfig:
    return ValidationConfig(compacted_topics=frozenset({topic}) | ALWAYS_COMPACTED_TOPICS)
