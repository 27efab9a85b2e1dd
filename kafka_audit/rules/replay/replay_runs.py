"""The partition step's fast path over a run of batch summaries as columns
(:class:`~kafka_audit.rules.batch_summary.SummaryColumns`), without a Python object per batch.

One home for each decision: this path only decides that a batch has nothing to report, and then
updates exactly the state the per-summary path would (``OffsetContinuity.observe``,
``ProducerActivityLog.observe``, ``ProducerStateReplay.append``: ``ProducerStateManager``'s
``expire`` / ``append_data`` / ``append_marker`` / ``settled``, the ``TransactionTracker``, the
``TransactionVersions``). It takes, in log order, the batches of the shapes a healthy log is made
of:

- a batch without a producer id (a plain producer's);
- an idempotent or transactional producer's data batch at its current epoch and the next
  sequence (``ProducerAppendInfo.checkSequence``'s ``inSequence``), inside its open transaction
  under that transaction's epoch, or opening one;
- a transactions v0/v1 COMMIT or ABORT marker at the producer's epoch and a coordinator epoch not
  below its last, closing the transaction it has open;

each valid and v2, following the previous batch at the next offset and byte, inside its segment, with no
snapshot due, no producer expiring (``producer.id.expiration.ms``), re-synchronising after an
untrusted batch or with an epoch bump held. It stops at the first batch it is not sure of, which
the caller gives to the per-summary path (every finding and event comes from there), and goes on
after it. A producer the replay or the activity log does not know yet, a forked ``written`` state
and a coordinator topic take the per-summary path too.
"""

from __future__ import annotations

from collections.abc import Sequence

from kafka_audit.record.record_batch import MAGIC_VALUE_V2, ControlRecordType
from kafka_audit.rules.batch_summary import SummaryColumns
from kafka_audit.rules.replay.partition_replay import ProducerStateReplay
from kafka_audit.rules.replay.producer_activity import ProducerActivityLog
from kafka_audit.rules.replay.producer_state_entry import (
    INT32_MAX,
    NO_PRODUCER_EPOCH,
    AppendOrigin,
    BatchMetadata,
    ProducerStateEntry,
)
from kafka_audit.rules.replay.transaction_version import TV_2
from kafka_audit.rules.replay.transactions import OpenTxn

_ABORT, _COMMIT = ControlRecordType.ABORT, ControlRecordType.COMMIT
_new = tuple.__new__  # a NamedTuple's own __new__ is a Python call per batch
# One batch's values, in the order of record.batch_walk.COLUMNS.
Row = tuple[int, ...]


class RunTaker:
    """The fast path of one partition's step: :meth:`take` takes a run's batches while it is
    sure; the replay and the observers are the per-summary path's own (their maps are bound once
    here: none is replaced while the step runs)."""

    def __init__(self, replay: ProducerStateReplay, activity: ProducerActivityLog, producers: set[int]) -> None:
        self.replay, self.activity, self.producers = replay, activity, producers
        self.states = replay.producers
        self.entries = replay.producers.client.entries
        self.activities = activity.producers
        self.transactions = replay.transactions
        self.open = replay.transactions.open_view()
        self.held = replay.bumps.held_view()

    def ready(self) -> bool:
        """Whether the state is one the fast path knows how to extend (else every batch takes the
        per-summary path until it is)."""
        replay, states = self.replay, self.states
        return (
            replay.started
            and not replay.out.timeline
            and len(states.states()) == 1
            and states.client.origin is AppendOrigin.CLIENT
        )

    # The per-batch loop of the fast path, every step inline on locals (bench/partition_step.py
    # measures it; a method call per batch costs as much as a check): a data batch is taken here,
    # a marker in _marker, what runs once per call in _close.
    def take(  # noqa: C901, PLR0912, PLR0915
        self, run: SummaryColumns, columns: Sequence[memoryview], start: int, end: int, prev_last: int
    ) -> int:
        """Take the run's batches from ``start`` on while sure (``columns``: its
        :meth:`~kafka_audit.record.batch_walk.BatchColumns.columns`); ``end``: where the previous
        batch ended in the segment, ``prev_last``: the last offset of the batch the offsets go on
        from (``OffsetContinuity.previous``, with no unreadable batch since: the caller's test).
        Returns the index of the first batch not taken (``len(run)``: all)."""
        if not self.ready():
            return start
        next_due, floor = self.replay.snapshots.next_due, run.segment_base_offset
        entry_of, activity_of, open_of, held = self.entries.get, self.activities.get, self.open.get, self.held
        states = self.states
        resync = states.resync_view() if states.invalid_after is not None else ()
        expiration, marker, begin = states.expiration_ms, self._marker, self.transactions.on_data
        last_rows: dict[int, Row] = {}
        index = start
        for row in zip(*(column[start:] for column in columns)):
            position, base, last, pid, timestamp, _, size, first_seq, last_seq, records, _, _, epoch, _, magic, valid, transactional, control, _, _ = row
            if position != end or base != prev_last + 1 or last < base or base < floor or base >= next_due:
                break
            if not valid or magic < MAGIC_VALUE_V2:
                break  # (never in a run of the compiled walk)
            if pid >= 0:
                entry, activity = entry_of(pid), activity_of(pid)
                if entry is None or activity is None or epoch not in activity.epochs or pid in held or pid in resync:
                    break
                seen = entry.last_timestamp
                if timestamp - seen >= expiration and entry.current_txn_first_offset < 0 and seen >= 0 and timestamp >= 0:
                    break  # it expires: ProducerStateManager.expire decides and reports
                txn = open_of(pid)
                if control:
                    if not marker(row, entry, txn, run):
                        break
                else:
                    # ProducerStates.append_data's shortcut (same epoch, next sequence), then on_data.
                    metadata = entry.batch_metadata
                    if first_seq < 0 or epoch != entry.producer_epoch or epoch == NO_PRODUCER_EPOCH or not metadata:
                        break  # (an entry without an epoch: _append_data judges an unknown producer)
                    previous_seq = metadata[-1][0]
                    if first_seq != previous_seq + 1 and not (first_seq == 0 and previous_seq == INT32_MAX):
                        break
                    if txn is not None and (not transactional or epoch != txn.epoch):
                        break
                    metadata.append(_new(BatchMetadata, (last_seq, last, last - base, timestamp)))  # add_batch
                    entry.last_timestamp = timestamp
                    if transactional and entry.current_txn_first_offset < 0:
                        entry.current_txn_first_offset = base
                    if txn is not None:
                        txn.last_timestamp = timestamp
                    elif transactional:
                        begin(run.summary(row), False)
                    activity.batches += 1
                    activity.records += records
                    span = activity.sequences.get(epoch)
                    if span is None:
                        activity.sequences[epoch] = [first_seq, last_seq]
                    else:
                        span[1] = last_seq
                activity.last_offset = last
                if timestamp >= 0:  # ProducerActivityLog.observe's oldest and newest timestamp
                    if activity.first_timestamp is None or timestamp < activity.first_timestamp:
                        activity.first_timestamp = timestamp
                    if activity.last_timestamp is None or timestamp > activity.last_timestamp:
                        activity.last_timestamp = timestamp
                last_rows[pid] = row
            prev_last, end = last, position + size
            index += 1
        if index > start:
            newest = max(columns[4][start:index])  # max_timestamp, at C speed
            self._close(run, index - start, last_rows, newest, prev_last)
        return index

    def _marker(self, row: Row, entry: ProducerStateEntry, txn: OpenTxn | None, run: SummaryColumns) -> bool:
        """A TV0/1 end marker at the entry's epoch closing the open transaction of that epoch
        (``appendEndTxnMarker``'s checks pass, no bump, no orphan)."""
        pid, timestamp, coordinator_epoch, epoch, control_type = row[3], row[4], row[10], row[12], row[13]
        if control_type not in (_ABORT, _COMMIT) or txn is None or txn.epoch != epoch:
            return False
        if epoch != entry.producer_epoch or coordinator_epoch < entry.coordinator_epoch:
            return False
        versions = self.replay.versions
        if (versions.version(pid) or 0) >= TV_2:
            return False
        # ProducerStateEntry.end_transaction at its epoch (the batch metadata stays).
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = timestamp
        entry.current_txn_first_offset = -1
        transactions = self.transactions
        transactions.close(pid)
        versions.observe_marker(pid, control_type, epoch, txn.epoch)
        if control_type == _ABORT:
            transactions.end(run.summary(row), txn, judged=True)
        else:
            transactions.count_end(pid, False)  # TransactionTracker.end of a COMMIT without events
        return True

    def _close(self, run: SummaryColumns, taken: int, last_rows: dict[int, Row], newest: int, last: int) -> None:
        """What the per-summary path updates batch by batch, once for the ``taken`` batches up to
        offset ``last``: counts, newest offsets and timestamps (``newest``), each producer's last
        batch."""
        replay = self.replay
        states = self.states
        for pid, row in last_rows.items():
            states.note_batch(run.summary(row))
            states.settled(pid)
        self.producers.update(last_rows)
        replay.stats.batches_replayed += taken
        replay.last_valid_offset = max(replay.last_valid_offset, last)  # offsets rise through the batches taken
        replay.newest_timestamp = max(replay.newest_timestamp, newest)
        if replay.log_end_offset is None or last >= replay.log_end_offset:
            replay.log_end_offset = last + 1
