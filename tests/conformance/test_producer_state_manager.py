"""Kafka's ``ProducerStateManagerTest`` (storage module, org.apache.kafka.storage.internals.log)
ported to offline logs: one test per Kafka test method, named after it, asserting what Kafka
asserts. An ``assertThrows`` on an append is a log ending with that append (the probe): the audit
must report the exception's error code on it (OutOfOrderSequenceException -> 45,
InvalidProducerEpochException -> 47, InvalidTxnStateException -> 48,
TransactionCoordinatorFencedException -> 52) and no error before it. State assertions read the
replay's state after the log: ``entry`` as the leader holds it (``AppendOrigin.CLIENT``),
``written`` as a follower or log recovery rebuilds it (``AppendOrigin.REPLICATION``).

Kafka's test methods not ported, and why, are listed at the end of this file.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.log.producer_snapshot import parse_producer_snapshot
from kafka_audit.rules.replay.producer_state_entry import AppendOrigin
from kafka_audit.rules.replay.producer_state_manager import ProducerStates
from tests.support.conformance import ABORT, COMMIT, Scenario
from tests.support.writer import TS_BASE, BatchSpec, ProducerState, _SidecarEncoders

INT_MAX = 2**31 - 1
PID = 1
EPOCH = 0
# ProducerStateManagerTest: maxTransactionTimeoutMs = 5 min; LATE_TRANSACTION_BUFFER_MS = 5 min.
LATE_TRANSACTION_TIMEOUT_MS = 5 * 60 * 1000 + 5 * 60 * 1000


@pytest.fixture
def log(tmp_path) -> Scenario:
    return Scenario(tmp_path)


def data(pid, epoch, seq, count=1, **kw):
    return lambda s: s.data(pid, epoch, seq, count, **kw)


def marker(pid, epoch, control_type, coordinator_epoch=0, **kw):
    return lambda s: s.marker(pid, epoch, control_type, coordinator_epoch, **kw)


def rejected(outcome, check: str, code: int | None) -> None:
    """The probe (last batch) got ``check`` with ``code``; nothing before it is an error."""
    assert [(c, e) for c, e, o in outcome.errors() if o == outcome.last] == [(check, code)], outcome.errors()
    assert [x for x in outcome.errors() if x[2] != outcome.last] == []


def accepted(outcome) -> None:
    assert outcome.errors() == []


def test_basic_id_mapping(log):
    """testBasicIdMapping."""
    log.data(PID, EPOCH, 0).data(PID, EPOCH, 1)
    accepted(log.run())
    # "Duplicates are checked separately" (UnifiedLog.analyzeAndValidateProducerState): a copy of
    # the last batch in the log is a duplicate_sequence, which the broker answers with NONE.
    dup = log.then(data(PID, EPOCH, 1))
    assert [(f.check, f.error_code, f.details["original_offset"]) for f in dup.on(dup.last)] == [
        ("duplicate_sequence", None, 1)
    ]
    # Invalid sequence number (greater than next expected sequence number)
    rejected(log.then(data(PID, EPOCH, 5)), "out_of_order_sequence", 45)
    # Change epoch, then the old epoch: InvalidProducerEpochException
    log.data(PID, EPOCH + 1, 0)
    accepted(log.run())
    rejected(log.then(data(PID, EPOCH, 0)), "fenced_epoch_write", 47)


def test_append_txn_marker_with_no_producer_state(tmp_path):
    """testAppendTxnMarkerWithNoProducerState (the marker is all that is left: retention)."""
    log = Scenario(tmp_path, start_offset=27)
    log.marker(PID, 2, COMMIT)
    first = log.run().entry(PID)
    assert (first.producer_epoch, first.producer_id, first.last_seq) == (2, PID, -1)
    # Fencing continues to work even if the marker is the only thing left
    rejected(log.then(data(PID, 0, 0)), "fenced_epoch_write", 47)
    # A non-zero sequence: OutOfOrderSequenceException, so that the producer can reset its state
    rejected(log.then(data(PID, 2, 17)), "out_of_order_sequence", 45)
    # Accepted when the sequence is reset to 0
    second = log.then(data(PID, 2, 0))
    accepted(second)
    assert (second.entry(PID).producer_epoch, second.entry(PID).last_seq) == (2, 0)


def test_producer_sequence_wrap_around(tmp_path):
    """testProducerSequenceWrapAround: a replicated batch at 2^31-1, then a client's sequence 0."""
    log = Scenario(tmp_path, start_offset=735)  # earlier data deleted: the log starts at 735
    log.data(PID, 15, INT_MAX).data(PID, 15, 0)
    out = log.run()
    accepted(out)
    assert out.checks() == ["retention_gap"]  # the producer's earlier sequences were deleted
    entry = out.entry(PID)
    assert (entry.producer_epoch, entry.batch_metadata[0].first_seq, entry.last_seq) == (15, INT_MAX, 0)


def test_producer_sequence_with_wrap_around_batch_record(tmp_path):
    """testProducerSequenceWithWrapAroundBatchRecord: one batch from 2^31-11 to 9."""
    log = Scenario(tmp_path, start_offset=2000)
    log.data(PID, 15, INT_MAX - 10, count=21)
    out = log.run()
    written = out.written(PID)
    first = written.batch_metadata[0]
    assert (first.first_seq, written.last_seq) == (INT_MAX - 10, 9)
    assert (first.first_offset, written.last_data_offset) == (2000, 2020)


def test_producer_sequence_invalid_wrap_around(tmp_path):
    """testProducerSequenceInvalidWrapAround: after 2^31-1 comes 0, not 1."""
    log = Scenario(tmp_path, start_offset=735)
    log.data(PID, 15, INT_MAX)
    rejected(log.then(data(PID, 15, 1)), "out_of_order_sequence", 45)


def test_no_validation_on_first_entry_when_loading_log(tmp_path):
    """testNoValidationOnFirstEntryWhenLoadingLog: the first batch of a producer sets its state."""
    log = Scenario(tmp_path, start_offset=735)
    log.data(PID, 5, 16)
    out = log.run()
    accepted(out)
    entry = out.written(PID)
    assert (entry.producer_epoch, entry.batch_metadata[0].first_seq, entry.last_seq) == (5, 16, 16)
    assert (entry.last_data_offset, entry.batch_metadata[0].first_offset) == (735, 735)


def test_control_record_bumps_producer_epoch(log):
    """testControlRecordBumpsProducerEpoch."""
    log.data(PID, EPOCH, 0).marker(PID, 1, ABORT)
    out = log.run()
    entry = out.entry(PID)
    assert (entry.producer_epoch, entry.current_txn_first_offset, entry.last_seq) == (1, -1, -1)
    # should be able to append with the new epoch if we start at sequence 0
    after = log.then(data(PID, 1, 0))
    accepted(after)
    assert after.entry(PID).batch_metadata[0].first_seq == 0


def test_update_producer_transaction_state(log):
    """updateProducerTransactionState: two transactional batches, then COMMIT."""
    log.data(PID, EPOCH, 0).data(PID, EPOCH, 1, 5, txn=True).data(PID, EPOCH, 6, 5, txn=True)
    opened = log.run()
    first_txn = opened.offsets[1]
    entry = opened.entry(PID)
    assert (entry.last_seq, entry.current_txn_first_offset) == (10, first_txn)
    assert entry.last_data_offset == opened.offsets[2] + 4
    done = log.then(marker(PID, EPOCH, COMMIT, 15))
    assert done.replay.stats.transactions_committed == 1
    (commit,) = [e for e in done.replay.events if e.kind == "transaction_commit"]
    assert (commit.producer_id, commit.offset) == (PID, done.last)
    assert f"offsets {first_txn} to {done.last}" in commit.message
    # appending the marker does not affect the metadata of the cached batches
    entry = done.entry(PID)
    assert (entry.last_seq, entry.current_txn_first_offset, entry.coordinator_epoch) == (10, -1, 15)
    accepted(done)


def test_out_of_sequence_after_control_record_epoch_bump(log):
    """testOutOfSequenceAfterControlRecordEpochBump."""
    log.data(PID, EPOCH, 0, txn=True).data(PID, EPOCH, 1, txn=True).marker(PID, 1, ABORT)
    # next append is invalid since we expect the sequence to be reset
    rejected(log.then(data(PID, 1, 2, txn=True)), "out_of_order_sequence", 45)
    rejected(log.then(data(PID, 2, 2, txn=True)), "new_epoch_nonzero_sequence", 45)
    # with the bumped epoch from sequence 0
    ok = log.then(data(PID, 1, 0, txn=True))
    accepted(ok)
    assert (ok.entry(PID).producer_epoch, ok.entry(PID).last_seq) == (1, 0)


def test_non_transactional_append_with_ongoing_transaction(log):
    """testNonTransactionalAppendWithOngoingTransaction: InvalidTxnStateException."""
    log.data(PID, EPOCH, 0, txn=True)
    rejected(log.then(data(PID, EPOCH, 1)), "transaction_state_violation", 48)


def test_recover_from_snapshot_unfinished_transaction(tmp_path):
    """testRecoverFromSnapshotUnfinishedTransaction: the snapshot keeps the last batch and the
    open transaction; an append after recovery goes on from it."""
    log = Scenario(tmp_path, start_offset=2)
    log.snapshot(2, [ProducerState(PID, EPOCH, 1, 1, 0, TS_BASE, -1, 0)])
    log.data(PID, EPOCH, 2, txn=True)
    out = log.run()
    accepted(out)
    assert [f.check for f in out.findings] == ["open_transaction"]
    loaded = out.replay.producers.written.entries[PID].batch_metadata[0]
    assert (loaded.first_offset, loaded.first_seq, loaded.last_offset, loaded.last_seq) == (1, 1, 1, 1)
    assert out.entry(PID).current_txn_first_offset == 0


def test_recover_from_snapshot_finished_transaction(tmp_path):
    """testRecoverFromSnapshotFinishedTransaction."""
    log = Scenario(tmp_path, start_offset=3)
    log.snapshot(3, [ProducerState(PID, EPOCH, 1, 1, 0, TS_BASE, 0, -1)])
    log.data(PID, EPOCH, 2)
    out = log.run()
    assert out.findings == []
    assert out.entry(PID).current_txn_first_offset == -1
    assert out.entry(PID).batch_metadata[0].last_seq == 1


def test_recover_from_snapshot_empty_transaction(tmp_path):
    """testRecoverFromSnapshotEmptyTransaction: an ABORT marker alone; its timestamp is kept."""
    log = Scenario(tmp_path, start_offset=1)
    log.snapshot(1, [ProducerState(PID, EPOCH, -1, -1, 0, TS_BASE + 7, 0, -1)])
    out = log.run()
    assert out.findings == []
    entry = out.entry(PID)
    assert (entry.last_timestamp, entry.current_txn_first_offset) == (TS_BASE + 7, -1)


def test_producer_state_after_fencing_abort_marker(log):
    """testProducerStateAfterFencingAbortMarker: the fencing ABORT clears the batch metadata and
    the producer does not expire (its epoch is kept to go on fencing)."""
    log.data(PID, EPOCH, 0, txn=True).marker(PID, EPOCH + 1, ABORT)
    out = log.run()
    entry = out.entry(PID)
    assert (entry.current_txn_first_offset, entry.last_data_offset) == (-1, -1)
    assert "producer_expired" not in out.checks()
    assert out.entry(PID) is not None


def test_remove_expired_pids_on_reload(log):
    """testRemoveExpiredPidsOnReload: an expired producer's next append is accepted and it is back."""
    log.data(PID, EPOCH, 0, ts=0 + TS_BASE).data(PID, EPOCH, 1, ts=1 + TS_BASE).data(PID, EPOCH, 2, ts=70001 + TS_BASE)
    out = log.run(ScanOptions(producer_id_expiration_ms=60_000))
    accepted(out)
    (expired,) = [f for f in out.findings if f.check == "producer_expired"]
    assert expired.details == {"idle_ms": 70000, "expected_sequence": 2}
    assert len(out.replay.producers.client.entries) == 1 and out.entry(PID).last_seq == 2


def test_accept_append_without_producer_state_on_replica(log):
    """testAcceptAppendWithoutProducerStateOnReplica: after expiry a replicated append is
    accepted and sets the state."""
    log.data(PID, EPOCH, 0, ts=TS_BASE).data(PID, EPOCH, 1, ts=TS_BASE + 1).data(PID, EPOCH, 2, ts=TS_BASE + 70001)
    out = log.run(ScanOptions(producer_id_expiration_ms=60_000))
    written = out.written(PID)
    assert (written.producer_epoch, written.batch_metadata[0].first_seq, written.last_seq) == (EPOCH, 2, 2)


def test_accept_append_with_sequence_gaps_on_replica():
    """testAcceptAppendWithSequenceGapsOnReplica: the client append is rejected and changes
    nothing; the same batch replicated is recorded."""
    batch = SimpleNamespace(producer_id=PID, producer_epoch=EPOCH, base_offset=0, last_offset=0, base_sequence=0,
                            last_sequence=0, max_timestamp=1, is_transactional=False)
    gap = SimpleNamespace(**{**vars(batch), "base_offset": 1, "last_offset": 1, "base_sequence": 3, "last_sequence": 3})
    states = ProducerStates("test-0", AppendOrigin.CLIENT)
    assert states.append_data(batch) is None
    assert states.append_data(gap).check == "out_of_order_sequence"
    assert states.get(PID).last_seq == 0
    assert states.append_data(gap, AppendOrigin.REPLICATION) is None
    assert states.get(PID).last_seq == 3


def test_load_from_snapshot_retains_non_expired_producers(tmp_path):
    """testLoadFromSnapshotRetainsNonExpiredProducers."""
    log = Scenario(tmp_path, start_offset=2)
    log.snapshot(2, [ProducerState(1, EPOCH, 0, 0, 0, TS_BASE), ProducerState(2, EPOCH, 0, 1, 0, TS_BASE)])
    out = log.run()
    assert len(out.replay.producers.client.entries) == 2
    assert (out.entry(1).last_seq, out.entry(1).last_data_offset) == (0, 0)
    assert (out.entry(2).last_seq, out.entry(2).last_data_offset) == (0, 1)


def test_pid_expiration_timeout(log):
    """testPidExpirationTimeout."""
    expiration = 86_400_000
    log.data(PID, 5, 0, ts=TS_BASE).data(PID, 5, 1, ts=TS_BASE + expiration + 1)
    out = log.run()
    accepted(out)
    assert out.checks() == ["producer_expired"]
    assert len(out.replay.producers.client.entries) == 1 and out.entry(PID).last_seq == 1


def test_producers_with_ongoing_transactions_dont_expire(log):
    """testProducersWithOngoingTransactionsDontExpire."""
    expiration = 86_400_000
    log.data(PID, 5, 0, txn=True, ts=TS_BASE).data(PID, 5, 1, txn=True, ts=TS_BASE + expiration + 1)
    out = log.run()
    assert "producer_expired" not in out.checks()
    assert out.entry(PID).current_txn_first_offset == 0


def test_sequence_not_validated_for_group_metadata_topic(tmp_path):
    """testSequenceNotValidatedForGroupMetadataTopic: AppendOrigin.COORDINATOR."""
    log = Scenario(tmp_path, topic="__consumer_offsets")
    log.data(PID, EPOCH, -1, txn=True).data(PID, EPOCH, -1, txn=True)
    out = log.run()
    replay_checks = {"out_of_order_sequence", "new_epoch_nonzero_sequence", "duplicate_sequence", "unknown_producer_id"}
    assert not replay_checks & set(out.checks())
    assert out.entry(PID).current_txn_first_offset == out.offsets[0]


def test_old_epoch_for_control_record(log):
    """testOldEpochForControlRecord."""
    log.data(PID, 5, 0, txn=True)
    rejected(log.then(marker(PID, 3, COMMIT)), "fenced_epoch_write", 47)


def test_coordinator_fencing(log):
    """testCoordinatorFencing."""
    log.data(PID, 5, 0, txn=True).marker(PID, 5, COMMIT, 1)
    assert log.run().entry(PID).coordinator_epoch == 1
    log.marker(PID, 5, COMMIT, 1)  # the current coordinator epoch is allowed
    log.marker(PID, 5, COMMIT, 2)  # bumping the coordinator epoch is allowed
    accepted(log.run())
    rejected(log.then(marker(PID, 5, COMMIT, 1)), "coordinator_epoch_regression", 52)


def test_coordinator_fenced_after_reload(tmp_path):
    """testCoordinatorFencedAfterReload: the snapshot's coordinator epoch survives the reload."""
    log = Scenario(tmp_path, start_offset=2)
    log.snapshot(2, [ProducerState(PID, EPOCH, 0, 0, 0, TS_BASE, 1, -1)])
    rejected(log.then(marker(PID, EPOCH, COMMIT, 0)), "coordinator_epoch_regression", 52)


@pytest.mark.parametrize(
    "kafka_test, damage",
    [
        ("testLoadFromEmptySnapshotFile", lambda data: b""),
        ("testLoadFromTruncatedSnapshotFile", lambda data: data[: len(data) // 2]),
        ("testLoadFromCorruptSnapshotFile", lambda data: data[:6] + bytes(37) + data[43:]),
    ],
)
def test_load_from_corrupt_snapshot(tmp_path, kafka_test, damage):
    """testLoadFromEmptySnapshotFile / testLoadFromTruncatedSnapshotFile /
    testLoadFromCorruptSnapshotFile (testLoadFromCorruptSnapshot): snapshots at 1 and 2, the one
    at 2 damaged: it is not loaded (CorruptSnapshotException) and the state comes from the one at
    1, whose entry's last data offset is 0."""
    log = Scenario(tmp_path, start_offset=2)
    log.snapshot(1, [ProducerState(PID, EPOCH, 0, 0, 0, TS_BASE)])
    log.snapshot(2, [ProducerState(PID, EPOCH, 1, 1, 0, TS_BASE)])
    log.damage[2] = damage
    out = log.run()
    assert out.entry(PID).last_data_offset == 0, kafka_test
    # The damaged file itself is reported (its sidecar check), nothing else.
    assert out.findings and {f.check for f in out.findings} == {"snapshot_mismatch"}
    assert {f.details["index_file"] for f in out.findings} == {"test-0/00000000000000000002.snapshot"}


def test_append_empty_control_batch(log):
    """testAppendEmptyControlBatch: no transaction is started, the producer id gets an entry."""
    log.raw(BatchSpec(records=(), is_control=True, producer_id=23423, producer_epoch=0, transactional=True))
    out = log.run()
    assert out.entry(23423).current_txn_first_offset == -1
    assert out.replay.transactions.open_transactions() == {}


def test_skip_empty_transactions(log):
    """testSkipEmptyTransactions: empty transactions complete nothing and index nothing."""
    log.data(PID, EPOCH, 0, 5, txn=True)  # 0..4 (Kafka: 16..20)
    log.marker(PID, EPOCH, COMMIT, 27)  # completes [0, 5]
    log.marker(PID, EPOCH, COMMIT, 27)  # empty
    log.marker(PID, EPOCH, ABORT, 27)  # empty
    log.data(PID, EPOCH, 5, 4, txn=True)  # 8..11
    log.marker(PID, EPOCH, ABORT, 27)  # completes [8, 12], aborted
    log.marker(PID, EPOCH, ABORT, 27)  # empty
    log.data(PID, EPOCH, 9, 2, txn=True)  # 14..15: open
    out = log.run()
    assert [(t.first_offset, t.last_offset) for t in out.replay.transactions.aborted_transactions()] == [(8, 12)]
    assert (out.replay.stats.transactions_committed, out.replay.stats.transactions_aborted) == (1, 1)
    assert sorted(f.offset for f in out.findings if f.check == "orphan_marker") == [6, 7, 13]
    assert [t.first_offset for t in out.replay.transactions.open_transactions().values()] == [14]
    assert "txn_index_mismatch" not in out.checks()  # the broker indexed [8, 12] only


def test_first_unstable_offset(log):
    """testFirstUnstableOffset: the earliest open transaction pins the last stable offset."""
    log.data(PID, 5, 0, txn=True)  # 0
    log.data(2, 5, 0, txn=True)  # 1
    both = log.run()
    assert {f.details["last_stable_offset"] for f in both.findings if f.check == "open_transaction"} == {0}
    log.marker(PID, 5, COMMIT)
    one = log.run()
    assert [(f.producer_id, f.details["last_stable_offset"]) for f in one.findings if f.check == "open_transaction"] == [
        (2, 1)
    ]
    log.marker(2, 5, ABORT)
    assert [f for f in log.run().findings if f.check in ("open_transaction", "hanging_transaction")] == []


def test_has_late_transaction(log):
    """testHasLateTransaction: a transaction is late when now - its producer's last timestamp
    exceeds the timeout (hanging_transaction with --transaction-timeout-ms as that threshold)."""
    t0 = TS_BASE
    log.data(39, 2, 0, txn=True, ts=t0).data(57, 9, 0, txn=True, ts=t0 + 500)

    def hanging(now: int) -> list[int]:
        out = log.run(ScanOptions(reference_time=now, transaction_timeout_ms=LATE_TRANSACTION_TIMEOUT_MS))
        return sorted(f.producer_id for f in out.findings if f.check == "hanging_transaction")

    assert hanging(t0 + 500) == []
    assert hanging(t0 + LATE_TRANSACTION_TIMEOUT_MS + 1) == [39]  # only the first is late
    assert hanging(t0 + LATE_TRANSACTION_TIMEOUT_MS + 501) == [39, 57]  # both are late
    log.marker(39, 2, COMMIT, ts=t0 + 600)
    assert hanging(t0 + LATE_TRANSACTION_TIMEOUT_MS + 501) == [57]
    log.marker(57, 9, COMMIT, ts=t0 + 700)
    assert hanging(t0 + LATE_TRANSACTION_TIMEOUT_MS + 501) == []


def test_has_late_transaction_initialized_after_reload(tmp_path):
    """testHasLateTransactionInitializedAfterReload: open transactions loaded from a snapshot are
    still judged late."""
    t0 = TS_BASE
    log = Scenario(tmp_path, start_offset=2)
    log.snapshot(2, [ProducerState(39, 2, 0, 0, 0, t0, -1, 0), ProducerState(57, 9, 0, 1, 0, t0 + 500, -1, 1)])
    out = log.run(ScanOptions(reference_time=t0 + LATE_TRANSACTION_TIMEOUT_MS + 1,
                              transaction_timeout_ms=LATE_TRANSACTION_TIMEOUT_MS))
    assert sorted((f.check, f.producer_id) for f in out.findings) == [
        ("hanging_transaction", 39),
        ("open_transaction", 57),
    ]


def test_truncate_and_reload_removes_out_of_range_snapshots(log):
    """testTruncateAndReloadRemovesOutOfRangeSnapshots: a snapshot past the log end is not
    compared (the broker deletes it on load)."""
    for seq in range(3):
        log.data(PID, EPOCH, seq)
    log.snapshot(2, [ProducerState(PID, EPOCH, 1, 1, 0, TS_BASE + 1000)])
    log.snapshot(5, [ProducerState(PID, EPOCH, 99, 99, 0, TS_BASE)])  # beyond the log end (3)
    out = log.run()
    assert out.findings == []
    assert out.replay.stats.snapshots_compared == 1


def test_reject_non_zero_sequence_for_direct_epoch_bump(log):
    """testRejectNonZeroSequenceForDirectEpochBump."""
    log.data(PID, EPOCH, 0).data(PID, EPOCH, 1).data(PID, EPOCH, 2)
    out = log.then(data(PID, 1, 5))
    rejected(out, "new_epoch_nonzero_sequence", 45)
    (f,) = [f for f in out.findings if f.check == "new_epoch_nonzero_sequence"]
    assert "Invalid sequence number for new epoch" in f.message
    for part in ("1 (request epoch)", "5 (seq. number)", "0 (current producer epoch)"):
        assert part in f.message
    accepted(log.then(data(PID, 1, 0)))


def test_read_write_snapshot():
    """testReadWriteSnapshot: the snapshot entries read back as written."""
    entries = [ProducerState(1, 2, 1, 2, 3 - 3, -1, 3, 100), ProducerState(11, 12, -1, -1, 0, 123456, 13, -1)]
    parsed = parse_producer_snapshot(_SidecarEncoders.producer_snapshot(entries))
    assert parsed.problems == []
    got = {e.producer_id: e for e in parsed.entries}
    assert (got[1].producer_epoch, got[1].coordinator_epoch, got[1].timestamp, got[1].current_txn_first_offset) == (
        2, 3, -1, 100,
    )
    assert (got[11].producer_epoch, got[11].coordinator_epoch, got[11].timestamp, got[11].last_offset) == (
        12, 13, 123456, -1,
    )


# Not ported (the Kafka test exercises something an offline copy of a log cannot hold):
# - testTxnFirstOffsetMetadataCached, testPrepareUpdateDoesNotMutate: in-memory LogOffsetMetadata
#   and ProducerAppendInfo API behaviour.
# - testHasLateTransactionUpdatedAfterPartialTruncation, testHasLateTransactionUpdatedAfterFullTruncation,
#   testFirstUnstableOffsetAfterTruncation, testTruncateFullyAndStartAt: truncating a live log; an
#   offline copy is the log after truncation.
# - testTakeSnapshot, testFetchSnapshotEmptySnapShot, testDeleteSnapshotsBefore, testReloadSnapshots,
#   testSkipSnapshotIfOffsetUnchanged, testRemoveStraySnapshotsKeepCleanShutdownSnapshot,
#   testRemoveAllStraySnapshots, testRemoveAndMarkSnapshotForDeletion,
#   testRemoveAndMarkSnapshotForDeletionAlreadyDeleted: the broker's snapshot file management.
# - testLastStableOffsetCompletedTxn: CompletedTxn / high watermark bookkeeping of a live leader.
# - testEntryForVerification, testSequenceAndEpochInVerificationEntry,
#   testThrowOutOfOrderSequenceWithVerificationSequenceCheck (2 cases), testVerificationStateEntryExpiration,
#   testRejectNonZeroSequenceForTransactionsV2WithEmptyState,
#   testAllowNonZeroSequenceForTransactionsV1WithEmptyState: the in-memory VerificationStateEntry
#   of transaction verification (KIP-890), never written to the log.
