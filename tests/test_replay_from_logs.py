"""The producer-state replay (SPEC section 2, "Producer-state replay") from real segment files.

``tests/test_producer_state.py`` unit-tests the replay on hand-built batch summaries; here every
log is written with the fixture writer (segments, rolls, ``.snapshot`` files at rolls and at
close, ``.txnindex`` files, checkpoints) and audited end to end with ``audit_in_process``, so the
path from bytes to findings is covered: interleaved producers, segment boundaries, retention
(log start from the first segment or from ``log-start-offset-checkpoint``), snapshots (KIP-360
seeding at the log start, every later one compared), compacted and coordinator-written topics,
and transactions v2's epoch bump on every end marker.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.engines.local import audit_in_process
from kafka_audit.log.log_dir import discover
from kafka_audit.rules.validation.log_validator import ALWAYS_COMPACTED_TOPICS, ValidationConfig
from tests.support.writer import (
    TS_BASE,
    BatchSpec,
    LogDirWriter,
    Producer,
    ProducerState,
    RecordSpec,
    _SidecarEncoders,
)

INT32_MAX = 2**31 - 1
LZ4, ZSTD = 3, 4


def recs(start: int, count: int, size: int = 40) -> tuple[RecordSpec, ...]:
    return tuple(RecordSpec(key=b"k-%05d" % (start + i), value=b"v" * size) for i in range(count))


def plain(w, count: int = 3, **fields):
    return w.append(BatchSpec(records=recs(w.next_offset, count), **fields))


class Log:
    def __init__(self, tmp_path: Path, **defaults) -> None:
        self.root = tmp_path / "logs"
        self.dir = LogDirWriter(self.root, **defaults)

    def partition(self, topic: str = "t", partition: int = 0, **options):
        return self.dir.partition(topic, partition, **options)

    def close(self) -> None:
        if not all(w.closed for w in self.dir.partitions.values()):
            self.dir.close()

    def scan(self, *, compacted: tuple[str, ...] = (), timeout: int = 900_000) -> list:
        self.close()
        config = ValidationConfig(compacted_topics=frozenset(compacted) | ALWAYS_COMPACTED_TOPICS)
        options = ScanOptions(validation=config, transaction_timeout_ms=timeout)
        return audit_in_process(discover([str(self.root)]), options).findings


def of(findings, check: str) -> list:
    return [f for f in findings if f.check == check]


def only(findings, check: str):
    hits = of(findings, check)
    assert len(hits) == 1, [(f.check, f.offset, f.message) for f in findings]
    return hits[0]


def checks(findings) -> list[str]:
    return [f.check for f in findings]


def not_info(findings) -> list[tuple]:
    return [(f.check, f.offset, f.message) for f in findings if f.severity != "info"]


def seed_snapshot(w, entries: list[ProducerState]) -> None:
    """Producer state from before the partition's first offset (its data long deleted): the
    broker's snapshot at the log start, and the writer's own tracker, both know it."""
    w.state.load(entries)
    w.snapshots[w.next_offset] = [e.copy() for e in entries]


def segment(w, base: int) -> str:
    return f"{w.name}/{base:020d}.log"


# ---------------------------------------------------------------------------------------------
# a clean log: interleaved producers over many segments, every snapshot compared
# ---------------------------------------------------------------------------------------------


def test_interleaved_producers_across_rolls_give_nothing(tmp_path):
    log = Log(tmp_path)
    w = log.partition(segment_bytes=900)
    a = Producer(11, epoch=0, codec=LZ4)
    b = Producer(12, epoch=7, codec=ZSTD)
    t = Producer(13, epoch=2, transactional=True, coordinator_epoch=1)
    for i in range(6):
        t.begin()
        a.send(w, recs(w.next_offset, 1 + i % 3))
        t.send(w, recs(w.next_offset, 2))
        b.send(w, recs(w.next_offset, 2))
        plain(w, 2)
        a.send(w, recs(w.next_offset, 1))
        t.send(w, recs(w.next_offset, 1))
        b.send(w, recs(w.next_offset, 3))
        if i % 2:
            t.abort()
        else:
            t.commit()
    log.close()
    assert len(w.segments) >= 5
    assert len(w.snapshots) >= 5  # one per roll and one at the log end: each is compared
    assert log.scan() == []


# ---------------------------------------------------------------------------------------------
# epoch_bump, fenced_epoch_write, new_epoch_nonzero_sequence
# ---------------------------------------------------------------------------------------------


def test_epoch_bump_of_an_idempotent_producer_in_a_later_segment(tmp_path):
    log = Log(tmp_path)
    w = log.partition(segment_bytes=700)
    p = Producer(21, epoch=4)
    q = Producer(22, epoch=0)
    for _ in range(3):
        p.send(w, recs(w.next_offset, 2))
        q.send(w, recs(w.next_offset, 2))
    w.roll()
    p.bump_epoch()
    r = p.send(w, recs(w.next_offset, 2))
    q.send(w, recs(w.next_offset, 2))
    p.send(w, recs(w.next_offset, 2))
    findings = log.scan()
    f = only(findings, "epoch_bump")
    assert findings == [f]
    assert (f.offset, f.segment, f.position) == (r.base_offset, segment(w, r.segment_base_offset), r.position)
    assert (f.producer_id, f.producer_epoch, f.sequence) == (21, 5, 0)
    assert f.details["previous_epoch"] == 4 and f.details["open_transaction_aborted"] is False
    # SPEC section 2: an idempotent producer's own bump (KIP-360) has client outcome none.
    assert (f.severity, f.error_code, f.client_outcome) == ("info", None, "none")
    assert f.details["reason"] == "idempotent_bump" and "client_exception" not in f.details


def test_epoch_bump_near_miss_same_epoch_over_segments(tmp_path):
    log = Log(tmp_path)
    w = log.partition(segment_bytes=500)
    p = Producer(21, epoch=4)
    for _ in range(8):
        p.send(w, recs(w.next_offset, 2))
    assert len(w.segments) >= 3
    assert log.scan() == []


def test_coordinator_fences_an_open_transaction_with_a_bumped_abort(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    t = Producer(31, epoch=0, transactional=True, coordinator_epoch=2)
    t.begin()
    first = t.send(w, recs(0, 2))
    plain(w)
    t.bump_epoch()
    (marker,) = t.abort([w])
    findings = log.scan()
    f = only(findings, "epoch_bump")
    assert findings == [f]  # the abort closes the transaction: no open/hanging one, index agrees
    assert f.offset == marker.base_offset
    # No later batch of the producer: the coordinator aborted it on timeout (SPEC: timeout_abort).
    assert f.details == {"previous_epoch": 0, "open_transaction_aborted": True, "reason": "timeout_abort"}
    assert f.client_outcome == "none"
    assert str(first.base_offset) in f.message


def test_zombie_write_after_a_new_instance_in_another_segment(tmp_path):
    log = Log(tmp_path)
    w = log.partition(segment_bytes=600)
    old = Producer(41, epoch=1)
    old.send(w, recs(w.next_offset, 2))
    old.send(w, recs(w.next_offset, 2))
    w.roll()
    new = Producer(41, epoch=2)
    bump = new.send(w, recs(w.next_offset, 2))
    zombie = old.send(w, recs(w.next_offset, 2))
    new.send(w, recs(w.next_offset, 2))  # the new instance goes on at sequence 2: nothing to say
    findings = log.scan()
    assert checks(findings) == ["epoch_bump", "fenced_epoch_write"]
    f = findings[1]
    assert (f.offset, f.position, f.segment) == (zombie.base_offset, zombie.position, segment(w, zombie.segment_base_offset))
    assert (f.producer_epoch, f.sequence) == (1, 4)
    assert (f.error_code, f.error_name, f.client_outcome) == (47, "INVALID_PRODUCER_EPOCH", "abortable")
    assert f.details["last_seen_epoch"] == 2
    assert findings[0].offset == bump.base_offset


def test_zombie_transaction_marker_is_fenced(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    t = Producer(42, epoch=3, transactional=True)
    t.begin()
    t.send(w, recs(0, 2))
    t.commit()
    (stale,) = t.commit([w], epoch=2)
    findings = log.scan()
    f = only(findings, "fenced_epoch_write")
    assert f.offset == stale.base_offset and f.details["marker"] == "COMMIT"
    assert not_info(findings) == [("fenced_epoch_write", stale.base_offset, f.message)]


@pytest.mark.parametrize(("sequence", "expected"), [(3, ["epoch_bump", "new_epoch_nonzero_sequence"]), (0, ["epoch_bump"])])
def test_new_epoch_must_start_at_sequence_zero(tmp_path, sequence, expected):
    log = Log(tmp_path)
    w = log.partition(segment_bytes=500)
    p = Producer(51, epoch=0)
    q = Producer(52, epoch=0)
    p.send(w, recs(w.next_offset, 3))
    q.send(w, recs(w.next_offset, 3))
    w.roll()
    p.bump_epoch()
    r = p.send(w, recs(w.next_offset, 2), sequence=sequence)
    q.send(w, recs(w.next_offset, 1))
    p.send(w, recs(w.next_offset, 2))
    findings = log.scan()
    assert checks(findings) == expected
    assert all(f.offset == r.base_offset for f in findings)
    if sequence:
        f = findings[1]
        assert f.message == (
            f"Invalid sequence number for new epoch of producer 51 at offset {r.base_offset} in partition t-0: "
            f"1 (request epoch), 3 (seq. number), 0 (current producer epoch)"
        )
        assert (f.error_code, f.client_outcome) == (45, "abortable")


# ---------------------------------------------------------------------------------------------
# out_of_order_sequence, duplicate_sequence
# ---------------------------------------------------------------------------------------------


def test_out_of_order_sequence_at_a_segment_boundary(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    p = Producer(61, epoch=0)
    q = Producer(62, epoch=1)
    p.send(w, recs(w.next_offset, 3))  # 0..2
    q.send(w, recs(w.next_offset, 2))
    w.roll()
    r = p.send(w, recs(w.next_offset, 2), sequence=5)  # first batch of the new segment
    q.send(w, recs(w.next_offset, 2))
    p.send(w, recs(w.next_offset, 1), sequence=7)  # goes on from what was written
    findings = log.scan()
    f = only(findings, "out_of_order_sequence")
    assert findings == [f]
    assert (f.offset, f.position, f.segment) == (r.base_offset, 0, segment(w, r.segment_base_offset))
    assert f.details["expected_sequence"] == 3
    assert f.message.endswith(": 5 (incoming seq. number), 2 (current end sequence number)")


def test_sequence_wraps_at_int32_max_near_miss(tmp_path):
    # The snapshot at the log start (KIP-360) says producer 63 ended at sequence 2^31-2.
    log = Log(tmp_path)
    w = log.partition(start_offset=500, segment_bytes=500)
    seed_snapshot(w, [ProducerState(63, producer_epoch=0, last_sequence=INT32_MAX - 1, last_offset=499)])
    p = Producer(63, epoch=0)
    p.send(w, recs(w.next_offset, 1), sequence=INT32_MAX)
    p.send(w, recs(w.next_offset, 3), sequence=0)  # 2^31-1 -> 0 (ProducerAppendInfo.inSequence)
    p.send(w, recs(w.next_offset, 2), sequence=3)
    assert log.scan() == []


def test_duplicate_sequence_retried_into_the_next_segment(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    p = Producer(71, epoch=2)
    q = Producer(72, epoch=0)
    p.send(w, recs(w.next_offset, 3))
    first = p.send(w, recs(w.next_offset, 3))  # sequences 3..5
    q.send(w, recs(w.next_offset, 3))  # another producer's 3..5 is no duplicate
    w.roll()
    dup = p.send(w, recs(w.next_offset, 3), sequence=3, advance=False)
    p.send(w, recs(w.next_offset, 2))  # 6..7 after the rejected duplicate: in sequence
    q.send(w, recs(w.next_offset, 1))
    findings = log.scan()
    f = only(findings, "duplicate_sequence")
    assert findings == [f]
    assert (f.offset, f.segment) == (dup.base_offset, segment(w, dup.segment_base_offset))
    assert f.details["original_offset"] == first.base_offset
    assert (f.details["first_sequence"], f.details["last_sequence"]) == (3, 5)
    # SPEC section 2: the broker answers a retry NONE; the copy in the log carries no error code.
    assert (f.error_code, f.error_name, f.client_outcome) == (None, None, "none")


# ---------------------------------------------------------------------------------------------
# unknown_producer_id vs retention_gap; snapshots at the log start (KIP-360)
# ---------------------------------------------------------------------------------------------


def _retained_log(tmp_path, *, keep_snapshot: bool, snapshots: bool = True):
    """Producers 81 (before and after the cut) and 82 interleaved over 1-batch segments; the
    first two segments are deleted by retention."""
    log = Log(tmp_path)
    w = log.partition(segment_bytes=200, snapshots=snapshots)
    p = Producer(81, epoch=0)
    q = Producer(82, epoch=0)
    for _ in range(3):
        p.send(w, recs(w.next_offset, 2))
        q.send(w, recs(w.next_offset, 1))
    assert len(w.segments) >= 5
    start = w.delete_segments(2, keep_snapshot_at_log_start=keep_snapshot)
    return log, w, start


def test_retention_gap_log_start_from_the_first_segment(tmp_path):
    log, w, start = _retained_log(tmp_path, keep_snapshot=False)
    findings = log.scan()
    f = only(findings, "retention_gap")
    assert findings == [f]
    # 81's first surviving batch (sequence 2) opens the log: no snapshot at or before it.
    first = next(r for r in w.results if r.base_offset >= start)
    assert (start, first.base_offset, first.info.producer_id, first.info.base_sequence) == (3, 3, 81, 2)
    assert (f.offset, f.producer_id, f.sequence) == (3, 81, 2)
    assert f.details["log_start_offset"] == start == w.segments[0].base_offset
    assert f.details["missing_sequences"] == [0, 1]
    assert f.details["in_snapshot"] is False
    # SPEC section 2: no error code a producer would see (brokers since 2.5 accept the batch).
    assert (f.severity, f.error_code, f.error_name, f.client_outcome) == ("warning", None, None, "none")
    # 82's first surviving batch (offset 5, sequence 1) comes after the snapshot taken at the roll
    # to offset 5, which still knows its deleted sequence 0: no gap for it.
    assert any(e.producer_id == 82 for e in w.snapshots[5])
    # the log start came from the first segment: the checkpoint has no entry for t-0
    assert "t 0 " not in (log.root / "log-start-offset-checkpoint").read_text()


def test_kip360_snapshot_at_the_log_start_knows_the_producers(tmp_path):
    log, w, start = _retained_log(tmp_path, keep_snapshot=True)
    assert start in w.snapshots
    assert log.scan() == []


def test_retention_gap_log_start_from_the_checkpoint_and_without_it(tmp_path):
    # DeleteRecords moved the log start into the first segment: log-start-offset-checkpoint.
    log = Log(tmp_path, snapshots=False)
    w = log.partition()
    plain(w, 4)
    plain(w, 3)  # offsets 0..6 from a plain producer
    w.delete_records(7)
    p = Producer(91, epoch=0)
    r = p.send(w, recs(w.next_offset, 2), sequence=4)
    p.send(w, recs(w.next_offset, 2))
    log.close()
    entries = (log.root / "log-start-offset-checkpoint").read_text().split("\n")
    assert "t 0 7" in entries
    f = only(log.scan(), "retention_gap")
    assert f.offset == r.base_offset
    assert f.details["log_start_offset"] == 7 and f.details["missing_sequences"] == [0, 3]
    assert f.details["in_snapshot"] is False
    # Without the checkpoint the log starts at offset 0: unknown_producer_id, a warning without
    # an error code since brokers 2.5+ accept the batch (SPEC section 2).
    (log.root / "log-start-offset-checkpoint").write_text("0\n0\n")
    findings = log.scan()
    f = only(findings, "unknown_producer_id")
    assert checks(findings) == ["unknown_producer_id"]
    assert "(sequences 0-3 are not in this log)" in f.details.pop("remedy")["summary"]
    assert f.details == {"log_start_offset": 0, "missing_sequences": [0, 3], "in_snapshot": False}
    assert (f.severity, f.error_code, f.client_outcome) == ("warning", None, "none")


def test_first_batch_at_sequence_zero_is_no_gap(tmp_path):
    log = Log(tmp_path, snapshots=False)
    w = log.partition(start_offset=1000)
    p = Producer(92, epoch=5)
    plain(w)
    p.send(w, recs(w.next_offset, 2))
    p.send(w, recs(w.next_offset, 2))
    assert log.scan() == []


def test_in_snapshot_names_a_producer_an_older_snapshot_knew(tmp_path):
    # A stale snapshot below the log start still knows producer 93 (last sequence 5); the one at
    # the log start does not (the producer expired): the gap is from sequence 6 on.
    log = Log(tmp_path)
    w = log.partition(start_offset=40)
    w.snapshots[40] = []
    r = Producer(93, epoch=1).send(w, recs(w.next_offset, 2), sequence=9)
    plain(w)
    log.close()
    folder = log.root / w.name
    (folder / f"{30:020d}.snapshot").write_bytes(
        _SidecarEncoders.producer_snapshot([ProducerState(93, 1, 5, 25, 1, TS_BASE, -1, -1)])
    )
    findings = log.scan()
    f = only(findings, "retention_gap")
    assert findings == [f]
    assert f.offset == r.base_offset
    assert f.details["in_snapshot"] is True
    assert f.details["missing_sequences"] == [6, 8]
    assert f.details["log_start_offset"] == 40


def test_older_snapshot_showing_the_sequences_go_on_is_no_gap(tmp_path):
    log = Log(tmp_path)
    w = log.partition(start_offset=40)
    w.snapshots[40] = []
    Producer(94, epoch=1).send(w, recs(w.next_offset, 2), sequence=6)
    log.close()
    folder = log.root / w.name
    (folder / f"{30:020d}.snapshot").write_bytes(
        _SidecarEncoders.producer_snapshot([ProducerState(94, 1, 5, 25, 1, TS_BASE, -1, -1)])
    )
    assert log.scan() == []


# ---------------------------------------------------------------------------------------------
# snapshot_mismatch: every later snapshot is compared
# ---------------------------------------------------------------------------------------------


def _snapshotted_log(tmp_path):
    log = Log(tmp_path)
    w = log.partition(segment_bytes=500)
    p = Producer(101, epoch=0)
    t = Producer(102, epoch=3, transactional=True, coordinator_epoch=4)
    t.begin()
    for i in range(8):
        p.send(w, recs(w.next_offset, 2))
        if i == 2:
            t.send(w, recs(w.next_offset, 1))
        if i == 5:
            t.commit()
    return log, w


def test_snapshots_that_agree_give_nothing(tmp_path):
    log, w = _snapshotted_log(tmp_path)
    log.close()
    offsets = sorted(w.snapshots)
    assert len(offsets) >= 4
    # one of them catches the transaction open (current_txn_first_offset compared)
    assert any(e.current_txn_first_offset >= 0 for o in offsets for e in w.snapshots[o])
    assert log.scan() == []


@pytest.mark.parametrize("which", ["first", "middle", "last"])
@pytest.mark.parametrize(
    ("field", "change"),
    [
        ("last_sequence", lambda e: replace(e, last_sequence=e.last_sequence + 2)),
        ("epoch", lambda e: replace(e, producer_epoch=e.producer_epoch + 1)),
        ("last_offset", lambda e: replace(e, last_offset=e.last_offset - 1)),
    ],
)
def test_each_later_snapshot_is_compared(tmp_path, which, field, change):
    log, w = _snapshotted_log(tmp_path)
    log.close()
    offsets = sorted(w.snapshots)
    offset = {"first": offsets[0], "middle": offsets[len(offsets) // 2], "last": offsets[-1]}[which]
    assert offset > 0  # the log starts at 0: the snapshots after it are compared, none seeds
    entries = [change(e) if e.producer_id == 101 else e for e in w.snapshots[offset]]
    (log.root / w.name / f"{offset:020d}.snapshot").write_bytes(_SidecarEncoders.producer_snapshot(entries))
    findings = log.scan()
    f = only(findings, "snapshot_mismatch")
    assert findings == [f]
    assert f.offset == offset and f.details["snapshot_offset"] == offset and f.details["producer_id"] == 101
    assert set(f.details["fields"]) == {field}
    assert (f.severity, f.error_code, f.client_outcome) == ("warning", None, "none")


def test_snapshot_mismatch_on_an_open_transaction(tmp_path):
    log, w = _snapshotted_log(tmp_path)
    log.close()
    offset = next(o for o in sorted(w.snapshots) if any(e.current_txn_first_offset >= 0 for e in w.snapshots[o]))
    entries = [replace(e, current_txn_first_offset=-1) if e.producer_id == 102 else e for e in w.snapshots[offset]]
    (log.root / w.name / f"{offset:020d}.snapshot").write_bytes(_SidecarEncoders.producer_snapshot(entries))
    f = only(log.scan(), "snapshot_mismatch")
    assert f.details["producer_id"] == 102 and set(f.details["fields"]) == {"current_txn_first_offset"}


# ---------------------------------------------------------------------------------------------
# hanging_transaction vs open_transaction against --transaction-timeout-ms
# ---------------------------------------------------------------------------------------------


def _open_transaction_log(tmp_path):
    log = Log(tmp_path)
    w = log.partition(segment_bytes=400)
    t = Producer(111, epoch=0, transactional=True)
    t.begin()
    first = t.send(w, recs(0, 2), base_timestamp=TS_BASE)  # max timestamp TS_BASE + 1
    q = Producer(112, epoch=0)
    for k in range(4):
        q.send(w, recs(w.next_offset, 1), base_timestamp=TS_BASE + 100_000 * (k + 1))
    assert len(w.segments) >= 2 and first.segment_base_offset == 0
    return log, first, 400_000 - 1


def test_transaction_older_than_the_timeout_is_hanging(tmp_path):
    log, first, age = _open_transaction_log(tmp_path)
    findings = log.scan(timeout=age - 1)
    f = only(findings, "hanging_transaction")
    assert findings == [f]
    assert (f.offset, f.position, f.producer_id) == (first.base_offset, first.position, 111)
    assert f.details["first_offset"] == first.base_offset and f.details["age_ms"] == age
    assert (f.severity, f.error_code, f.client_outcome) == ("error", None, "none")


def test_transaction_at_the_timeout_is_open(tmp_path):
    log, first, age = _open_transaction_log(tmp_path)
    for timeout in (age, 900_000):
        findings = log.scan(timeout=timeout)
        f = only(findings, "open_transaction")
        assert findings == [f]
        assert f.details["first_offset"] == first.base_offset and f.details["age_ms"] == age
        assert f.severity == "info"


# ---------------------------------------------------------------------------------------------
# transaction_state_violation, orphan_marker, coordinator_epoch_regression, txn_index_mismatch
# ---------------------------------------------------------------------------------------------


def test_non_transactional_write_inside_an_open_transaction(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    t = Producer(121, epoch=0, transactional=True)
    t.begin()
    first = t.send(w, recs(0, 2))
    plain(w)
    r = t.send(w, recs(w.next_offset, 2), transactional=False)
    t.commit()
    findings = log.scan()
    f = only(findings, "transaction_state_violation")
    assert findings == [f]
    assert f.offset == r.base_offset and f.details["first_offset"] == first.base_offset
    assert (f.error_code, f.error_name, f.client_outcome) == (48, "INVALID_TXN_STATE", "fatal")


def test_transactional_write_under_another_epoch(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    t = Producer(122, epoch=0, transactional=True)
    t.begin()
    t.send(w, recs(0, 2))
    r = t.send(w, recs(w.next_offset, 2), epoch=1, sequence=0)
    t.commit(epoch=1)
    findings = log.scan()
    assert checks(findings) == ["epoch_bump", "transaction_state_violation"]
    assert findings[1].offset == r.base_offset and findings[1].details["transaction_epoch"] == 0


def test_interleaved_transactions_and_plain_writes_near_miss(tmp_path):
    log = Log(tmp_path)
    w = log.partition(segment_bytes=600)
    a = Producer(123, epoch=0, transactional=True, coordinator_epoch=1)
    b = Producer(124, epoch=0, transactional=True, coordinator_epoch=1)
    c = Producer(125, epoch=0)
    for _ in range(3):
        a.begin()
        b.begin()
        a.send(w, recs(w.next_offset, 1))
        c.send(w, recs(w.next_offset, 1))
        b.send(w, recs(w.next_offset, 1))
        plain(w, 1)
        a.send(w, recs(w.next_offset, 1))
        b.abort()
        c.send(w, recs(w.next_offset, 1))
        a.commit()
    assert len(w.segments) >= 3
    assert log.scan() == []


def test_orphan_marker(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    plain(w)
    t = Producer(131, epoch=0, transactional=True)
    (r,) = t.abort([w])
    plain(w)
    findings = log.scan()
    f = only(findings, "orphan_marker")
    assert findings == [f]  # an ABORT of nothing needs no .txnindex entry
    assert f.offset == r.base_offset and f.details["marker"] == "ABORT" and f.severity == "info"


def test_marker_in_a_later_segment_than_its_data_near_miss(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    t = Producer(132, epoch=0, transactional=True)
    t.begin()
    t.send(w, recs(0, 2))
    w.roll()
    plain(w)
    t.abort()  # indexed in the marker's segment (LogSegment.updateTxnIndex)
    t.begin()
    t.send(w, recs(w.next_offset, 1))
    w.roll()
    t.commit()
    log.close()
    assert not w.segments[0].txn_index and len(w.segments[1].txn_index) == 1
    assert log.scan() == []


@pytest.mark.parametrize(("second", "regression"), [(3, True), (5, False), (9, False)])
def test_coordinator_epoch_regression(tmp_path, second, regression):
    log = Log(tmp_path)
    w = log.partition()
    t = Producer(141, epoch=0, transactional=True)
    t.begin()
    t.send(w, recs(0, 2))
    t.commit(coordinator_epoch=5)
    t.begin()
    t.send(w, recs(w.next_offset, 2))
    (r,) = t.commit(coordinator_epoch=second)
    findings = log.scan()
    if regression:
        f = only(findings, "coordinator_epoch_regression")
        assert findings == [f] and f.offset == r.base_offset
        assert f.details["coordinator_epoch"] == 3 and f.details["current_coordinator_epoch"] == 5
        assert (f.error_code, f.error_name, f.client_outcome) == (52, "TRANSACTION_COORDINATOR_FENCED", "fatal")
    else:
        assert findings == []


def test_txn_index_entries_compared_per_segment(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    t = Producer(151, epoch=0, transactional=True)
    t.begin()
    first = t.send(w, recs(0, 2))
    w.roll()
    (marker,) = t.abort()
    plain(w)
    (entry,) = w.segments[1].txn_index
    w.segments[1].txn_index.clear()
    w.segments[0].txn_index.append(entry)  # indexed in the data's segment, not the marker's
    findings = log.scan()
    assert sorted((f.check, f.segment, f.details["reason"]) for f in findings) == [
        ("txn_index_mismatch", segment(w, 0), "unknown_index_entry"),
        ("txn_index_mismatch", segment(w, marker.segment_base_offset), "missing_index_file"),
    ]
    assert all(f.details["first_offset"] == first.base_offset for f in findings)


# ---------------------------------------------------------------------------------------------
# compacted and coordinator-written topics
# ---------------------------------------------------------------------------------------------


def _cleaned_log(tmp_path, topic: str):
    """What the log cleaner leaves of producer 161's batches: whole batches removed (offset and
    sequence gaps), including its first ones."""
    log = Log(tmp_path, snapshots=False)
    w = log.partition(topic)
    p = Producer(161, epoch=0)
    q = Producer(162, epoch=1)
    p.send(w, recs(3, 2), base_offset=3, sequence=3)  # sequences 0..2 cleaned away
    q.send(w, recs(5, 2))
    p.send(w, recs(12, 3), base_offset=12, sequence=9)  # 5..8 cleaned away
    q.send(w, recs(20, 2), base_offset=20, sequence=2)
    p.send(w, recs(22, 1), sequence=12)
    return log


def test_compacted_topic_cleaned_batches_give_no_sequence_noise(tmp_path):
    assert _cleaned_log(tmp_path, "users").scan(compacted=("users",)) == []


def test_same_log_in_a_topic_that_is_not_compacted(tmp_path):
    findings = _cleaned_log(tmp_path, "users").scan()
    assert sorted(set(checks(findings))) == ["offset_gap", "out_of_order_sequence", "unknown_producer_id"]
    assert [f.offset for f in of(findings, "out_of_order_sequence")] == [12]


def test_a_torn_tail_is_no_sequence_gap_in_the_next_segment(tmp_path):
    # The torn batch is a truncated_batch finding of the segment step; Kafka's recovery truncates
    # there (LogSegment.recover) and the log goes on at its offset in a new segment. The
    # producer's sequences 2..3 were in the torn batch: its next batch is no sequence error.
    from tests.support.writer import Faults

    def write(root, torn: bool):
        log = Log(root, snapshots=False)
        w = log.partition()
        p = Producer(171, epoch=0)
        p.send(w, recs(w.next_offset, 2))
        if torn:
            cut = p.send(w, recs(w.next_offset, 2), faults=Faults(truncate=10))
            w.next_offset = cut.base_offset
        else:
            p.sequences[id(w)] = 4  # the same two records, simply missing
        w.roll(w.next_offset)
        p.send(w, recs(w.next_offset, 2))
        return log

    assert [f.check for f in write(tmp_path / "torn", True).scan()] == ["truncated_batch"]
    assert [f.check for f in write(tmp_path / "missing", False).scan()] == ["out_of_order_sequence"]


def test_compaction_is_inferred_from_the_cleaner_offset_checkpoint(tmp_path):
    # SPEC section 2: a partition the log dir's cleaner-offset-checkpoint lists is compacted
    # (LogCleanerManager checkpoints only the logs the cleaner compacts).
    log = _cleaned_log(tmp_path, "users")
    log.close()
    (log.root / "cleaner-offset-checkpoint").write_text("0\n1\nusers 0 22\n")
    assert log.scan() == []
    (log.root / "cleaner-offset-checkpoint").write_text("0\n1\nother 0 22\n")
    assert "out_of_order_sequence" in checks(log.scan())


def test_consumer_offsets_transactional_offset_commits(tmp_path):
    # TxnOffsetCommit: the group coordinator writes the producer's id and epoch with sequence 0
    # every time (AppendOrigin.COORDINATOR: epochs checked, sequences not).
    log = Log(tmp_path)
    offsets = log.partition("__consumer_offsets", 12, segment_bytes=600)
    data = log.partition("orders")
    t = Producer(171, epoch=4, transactional=True, coordinator_epoch=2)
    for i in range(5):
        t.begin()
        t.send(data, recs(data.next_offset, 2))
        offsets.append(
            BatchSpec(
                records=(RecordSpec(key=b"group-%d" % i, value=b"offset"),),
                producer_id=171,
                producer_epoch=4,
                base_sequence=0,
                transactional=True,
            )
        )
        t.commit([data, offsets]) if i % 2 == 0 else t.abort([data, offsets])
    offsets.append(BatchSpec(records=(RecordSpec(key=b"group-x", value=b"plain commit"),)))
    assert len(offsets.segments) >= 2
    assert log.scan() == []


def test_consumer_offsets_epochs_are_still_checked(tmp_path):
    log = Log(tmp_path)
    offsets = log.partition("__consumer_offsets", 0)
    for epoch in (4, 4, 3):
        offsets.append(
            BatchSpec(records=(RecordSpec(key=b"g", value=b"o"),), producer_id=172, producer_epoch=epoch, base_sequence=0)
        )
    findings = log.scan()
    assert checks(findings) == ["fenced_epoch_write"] and findings[0].offset == 2


def test_same_offset_commits_in_a_plain_topic_are_duplicates(tmp_path):
    log = Log(tmp_path)
    w = log.partition("not-a-coordinator-topic")
    for _ in range(2):
        w.append(BatchSpec(records=(RecordSpec(key=b"g", value=b"o"),), producer_id=173, producer_epoch=4, base_sequence=0))
    assert checks(log.scan()) == ["duplicate_sequence"]


# ---------------------------------------------------------------------------------------------
# transactions v2 (KIP-890): the coordinator bumps the epoch in every end marker
# ---------------------------------------------------------------------------------------------


def test_transactions_v2_epoch_bump_on_every_marker(tmp_path):
    log = Log(tmp_path)
    w = log.partition(segment_bytes=700)
    t = Producer(181, epoch=0, transactional=True, coordinator_epoch=1)
    q = Producer(182, epoch=0)
    markers = []
    for i in range(6):
        t.begin()
        t.send(w, recs(w.next_offset, 2))
        q.send(w, recs(w.next_offset, 1))
        t.send(w, recs(w.next_offset, 1))
        end = t.commit if i % 3 else t.abort
        (m,) = end(epoch=t.epoch + 1)
        markers.append((m.base_offset, i % 3 == 0))
        t.bump_epoch()  # the producer goes on with the marker's epoch, from sequence 0
    # Transactions v2 ends are normal operation: no finding, an epoch_bump timeline event each
    # (SPEC epoch_bump; TransactionMetadata.prepareAbortOrCommit bumps before every marker).
    assert log.scan() == []
    result = audit_in_process(discover([str(log.root)]), ScanOptions(timeline=True))
    events = [e for e in result.events if e.kind == "epoch_bump"]
    assert [(e.offset, e.producer_epoch) for e in events] == [(offset, i + 1) for i, (offset, _) in enumerate(markers)]
    assert all(e.message.endswith("(transaction end)") for e in events)


def test_timeline_events_reach_the_scan_result(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    t = Producer(181, epoch=0, transactional=True)
    t.begin()
    t.send(w, recs(w.next_offset, 2))
    t.commit()
    log.close()
    options = ScanOptions(timeline=True)
    result = audit_in_process(discover([str(log.root)]), options)
    kinds = [str(e.kind) for e in result.events if e.kind != "snapshot"]
    assert kinds == ["transaction_begin", "transaction_commit"]
    assert audit_in_process(discover([str(log.root)]), ScanOptions()).events == []
