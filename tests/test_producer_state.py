"""Producer-state replay (ProducerStateManager / ProducerAppendInfo rules) on hand-built summaries."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kafka_audit.log.producer_snapshot import ProducerSnapshot
from kafka_audit.record.record_batch import increment_sequence
from kafka_audit.rules.batch_summary import NO_CONTROL_TYPE, BatchSummary
from kafka_audit.rules.remedies import remedy_for
from kafka_audit.rules.replay.partition_replay import (
    PartitionLog,
    ProducerStateReplay,
    ReplaySettings,
    in_sequence,
    replay_partition,
)

INT32_MAX = 2**31 - 1
TOPIC = "test"
PART = 8


class LogBuilder:
    """Builds a partition's BatchSummary list in log order, with segment rolls."""

    def __init__(self, topic: str = TOPIC, partition: int = PART, start: int = 0, ts: int = 1_000_000) -> None:
        self.topic = topic
        self.partition = partition
        self.next_offset = start
        self.segment_base = start
        self.position = 0
        self.ts = ts
        self.batches: list[BatchSummary] = []

    @property
    def segment(self) -> str:
        return f"{self.topic}-{self.partition}/{self.segment_base:020d}.log"

    def roll(self) -> LogBuilder:
        self.segment_base = self.next_offset
        self.position = 0
        return self

    def skip(self, count: int) -> LogBuilder:
        self.next_offset += count
        return self

    def _add(self, **fields) -> BatchSummary:
        count = fields.pop("count", 1)
        ts = fields.pop("ts", None)
        if ts is None:
            self.ts += 10
            ts = self.ts
        base = fields.pop("offset", self.next_offset)
        seq = fields.get("base_sequence", -1)
        summary = BatchSummary(
            topic=self.topic,
            partition=self.partition,
            segment=self.segment,
            segment_base_offset=self.segment_base,
            position=self.position,
            base_offset=base,
            last_offset=base + count - 1,
            magic=fields.pop("magic", 2),
            valid=fields.pop("valid", True),
            producer_id=fields.pop("pid", -1),
            producer_epoch=fields.pop("epoch", -1),
            base_sequence=seq,
            last_sequence=-1 if seq < 0 else increment_sequence(seq, count - 1),
            is_transactional=fields.pop("txn", False),
            is_control=fields.pop("control", False),
            control_type=fields.pop("control_type", NO_CONTROL_TYPE),
            coordinator_epoch=fields.pop("coordinator_epoch", -1),
            max_timestamp=ts,
            record_count=count,
            size=100,
        )
        fields.pop("base_sequence", None)
        assert not fields, fields
        self.batches.append(summary)
        self.next_offset = base + count
        self.position += 100
        return summary

    def data(self, pid: int, epoch: int, seq: int, count: int = 1, **kw) -> BatchSummary:
        return self._add(pid=pid, epoch=epoch, base_sequence=seq, count=count, **kw)

    def plain(self, count: int = 1, **kw) -> BatchSummary:
        return self._add(count=count, **kw)

    def txn(self, pid: int, epoch: int, seq: int, count: int = 1, **kw) -> BatchSummary:
        return self._add(pid=pid, epoch=epoch, base_sequence=seq, count=count, txn=True, **kw)

    def marker(self, pid: int, epoch: int, commit: bool, coordinator_epoch: int = 0, **kw) -> BatchSummary:
        return self._add(
            pid=pid,
            epoch=epoch,
            txn=True,
            control=True,
            control_type=1 if commit else 0,
            coordinator_epoch=coordinator_epoch,
            **kw,
        )

    def commit(self, pid: int, epoch: int, **kw) -> BatchSummary:
        return self.marker(pid, epoch, True, **kw)

    def abort(self, pid: int, epoch: int, **kw) -> BatchSummary:
        return self.marker(pid, epoch, False, **kw)

    def kraft(self, control_type: int = 2) -> BatchSummary:
        return self._add(control=True, control_type=control_type)


@dataclass
class Entry:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int = 0
    timestamp: int = 0
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1


def Snapshot(offset: int, entries: list | None = None, path: str | None = None) -> ProducerSnapshot:
    """A snapshot as ``read_producer_snapshot`` returns it, of valid bytes."""
    return ProducerSnapshot(path or f"{offset:020d}.snapshot", offset, list(entries or []), [], True)


@dataclass
class Aborted:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int = 0


def replay(builder: LogBuilder, log_start: int = 0, snapshots=None, aborted_txns=None, **settings):
    """The replay's findings on the builder's batches; ``settings``: :class:`ReplaySettings` fields."""
    log = PartitionLog(builder.topic, builder.partition, log_start, snapshots or [], aborted_txns or {}, ReplaySettings(**settings))
    return replay_partition(log, builder.batches)


def checks(findings) -> list[str]:
    return [f.check for f in findings]


def only(findings, check):
    hits = [f for f in findings if f.check == check]
    assert len(hits) == 1, (check, [(f.check, f.message) for f in findings])
    return hits[0]


# -- clean logs -----------------------------------------------------------------------------------


def test_clean_idempotent_producers_interleaved_across_segments():
    b = LogBuilder()
    seqs = {1: 0, 2: 0}
    for i in range(30):
        pid = 1 + i % 2
        b.data(pid, 0, seqs[pid], count=3)
        seqs[pid] += 3
        b.plain()
        if i % 7 == 6:
            b.roll()
    assert replay(b) == []


def test_non_idempotent_and_legacy_batches_are_ignored():
    b = LogBuilder()
    b.plain(count=5)
    b._add(magic=1, count=1)
    b.kraft(2)
    b.kraft(6)
    # A control batch with a malformed record (control_type -1) changes nothing.
    b._add(pid=5, epoch=0, control=True, txn=True)
    b.data(5, 0, 0)
    assert replay(b) == []


def test_invalid_batches_are_skipped():
    b = LogBuilder()
    b.data(1, 0, 0, count=2)
    b.data(1, 7, 99, valid=False)
    b.data(1, 0, 2)
    assert replay(b) == []


# -- epochs ---------------------------------------------------------------------------------------


def test_epoch_bump_with_sequence_zero_is_info_only():
    b = LogBuilder()
    b.data(1, 0, 0, count=5)
    bump = b.data(1, 1, 0)
    b.data(1, 1, 1)
    findings = replay(b)
    f = only(findings, "epoch_bump")
    assert len(findings) == 1
    assert f.severity == "info"
    assert f.offset == bump.base_offset
    assert f.details["previous_epoch"] == 0
    assert f.details["open_transaction_aborted"] is False
    # SPEC section 2 (epoch_bump): an idempotent producer's own bump (KIP-360) is no error to it.
    assert f.details["reason"] == "idempotent_bump"
    assert "client_exception" not in f.details
    assert f.client_outcome == "none"


def test_fenced_epoch_write():
    b = LogBuilder()
    b.data(1, 2, 0, count=3)
    b.data(1, 3, 0, count=2)
    zombie = b.data(1, 2, 3)
    b.data(1, 3, 2)  # the real producer goes on: the zombie write did not change the state
    findings = replay(b)
    f = only(findings, "fenced_epoch_write")
    assert f.offset == zombie.base_offset
    assert f.error_code == 47 and f.error_name == "INVALID_PRODUCER_EPOCH"
    # ProducerAppendInfo.checkProducerEpoch: "... at offset <o> in <topicPartition> is ...".
    assert f.message == (
        f"Epoch of producer 1 at offset {zombie.base_offset} in test-8 is 2, which is smaller "
        f"than the last seen epoch 3"
    )
    assert f.producer_id == 1 and f.producer_epoch == 2 and f.sequence == 3
    assert checks(findings) == ["epoch_bump", "fenced_epoch_write"]


def test_new_epoch_nonzero_sequence_message_verbatim():
    b = LogBuilder(start=100)
    b.data(557891, 2, 0, count=20)
    bad = b.data(557891, 3, 4)
    assert bad.base_offset == 120
    findings = replay(b, log_start=100)
    f = only(findings, "new_epoch_nonzero_sequence")
    assert f.message == (
        "Invalid sequence number for new epoch of producer 557891 at offset 120 in partition test-8: "
        "3 (request epoch), 4 (seq. number), 2 (current producer epoch)"
    )
    assert f.error_code == 45 and f.severity == "error"
    assert "epoch_bump" in checks(findings)


# -- sequences ------------------------------------------------------------------------------------


def test_out_of_order_sequence_message_verbatim():
    b = LogBuilder(start=122)
    b.data(557891, 5, 0, count=8)  # 122..129, sequences 0..7
    bad = b.data(557891, 5, 9, count=2)
    assert bad.base_offset == 130
    b.data(557891, 5, 11)  # goes on from what was written: one gap, one finding
    findings = replay(b, log_start=122)
    f = only(findings, "out_of_order_sequence")
    assert f.message == (
        "Out of order sequence number for producer 557891 at offset 130 in partition test-8: "
        "9 (incoming seq. number), 7 (current end sequence number)"
    )
    assert f.details["expected_sequence"] == 8
    assert len(findings) == 1


def test_sequence_wraps_around_int32_max():
    b = LogBuilder()
    b.data(1, 0, 0)
    b.data(1, 0, 1, count=INT32_MAX - 3)  # sequences 1..2^31-3
    b.data(1, 0, INT32_MAX - 2, count=3)  # ..2^31-1
    b.data(1, 0, 0, count=3)  # wraps to 0
    b.data(1, 0, 3)
    assert replay(b) == []
    # A batch that itself spans the wrap.
    b = LogBuilder()
    b.data(1, 0, 0)
    b.data(1, 0, 1, count=INT32_MAX - 2)  # 1..2^31-2
    b.data(1, 0, INT32_MAX - 1, count=4)  # 2^31-2, 2^31-1, 0, 1
    b.data(1, 0, 2)
    assert replay(b) == []
    assert in_sequence(INT32_MAX, 0) and not in_sequence(INT32_MAX, 1) and not in_sequence(5, 5)


def test_duplicate_sequence_reported_instead_of_out_of_order():
    # SPEC section 2 (duplicate_sequence): one of the producer's last 5 batches
    # (ProducerStateEntry.NUM_BATCHES_TO_RETAIN) written again; no error code, original_offset.
    b = LogBuilder()
    for seq in range(0, 45, 5):
        b.data(1, 0, seq, count=5)
    fifth_newest = b.batches[-5]
    dup = b.data(1, 0, fifth_newest.base_sequence, count=5)
    b.data(1, 0, 45)
    findings = replay(b)
    f = only(findings, "duplicate_sequence")
    assert f.offset == dup.base_offset
    assert f.details["original_offset"] == fifth_newest.base_offset
    assert f.error_name is None and f.client_outcome == "none"
    assert len(findings) == 1


def test_duplicate_older_than_the_5_batch_window_is_out_of_order():
    # SPEC section 2: a range older than the last 5 batches fails checkSequence (45).
    b = LogBuilder()
    first = b.data(1, 0, 0, count=5)
    for seq in range(5, 30, 5):
        b.data(1, 0, seq, count=5)
    old = b.data(1, 0, first.base_sequence, count=5)
    f = only(replay(b), "out_of_order_sequence")
    assert f.offset == old.base_offset and f.error_code == 45
    assert f.details["expected_sequence"] == 30


def test_same_first_sequence_other_range_is_out_of_order_not_duplicate():
    b = LogBuilder()
    b.data(1, 0, 0, count=5)
    b.data(1, 0, 5, count=5)
    b.data(1, 0, 0, count=3)
    assert checks(replay(b)) == ["out_of_order_sequence"]


def test_duplicate_needs_same_epoch():
    b = LogBuilder()
    b.data(1, 0, 0, count=5)
    b.data(1, 1, 0, count=5)  # same range, new epoch: a bump, not a duplicate
    assert checks(replay(b)) == ["epoch_bump"]


def test_interleaved_producers_keep_separate_sequences():
    b = LogBuilder()
    b.data(1, 0, 0, count=2)
    b.data(2, 0, 0, count=2)
    b.data(1, 0, 2)
    b.roll()
    b.data(2, 0, 3)  # expected 2
    b.data(1, 0, 3)
    f = only(replay(b), "out_of_order_sequence")
    assert f.producer_id == 2 and f.details["expected_sequence"] == 2
    assert f.segment.endswith(f"{b.segment_base:020d}.log")


def test_coordinator_topic_skips_sequence_checks():
    # Transactional offset commits: AppendOrigin.COORDINATOR, base sequence always 0.
    b = LogBuilder(topic="__consumer_offsets", partition=3)
    b.txn(7, 0, 0)
    b.commit(7, 0)
    b.txn(7, 0, 0)
    b.commit(7, 0)
    assert replay(b) == []


# -- unknown producer / retention ------------------------------------------------------------------


def test_unknown_producer_id_when_log_starts_at_zero():
    b = LogBuilder()
    b.data(1, 0, 0)
    bad = b.data(2, 0, 5, count=2)
    b.data(2, 0, 7)
    f = only(replay(b), "unknown_producer_id")
    # SPEC section 2: brokers since 2.5 accept the batch: a warning without an error code.
    assert f.offset == bad.base_offset and f.severity == "warning" and f.error_code is None
    assert f.details == {"log_start_offset": 0, "missing_sequences": [0, 4], "in_snapshot": False}


def test_retention_gap_when_log_start_above_zero():
    b = LogBuilder(start=500)
    b.data(2, 0, 40, count=3)
    b.data(2, 0, 43)
    f = only(replay(b, log_start=500), "retention_gap")
    assert f.severity == "warning"
    assert f.details["log_start_offset"] == 500
    assert f.details["missing_sequences"] == [0, 39]
    assert f.details["in_snapshot"] is False


def test_first_batch_with_sequence_zero_is_fine():
    b = LogBuilder(start=500)
    b.data(2, 3, 0)
    assert replay(b, log_start=500) == []


def test_seed_snapshot_state_survives_deleted_data():
    b = LogBuilder(start=500)
    b.data(2, 0, 40, count=3)
    snap = Snapshot(500, [Entry(2, 0, 39, 480, offset_delta=4)])
    assert replay(b, log_start=500, snapshots=[snap]) == []
    # With a snapshot that knew an older sequence, the gap is a plain out-of-order sequence.
    snap = Snapshot(500, [Entry(2, 0, 30, 480)])
    f = only(replay(b, log_start=500, snapshots=[snap]), "out_of_order_sequence")
    assert f.details["expected_sequence"] == 31


def test_seed_is_newest_snapshot_at_or_before_first_batch():
    b = LogBuilder(start=500)
    b.data(2, 0, 40, count=3)
    older = Snapshot(300, [Entry(2, 0, 10, 290)])
    seed = Snapshot(450, [])  # the producer expired from it
    findings = replay(b, log_start=500, snapshots=[seed, older])
    f = only(findings, "retention_gap")
    assert f.details["in_snapshot"] is True
    assert f.details["missing_sequences"] == [11, 39]
    # An expired producer whose older snapshot shows the sequences go on: no gap at all.
    older = Snapshot(300, [Entry(2, 0, 39, 290)])
    assert replay(b, log_start=500, snapshots=[seed, older]) == []


def test_marker_only_state_then_nonzero_sequence_is_out_of_order():
    # SPEC section 2 / ProducerStateManagerTest.testAppendTxnMarkerWithNoProducerState: a producer
    # known only from a marker has an epoch and no sequence: a non-zero first sequence is 45.
    b = LogBuilder(start=200)
    b.commit(4, 0)  # the transaction's data was deleted
    b.data(4, 0, 12)
    findings = replay(b, log_start=200)
    assert checks(findings) == ["orphan_marker", "out_of_order_sequence"]
    assert findings[1].details["expected_sequence"] == 0


def test_compacted_topic_tolerates_forward_gaps():
    b = LogBuilder(topic="compacted")
    b.data(1, 0, 3, count=2)
    b.data(1, 0, 9)
    b.data(1, 0, 4)  # going back is still wrong
    findings = replay(b, compacted=True)
    assert checks(findings) == ["out_of_order_sequence"]


def test_compacted_topic_new_epoch_may_start_above_zero():
    # SPEC section 2: the cleaner may have removed the new epoch's first batches (Kafka Streams
    # exactly-once changelogs after cleaning); the same log in a plain topic is a 45.
    b = LogBuilder(topic="changelog")
    b.txn(1, 0, 0, count=2)
    b.commit(1, 0)
    b.txn(1, 1, 7)
    b.commit(1, 1)
    assert checks(replay(b, compacted=True)) == ["epoch_bump"]
    assert sorted(checks(replay(b))) == ["epoch_bump", "new_epoch_nonzero_sequence"]


# -- snapshots ------------------------------------------------------------------------------------


def test_later_snapshot_matching_the_log():
    b = LogBuilder()
    b.data(1, 0, 0, count=4)  # 0..3
    b.data(2, 1, 0)  # 4
    b.roll()
    b.data(1, 0, 4, count=2)  # 5..6
    snaps = [
        Snapshot(5, [Entry(1, 0, 3, 3, offset_delta=3), Entry(2, 1, 0, 4)]),
        Snapshot(7, [Entry(1, 0, 5, 6, offset_delta=1)]),  # producer 2 expired: no mismatch
    ]
    assert replay(b, snapshots=snaps) == []


def test_snapshot_mismatch_names_fields():
    b = LogBuilder()
    b.data(1, 0, 0, count=4)
    b.roll()
    b.data(1, 0, 4)
    snaps = [Snapshot(4, [Entry(1, 0, 5, 3, coordinator_epoch=2)], path="00000000000000000004.snapshot")]
    f = only(replay(b, snapshots=snaps), "snapshot_mismatch")
    assert f.severity == "warning"
    assert f.offset == 4
    assert set(f.details["fields"]) == {"last_sequence", "coordinator_epoch"}
    assert f.details["fields"]["last_sequence"] == {"snapshot": 5, "replayed": 3}
    assert f.details["snapshot"] == "00000000000000000004.snapshot"
    assert f.producer_id == 1


def test_snapshot_after_epoch_changing_marker_has_no_batch_metadata():
    # ProducerStateEntry.update after a marker with a new epoch clears the batch metadata:
    # the snapshot stores last sequence -1 and last offset -1.
    b = LogBuilder()
    b.txn(1, 0, 0, count=3)  # 0..2
    b.commit(1, 1, coordinator_epoch=4)  # 3, transactions v2: bumped epoch
    b.txn(1, 0, 3)  # 4: zombie
    snaps = [Snapshot(4, [Entry(1, 1, -1, -1, coordinator_epoch=4)])]
    findings = replay(b, snapshots=snaps)
    assert "snapshot_mismatch" not in checks(findings)
    # The TV2 end-of-transaction bump is no finding (SPEC epoch_bump); the zombie write is.
    assert checks(findings) == ["fenced_epoch_write"]


def test_snapshot_with_open_transaction_is_compared_and_seeds():
    b = LogBuilder()
    b.txn(1, 0, 0, count=2)  # 0..1
    b.roll()
    b.txn(1, 0, 2)  # 2
    b.abort(1, 0)  # 3
    good = [Snapshot(2, [Entry(1, 0, 1, 1, offset_delta=1, current_txn_first_offset=0)])]
    assert replay(b, snapshots=good, aborted_txns={b.segment: [Aborted(1, 0, 3)]}) == []
    bad = [Snapshot(2, [Entry(1, 0, 1, 1, offset_delta=1, current_txn_first_offset=-1)])]
    f = only(replay(b, snapshots=bad, aborted_txns={b.segment: [Aborted(1, 0, 3)]}), "snapshot_mismatch")
    assert f.details["fields"] == {"current_txn_first_offset": {"snapshot": -1, "replayed": 0}}

    # Seeded from a snapshot holding an open transaction: the marker closes it.
    c = LogBuilder(start=10)
    c.txn(1, 0, 5)
    c.abort(1, 0)
    seed = [Snapshot(10, [Entry(1, 0, 4, 8, current_txn_first_offset=7)])]
    assert replay(c, log_start=10, snapshots=seed, aborted_txns={c.segment: [Aborted(1, 7, 11)]}) == []


def test_snapshot_knowing_a_producer_the_log_lacks_is_adopted():
    b = LogBuilder(start=100)
    b.data(1, 0, 0)  # 100
    b.data(2, 0, 20)  # 101: producer 2 had data before the log start
    b.data(3, 0, 8)  # 102: producer 3 known only from the later snapshot
    snaps = [Snapshot(100, []), Snapshot(102, [Entry(3, 0, 7, 50)])]
    findings = replay(b, log_start=100, snapshots=snaps)
    assert checks(findings) == ["retention_gap"]
    assert findings[0].producer_id == 2


def test_snapshot_beyond_log_end_is_ignored():
    b = LogBuilder()
    b.data(1, 0, 0)
    snaps = [Snapshot(50, [Entry(1, 0, 30, 49)])]
    assert replay(b, snapshots=snaps) == []


def test_corrupt_snapshot_is_not_used():
    b = LogBuilder(start=10)
    b.data(1, 0, 5)
    bad = ProducerSnapshot(f"{10:020d}.snapshot", 10, [Entry(1, 0, 4, 9)], ["Snapshot is corrupt"], valid=False)
    assert checks(replay(b, log_start=10, snapshots=[bad])) == ["retention_gap"]


# -- transactions ---------------------------------------------------------------------------------


def test_committed_and_aborted_transactions_interleaved():
    b = LogBuilder()
    b.txn(1, 0, 0, count=2)
    b.txn(2, 0, 0)
    b.plain()
    b.txn(1, 0, 2)
    b.roll()
    b.commit(1, 0, coordinator_epoch=3)
    b.txn(2, 0, 1)
    abort = b.abort(2, 0, coordinator_epoch=3)
    b.txn(1, 0, 3)
    b.commit(1, 0, coordinator_epoch=3)  # equal coordinator epoch: fine
    log = PartitionLog(TOPIC, PART, 0, aborted_txns={abort.segment: [Aborted(2, 2, abort.base_offset)]})
    r = ProducerStateReplay(log)
    for batch in b.batches:
        r.append(batch)
    assert r.finish() == []
    assert r.stats.transactions_committed == 2 and r.stats.transactions_aborted == 1
    assert r.stats.transactions_open == 0 and r.stats.producers == 2


def test_open_and_hanging_transactions():
    b = LogBuilder(ts=0)
    old = b.txn(1, 0, 0, ts=1_000)
    young = b.txn(2, 0, 0, ts=1_000_000)
    b.plain(ts=1_000_000 + 1_000)
    findings = replay(b, transaction_timeout_ms=60_000)
    hanging = only(findings, "hanging_transaction")
    assert hanging.producer_id == 1 and hanging.offset == old.base_offset
    assert hanging.details["first_offset"] == old.base_offset
    assert hanging.details["age_ms"] == 1_000_000
    opened = only(findings, "open_transaction")
    assert opened.producer_id == 2 and opened.details["age_ms"] == 1_000 and opened.severity == "info"
    assert young.base_offset == opened.offset


def test_transaction_exactly_at_timeout_is_not_hanging():
    b = LogBuilder()
    b.txn(1, 0, 0, ts=0)
    b.plain(ts=900000)
    assert checks(replay(b)) == ["open_transaction"]


def test_non_transactional_write_inside_transaction():
    b = LogBuilder(start=40)
    b.txn(1, 0, 0)
    bad = b.data(1, 0, 1)
    b.commit(1, 0)
    f = only(replay(b, log_start=40), "transaction_state_violation")
    assert f.message == f"Expected transactional write from producer 1 at offset {bad.base_offset} in partition test-8"
    assert f.error_name == "INVALID_TXN_STATE" and f.client_outcome == "fatal"


def test_transactional_write_under_another_epoch():
    b = LogBuilder()
    b.txn(1, 0, 0)
    b.txn(1, 1, 0)  # the coordinator should have aborted with an ABORT marker of epoch 1 first
    b.commit(1, 1)
    findings = replay(b)
    assert checks(findings) == ["epoch_bump", "transaction_state_violation"]
    assert findings[0].details["open_transaction_aborted"] is False


def test_epoch_bump_by_abort_marker_ends_open_transaction():
    # TransactionCoordinator.handleInitProducerId with an ongoing transaction: the epoch is bumped
    # once for the abort marker (prepareFenceProducerEpoch) and once more for the new instance.
    b = LogBuilder()
    b.txn(1, 0, 0, count=2)
    abort = b.abort(1, 1, coordinator_epoch=1)
    new_instance = b.txn(1, 2, 0)
    b.commit(1, 2, coordinator_epoch=1)
    findings = replay(b, aborted_txns={abort.segment: [Aborted(1, 0, abort.base_offset)]})
    assert checks(findings) == ["epoch_bump", "epoch_bump"]
    f, g = findings
    assert f.offset == abort.base_offset and g.offset == new_instance.base_offset
    assert f.details == {
        "previous_epoch": 0,
        "open_transaction_aborted": True,
        "reason": "fenced",
        "client_exception": "ProducerFencedException",
    }
    assert g.details["reason"] == "fenced" and g.client_outcome == "fatal"


def test_abort_marker_bump_followed_by_the_same_epoch_is_a_transaction_end():
    # Transactions v2 (Kafka 4): the end marker bumps the epoch and the producer goes on with it.
    b = LogBuilder()
    b.txn(1, 0, 0, count=2)
    abort = b.abort(1, 1)
    b.txn(1, 1, 0)
    b.commit(1, 2)
    findings = replay(b, aborted_txns={abort.segment: [Aborted(1, 0, abort.base_offset)]})
    # Seen as transactions v2 (the ABORT at epoch + 1 followed by data at its epoch from sequence
    # 0; then a COMMIT at epoch + 1): both ends are normal operation, no finding (SPEC epoch_bump).
    assert findings == []


def test_orphan_marker():
    b = LogBuilder()
    b.data(1, 0, 0)
    b.commit(1, 0)
    findings = replay(b)
    f = only(findings, "orphan_marker")
    assert f.severity == "info" and f.details["marker"] == "COMMIT"


def test_coordinator_epoch_regression():
    b = LogBuilder()
    b.txn(1, 0, 0)
    b.commit(1, 0, coordinator_epoch=5)
    b.txn(1, 0, 1)
    zombie = b.commit(1, 0, coordinator_epoch=4)
    findings = replay(b)
    f = only(findings, "coordinator_epoch_regression")
    assert f.offset == zombie.base_offset
    assert f.message == (
        f"Invalid coordinator epoch for producerId 1 at offset {zombie.base_offset} in partition test-8: "
        f"4 (zombie), 5 (current)"
    )
    assert f.error_code == 52


def test_marker_with_lower_producer_epoch_is_fenced():
    b = LogBuilder()
    b.txn(1, 3, 0)
    b.commit(1, 3)
    b.abort(1, 2)
    assert checks(replay(b)) == ["fenced_epoch_write"]


# -- transaction index ----------------------------------------------------------------------------


def _aborting_log() -> tuple[LogBuilder, BatchSummary, BatchSummary]:
    b = LogBuilder()
    b.txn(1, 0, 0, count=3)  # 0..2
    b.roll()
    b.txn(2, 0, 0)  # 3
    a1 = b.abort(1, 0)  # 4: registered in segment 3, where the marker is
    b.roll()
    a2 = b.abort(2, 0)  # 5
    return b, a1, a2


def test_txn_index_matches():
    b, a1, a2 = _aborting_log()
    index = {a1.segment: [Aborted(1, 0, 4, 6)], a2.segment: [Aborted(2, 3, 5, 6)]}
    assert replay(b, aborted_txns=index) == []


def test_txn_index_missing_entry_and_unknown_entry():
    b, a1, a2 = _aborting_log()
    index = {
        a1.segment: [Aborted(1, 0, 4), Aborted(9, 1, 2)],
        a2.segment: [],
        "test-8/00000000000000000000.log": [],
    }
    findings = replay(b, aborted_txns=index)
    assert checks(findings) == ["txn_index_mismatch", "txn_index_mismatch"]
    missing = [f for f in findings if f.details["reason"] == "missing_index_entry"][0]
    assert missing.offset == a2.base_offset and missing.producer_id == 2
    unknown = [f for f in findings if f.details["reason"] == "unknown_index_entry"][0]
    assert unknown.details["producer_id"] == 9 and unknown.segment == a1.segment


def test_txn_index_file_missing_gives_one_finding_per_segment():
    b = LogBuilder()
    b.txn(1, 0, 0)
    b.txn(2, 0, 0)
    a = b.abort(1, 0)
    b.abort(2, 0)
    f = only(replay(b), "txn_index_mismatch")
    assert f.details["reason"] == "missing_index_file"
    assert f.details["aborted_transactions"] == 2
    assert f.segment == a.segment


def test_txn_index_old_broker_entry_for_empty_abort_is_tolerated():
    b = LogBuilder()
    b.data(1, 0, 0)
    a = b.abort(1, 0)  # no open transaction: brokers before 2.8 indexed it as (pid, off, off)
    findings = replay(b, aborted_txns={a.segment: [Aborted(1, a.base_offset, a.base_offset)]})
    assert checks(findings) == ["orphan_marker"]
    assert checks(replay(b, aborted_txns={a.segment: []})) == ["orphan_marker"]


def test_kraft_control_batches_do_not_take_part():
    b = LogBuilder(topic="__cluster_metadata", partition=0)
    for t in (3, 2, 5, 6, 4):
        b.kraft(t)
    b.plain(count=10)
    assert replay(b) == []


@pytest.mark.parametrize("count", [0, 1])
def test_empty_partition(count):
    b = LogBuilder()
    if count:
        b.plain()
    assert replay(b, snapshots=[Snapshot(0, [Entry(1, 0, 3, -5)])]) == []


# -- invalid batches: no finding follows from their absence (SPEC section 2) ---------------------


def test_sequence_after_an_invalid_batch_is_not_out_of_order():
    # Kafka's recovery truncates at the first invalid batch (LogSegment.recover): the audit does
    # not judge the next batch of any producer against a state the invalid batch may have moved.
    b = LogBuilder()
    b.data(1, 0, 0, count=2)
    b.data(1, 0, 2, count=2, valid=False)
    b.data(1, 0, 4, count=2)
    b.data(1, 0, 7)  # the resync is one batch long: this gap is reported
    assert [(f.check, f.details["expected_sequence"]) for f in replay(b)] == [("out_of_order_sequence", 6)]


def test_new_epoch_after_an_invalid_batch_is_not_judged():
    b = LogBuilder()
    b.data(1, 0, 0)
    b.data(1, 1, 0, valid=False)  # the new epoch's first batch is the one that cannot be read
    b.data(1, 1, 1)
    assert checks(replay(b)) == ["epoch_bump"]


def test_producer_first_seen_after_an_invalid_batch_is_not_unknown():
    b = LogBuilder()
    b.data(1, 0, 0)
    b.data(2, 0, 0, valid=False)
    b.data(2, 0, 1)
    assert replay(b) == []


def test_transaction_open_across_an_invalid_batch():
    # The invalid batch may be the transaction's end marker: a later non-transactional write is
    # no violation, and a transaction left open is not judged hanging.
    b = LogBuilder()
    b.txn(1, 0, 0)
    b.txn(2, 0, 0)
    b.commit(1, 0, valid=False)
    b.data(1, 0, 1)
    b.plain(ts=10_000_000_000)
    assert replay(b) == []


def test_fenced_write_after_an_invalid_batch_is_still_reported():
    b = LogBuilder()
    b.data(1, 3, 0)
    b.plain(valid=False)
    b.data(1, 2, 0)
    assert checks(replay(b)) == ["fenced_epoch_write"]


# -- producer-id expiration ----------------------------------------------------------------------


def test_producer_expired_then_any_sequence_is_accepted():
    # ProducerStateManager.removeExpiredProducers: idle >= producer.id.expiration.ms, no open
    # transaction: the broker forgot the producer and accepts its next batch at any sequence.
    b = LogBuilder()
    b.data(1, 0, 0, count=3, ts=1_000)
    back = b.data(1, 0, 40, ts=1_000 + 5_000)
    findings = replay(b, producer_id_expiration_ms=5_000)
    f = only(findings, "producer_expired")
    assert (f.offset, f.severity, f.error_code) == (back.base_offset, "info", None)
    assert f.details == {"idle_ms": 5_000, "expected_sequence": 3}
    assert len(findings) == 1
    # 1 ms short of the expiration: the broker still knew it, sequence 40 is out of order.
    assert checks(replay(b, producer_id_expiration_ms=5_001)) == ["out_of_order_sequence"]


# -- transactions: the index below the log start, hanging by the reference time ------------------


def test_txn_index_entry_below_the_log_start_is_correct():
    # Retention deleted the transaction's first batches; the broker's entry keeps its first offset.
    b = LogBuilder(start=100)
    b.txn(1, 0, 5, count=2)  # 100..101: the rest of a transaction that began at 90
    abort = b.abort(1, 0)
    b.abort(2, 0)  # 103: only the marker of pid 2's transaction is left
    index = {abort.segment: [Aborted(1, 90, abort.base_offset), Aborted(2, 95, abort.base_offset + 1)]}
    findings = replay(b, log_start=100, aborted_txns=index)
    assert [f.check for f in findings if f.check == "txn_index_mismatch"] == []


def test_txn_index_entry_below_the_log_start_for_another_marker_is_reported():
    b = LogBuilder(start=100)
    abort = b.abort(2, 0)
    index = {abort.segment: [Aborted(2, 95, abort.base_offset + 7)]}
    f = only(replay(b, log_start=100, aborted_txns=index), "txn_index_mismatch")
    assert f.details["reason"] == "unknown_index_entry"


def test_hanging_transaction_judged_against_the_reference_time():
    b = LogBuilder(ts=1_000_000)
    first = b.txn(1, 0, 0, count=2, ts=1_000_000)
    b.txn(1, 0, 2, ts=1_000_500)  # the producer's last batch
    b.plain(count=4, ts=1_000_600)
    # By the partition's newest timestamp it is young: open.
    assert checks(replay(b)) == ["open_transaction"]
    findings = replay(b, reference_time=1_000_500 + 900_001)
    f = only(findings, "hanging_transaction")
    assert f.offset == first.base_offset
    assert f.details["age_ms"] == 900_001
    assert (f.details["first_offset"], f.details["last_stable_offset"], f.details["log_end_offset"]) == (0, 0, 7)
    assert f.details["records_blocked"] == 7
    assert f.details["coordinator_state"] is None
    # The remedy object (SPEC section 3) is attached when the scan's findings are finished.
    assert "remedy" not in f.details
    assert "kafka-transactions.sh --bootstrap-server <broker> abort --topic test --partition 8 --start-offset 0" in (
        remedy_for(f)["commands"]
    )
    assert checks(replay(b, reference_time=1_000_500 + 900_000)) == ["open_transaction"]


# -- timeline events ------------------------------------------------------------------------------


def test_replay_events_in_log_order():
    b = LogBuilder(start=10)
    b.txn(1, 0, 0)  # 10
    b.commit(1, 0)  # 11
    b.txn(1, 0, 1)  # 12
    b.abort(1, 1)  # 13: bumped ABORT, no later batch: timeout_abort
    b.data(2, 0, 0, ts=2_000_000)  # 14
    b.data(2, 1, 0, ts=2_000_100)  # 15: idempotent bump
    b.data(2, 1, 1, ts=2_000_100 + 86_400_000)  # 16: expired
    log = PartitionLog(TOPIC, PART, 10, snapshots=[Snapshot(12, [Entry(1, 0, 0, 10, coordinator_epoch=0, current_txn_first_offset=-1)])])
    r = ProducerStateReplay(log)
    for batch in b.batches:
        r.append(batch)
    r.finish()
    kinds = sorted((e.offset, str(e.kind)) for e in r.events)
    assert kinds == [
        (10, "log_start_moved"),
        (10, "transaction_begin"),
        (11, "transaction_commit"),
        (12, "snapshot"),
        (12, "transaction_begin"),
        (13, "epoch_bump"),
        (13, "transaction_abort"),
        (15, "epoch_bump"),
        (16, "producer_expired"),
    ]
    bumps = {e.offset: e for e in r.events if e.kind == "epoch_bump"}
    assert "timeout abort" in bumps[13].message and "idempotent bump" in bumps[15].message
    assert all(e.to_dict()["topic"] == TOPIC for e in r.events)
