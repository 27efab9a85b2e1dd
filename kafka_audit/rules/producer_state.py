"""The producer-state replay of one partition: ``ProducerStateManager`` / ``ProducerAppendInfo``.

A pure function of the partition's batch summaries (in log order), its ``.snapshot`` files, its
log start offset and its ``.txnindex`` entries; it returns findings. No Spark, no I/O.

The replay walks the batches as a leader would have validated them as client appends
(``AppendOrigin.CLIENT``), keeping per producer id what ``ProducerStateEntry`` keeps:

- epoch checks (``ProducerAppendInfo.checkProducerEpoch``): a batch whose epoch is below the
  producer's current epoch is a zombie write (``fenced_epoch_write``); an epoch that rises is an
  ``epoch_bump`` (the earlier instance was fenced; with transactions v2 the coordinator bumps the
  epoch in every end marker, so each transaction end shows one);
- sequence checks (``ProducerAppendInfo.checkSequence`` with ``inSequence``, which allows the
  wrap from 2^31-1 to 0): a new epoch must start at sequence 0, the same epoch must go on at last
  sequence + 1; a batch repeating a sequence range already written under the same epoch is a
  duplicate (``ProducerStateEntry.findDuplicateBatch``; Kafka keeps the last 5 batches
  (``NUM_BATCHES_TO_RETAIN``), the audit keeps every batch of the current epoch) and Kafka checks
  duplicates before sequences (``UnifiedLog.analyzeAndValidateProducerState``);
- a producer id's first data batch without any earlier state and a sequence != 0: the
  UnknownProducerId case (``unknown_producer_id`` when the log starts at 0, ``retention_gap``
  when data before the log start offset was deleted: KIP-360 brokers with no state accept any
  sequence there, as ``checkSequence`` does when ``currentEntry.producerEpoch`` is
  ``NO_PRODUCER_EPOCH``);
- transactions (``ProducerAppendInfo.appendDataBatch`` / ``appendEndTxnMarker``): a transactional
  batch opens a transaction (``TxnMetadata``), a non-transactional one while it is open is
  ``InvalidTxnStateException`` ("Expected transactional write from producer ..."), the COMMIT or
  ABORT marker closes it; a marker's coordinator epoch may not go below the producer's
  (``checkCoordinatorEpoch``, ``TransactionCoordinatorFencedException``); transactions still
  open at the end of the log are ``open_transaction`` or ``hanging_transaction``; aborted ones are
  compared with the ``.txnindex`` files (see :mod:`kafka_audit.rules.transactions`).

Batches the leader would have rejected outright (fenced epoch, duplicate) do not change the
replayed state, so one zombie write does not make the real producer's next batch look wrong;
batches with sequence anomalies do (the log goes on from what was written), so one gap gives one
finding. Control batches carry no sequence; non-idempotent batches (producer id -1), KRaft
control batches and v0/v1 batches take no part; batches with ``valid == False`` are skipped.

In ``__consumer_offsets`` (and the other coordinator-written topics) the coordinator appends with
``AppendOrigin.COORDINATOR``: Kafka checks epochs there but not sequences (transactional offset
commits all carry base sequence 0), and so does the replay.

Snapshots (``ProducerStateManager.readSnapshot``; the file name is the offset after the state it
captures): the replay starts from the newest snapshot at or before the first batch replayed
(state survives deleted data, KIP-360) and compares each later one with the replayed state at its
offset: epoch, last sequence, last offset (``ProducerStateEntry.lastSeq`` / ``lastDataOffset``,
the last *data* batch's; both -1 after an end marker changed the epoch, which clears the batch
metadata), coordinator epoch and current transaction first offset. A producer missing from a
snapshot is no mismatch (brokers drop expired producers, ``removeExpiredProducers``); a producer a
snapshot knows and the replay does not (its data was deleted) is adopted from it.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.transactions import (
    Anchor,
    DerivedAbortedTxn,
    OpenTxn,
    compare_txn_index,
    open_transaction_findings,
)
from kafka_audit.findings import Finding, make_finding, partition_label
from kafka_audit.formats.producer_snapshot import ProducerSnapshot, ProducerSnapshotEntry
from kafka_audit.formats.transaction_index import AbortedTxn

INT32_MAX = 0x7FFFFFFF
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
ABORT = 0
COMMIT = 1
MARKER_NAMES = {ABORT: "ABORT", COMMIT: "COMMIT"}
DEFAULT_TRANSACTION_TIMEOUT_MS = 900000

# Topics the group / transaction / share coordinators write with AppendOrigin.COORDINATOR.
COORDINATOR_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


@dataclass
class PartitionLog:
    """Everything the replay needs about one partition, besides the batches.

    ``log_start_offset``: from ``log-start-offset-checkpoint`` or the first segment's base offset
    (the caller decides). ``snapshots``: parsed ``.snapshot`` files, any order. ``aborted_txns``:
    the ``.txnindex`` entries per segment (keyed like ``BatchSummary.segment``); segments without a ``.txnindex``
    file are absent. ``compacted``: ``cleanup.policy=compact`` (the cleaner removes whole batches,
    so forward sequence gaps and a first sequence != 0 are expected there and not reported, and
    transaction index entries move to cleaned segments).
    """

    topic: str
    partition: int
    log_start_offset: int
    snapshots: list[ProducerSnapshot] = field(default_factory=list)
    aborted_txns: dict[str, list[AbortedTxn]] = field(default_factory=dict)
    transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS
    compacted: bool = False


@dataclass(slots=True)
class ReplayStats:
    """Counts for the summary panel."""

    producers: int = 0
    transactions_committed: int = 0
    transactions_aborted: int = 0
    transactions_open: int = 0
    batches_replayed: int = 0
    snapshots_compared: int = 0


def _snapshot_usable(snapshot: ProducerSnapshot) -> bool:
    """A snapshot the broker would load: an offset in its name and no read error
    (CorruptSnapshotException)."""
    return snapshot.offset is not None and snapshot.valid


def in_sequence(last_seq: int, next_seq: int) -> bool:
    """ProducerAppendInfo.inSequence: next = last + 1, or the wrap from 2^31-1 to 0."""
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


def next_sequence(last_seq: int) -> int:
    return 0 if last_seq in (NO_SEQUENCE, INT32_MAX) else last_seq + 1


class SequenceHistory:
    """Every ``[first, last]`` sequence range written under the producer's current epoch.

    Kafka's ``ProducerStateEntry`` keeps the last ``NUM_BATCHES_TO_RETAIN`` (5) batches; the audit
    keeps them all, in compact arrays, and looks them up by bisection while sequences rise (a
    dictionary takes over once they do not).
    """

    __slots__ = ("firsts", "lasts", "offsets", "_sorted", "_map")

    def __init__(self) -> None:
        self.firsts = array("i")
        self.lasts = array("i")
        self.offsets = array("q")
        self._sorted = True
        self._map: dict[tuple[int, int], int] | None = None

    def add(self, first: int, last: int, offset: int) -> None:
        if self._map is not None:
            self._map.setdefault((first, last), offset)
            return
        if self.firsts and first < self.firsts[-1]:
            self._sorted = False
            self._map = {}
            for f, l, o in zip(self.firsts, self.lasts, self.offsets):
                self._map.setdefault((f, l), o)
            self._map.setdefault((first, last), offset)
            self.firsts = self.lasts = self.offsets = None  # type: ignore[assignment]
            return
        self.firsts.append(first)
        self.lasts.append(last)
        self.offsets.append(offset)

    def find(self, first: int, last: int) -> int | None:
        """The base offset of an earlier batch with exactly this sequence range, if any."""
        if self._map is not None:
            return self._map.get((first, last))
        i = bisect.bisect_left(self.firsts, first)
        while i < len(self.firsts) and self.firsts[i] == first:
            if self.lasts[i] == last:
                return self.offsets[i]
            i += 1
        return None


@dataclass(slots=True)
class ProducerStateEntry:
    """The state of one producer id (``ProducerStateEntry``).

    ``last_seq`` / ``last_offset`` / ``offset_delta`` describe the last data batch of the current
    epoch (``BatchMetadata``), -1 / -1 / 0 when there is none. ``sequence_known`` is False while
    the replay knows nothing of the producer's sequences (only end markers seen, no snapshot): its
    first data batch then decides whether there is an UnknownProducerId gap.
    """

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    last_seq: int = NO_SEQUENCE
    last_offset: int = -1
    offset_delta: int = 0
    sequence_known: bool = False
    history: SequenceHistory = field(default_factory=SequenceHistory)
    last_batch: Any = None

    def maybe_update_epoch(self, epoch: int) -> bool:
        """ProducerStateEntry.maybeUpdateProducerEpoch: a new epoch clears the batch metadata."""
        if epoch != self.producer_epoch:
            self.producer_epoch = epoch
            self.last_seq = NO_SEQUENCE
            self.last_offset = -1
            self.offset_delta = 0
            self.history = SequenceHistory()
            return True
        return False

    def add_batch(self, batch: BatchSummary) -> None:
        """ProducerStateEntry.addBatch (with offsetDelta = lastOffset - firstOffset, as Kafka does)."""
        self.maybe_update_epoch(batch.producer_epoch)
        self.last_seq = batch.last_sequence
        self.last_offset = batch.last_offset
        self.offset_delta = batch.last_offset - batch.base_offset
        self.last_timestamp = batch.max_timestamp
        if batch.base_sequence >= 0:
            self.history.add(batch.base_sequence, batch.last_sequence, batch.base_offset)
        self.sequence_known = True
        self.last_batch = batch

    def load(self, entry: ProducerSnapshotEntry, anchor: Any) -> None:
        """ProducerStateManager.loadProducerEntry: the state a snapshot entry describes."""
        self.producer_epoch = entry.producer_epoch
        self.coordinator_epoch = entry.coordinator_epoch
        self.last_timestamp = entry.timestamp
        self.history = SequenceHistory()
        if entry.last_offset >= 0:
            self.last_seq = entry.last_sequence
            self.last_offset = entry.last_offset
            self.offset_delta = entry.offset_delta
            if entry.last_sequence >= 0:
                # BatchMetadata.firstSeq / firstOffset, in Java int / long arithmetic: a snapshot
                # whose CRC holds may still carry an offset delta no broker wrote.
                first_seq = _decrement_sequence(entry.last_sequence, entry.offset_delta)
                self.history.add(first_seq, entry.last_sequence, _wrap(entry.last_offset - entry.offset_delta, 64))
        else:
            self.last_seq, self.last_offset, self.offset_delta = NO_SEQUENCE, -1, 0
        self.sequence_known = True
        self.last_batch = anchor


def _wrap(value: int, bits: int) -> int:
    """``value`` as a Java int (32) or long (64) holds it: two's complement overflow."""
    half = 1 << (bits - 1)
    return (value + half) % (1 << bits) - half


def _decrement_sequence(sequence: int, decrement: int) -> int:
    """DefaultRecordBatch.decrementSequence (Java int arithmetic: a negative or huge decrement
    from a damaged snapshot wraps, it never leaves the int range)."""
    if sequence < decrement:
        return _wrap(INT32_MAX - (decrement - sequence) + 1, 32)
    return _wrap(sequence - decrement, 32)


@dataclass(slots=True)
class WrittenState:
    """A producer's state as the broker that wrote the log holds it, which is what its
    ``.snapshot`` files capture: the log appended exactly as written, with
    ``AppendOrigin.REPLICATION`` (a follower's appends, and log recovery:
    ``UnifiedLog.loadProducersFromRecords``), where ``ProducerAppendInfo`` only warns about a
    fenced producer epoch or coordinator epoch and makes no duplicate check. A batch the replay
    rejects (zombie write, duplicate, fenced marker) still moved this state on; snapshots are
    compared with it, so one rejected batch is not also a ``snapshot_mismatch``.
    """

    producer_epoch: int = NO_PRODUCER_EPOCH
    last_seq: int = NO_SEQUENCE
    last_offset: int = -1
    coordinator_epoch: int = -1
    txn_first_offset: int = -1
    sequence_known: bool = False

    def update_epoch(self, epoch: int) -> bool:
        """ProducerStateEntry.maybeUpdateProducerEpoch: a new epoch clears the batch metadata."""
        if epoch == self.producer_epoch:
            return False
        self.producer_epoch = epoch
        self.last_seq = NO_SEQUENCE
        self.last_offset = -1
        return True

    def append(self, batch: BatchSummary) -> None:
        """ProducerAppendInfo.appendDataBatch / appendEndTxnMarker with AppendOrigin.REPLICATION."""
        if batch.is_control:
            previous = self.producer_epoch
            if self.update_epoch(batch.producer_epoch) and previous != NO_PRODUCER_EPOCH:
                self.sequence_known = True  # a new epoch starts at sequence 0
            self.coordinator_epoch = batch.coordinator_epoch
            self.txn_first_offset = -1
            return
        self.update_epoch(batch.producer_epoch)
        self.last_seq = batch.last_sequence
        self.last_offset = batch.last_offset
        self.sequence_known = True
        if batch.is_transactional and self.txn_first_offset < 0:
            self.txn_first_offset = batch.base_offset

    def load(self, entry: ProducerSnapshotEntry) -> None:
        self.producer_epoch = entry.producer_epoch
        self.coordinator_epoch = entry.coordinator_epoch
        self.txn_first_offset = entry.current_txn_first_offset
        if entry.last_offset >= 0:
            self.last_seq, self.last_offset = entry.last_sequence, entry.last_offset
        else:
            self.last_seq, self.last_offset = NO_SEQUENCE, -1
        self.sequence_known = True


class ProducerStateReplay:
    """Feed batches in log order with :meth:`append`, then call :meth:`finish` for the findings.

    ``stats`` holds counts for the summary panel after :meth:`finish`.
    """

    def __init__(self, log: PartitionLog) -> None:
        self.log = log
        self.topic = log.topic
        self.partition = log.partition
        self.tp = partition_label(log.topic, log.partition)
        self.coordinator_origin = log.topic in COORDINATOR_TOPICS
        self.producers: dict[int, ProducerStateEntry] = {}
        # The state as written (WrittenState), which the .snapshot files are compared with.
        self.written: dict[int, WrittenState] = {}
        self.open_txns: dict[int, OpenTxn] = {}
        self.aborted: list[DerivedAbortedTxn] = []
        self.empty_aborts: set[tuple[str, int, int]] = set()
        self.findings: list[Finding] = []
        self.stats = ReplayStats()
        self.newest_timestamp = -1
        self.log_end_offset: int | None = None
        self._snapshots = sorted(
            (s for s in log.snapshots if _snapshot_usable(s)), key=lambda s: s.offset
        )
        self._entries_cache: dict[int, dict[int, ProducerSnapshotEntry]] = {}
        self._pending: list[ProducerSnapshot] = []
        self._started = False
        self._finished = False

    # -- snapshots --------------------------------------------------------------------------------

    def _entries(self, snapshot: ProducerSnapshot) -> dict[int, ProducerSnapshotEntry]:
        key = id(snapshot)
        cached = self._entries_cache.get(key)
        if cached is None:
            cached = {e.producer_id: e for e in snapshot.entries}
            self._entries_cache[key] = cached
        return cached

    def _start(self, first_offset: int | None) -> None:
        """Seed from the newest snapshot at or before the first batch; queue the later ones."""
        self._started = True
        seed = None
        later = []
        for snapshot in self._snapshots:
            if first_offset is None or snapshot.offset <= first_offset:
                seed = snapshot
            else:
                later.append(snapshot)
        self._pending = later[::-1]  # pop() from the end gives the lowest offset
        if seed is not None:
            offset = seed.offset
            for entry in self._entries(seed).values():
                self._adopt(entry, offset, seed.path)

    def _adopt(self, entry: ProducerSnapshotEntry, offset: int, label: str | None) -> None:
        state = self.producers.get(entry.producer_id)
        if state is None:
            state = self.producers[entry.producer_id] = ProducerStateEntry(entry.producer_id)
        anchor = Anchor(
            None,
            entry.last_offset if entry.last_offset >= 0 else offset,
            entry.last_offset if entry.last_offset >= 0 else offset,
            2,
            entry.producer_id,
            entry.producer_epoch,
            _decrement_sequence(entry.last_sequence, entry.offset_delta) if entry.last_sequence >= 0 else None,
        )
        state.load(entry, anchor)
        written = self.written.get(entry.producer_id)
        if written is None:
            written = self.written[entry.producer_id] = WrittenState()
        written.load(entry)
        if entry.current_txn_first_offset >= 0:
            txn_anchor = anchor._replace(base_offset=entry.current_txn_first_offset)
            self.open_txns[entry.producer_id] = OpenTxn(
                entry.producer_id, entry.current_txn_first_offset, entry.timestamp, entry.producer_epoch, txn_anchor
            )

    def _compare_due_snapshots(self, offset: int | None) -> None:
        """Compare the snapshots whose offset is at most ``offset`` (all remaining when None)."""
        pending = self._pending
        while pending and (offset is None or pending[-1].offset <= offset):
            snapshot = pending.pop()
            if offset is None and self.log_end_offset is not None and snapshot.offset > self.log_end_offset:
                # Beyond the end of the log (truncated tail): Kafka deletes such snapshots on load
                # (ProducerStateManager.truncateAndReload); nothing to compare them with.
                continue
            self._compare_snapshot(snapshot)

    def _compare_snapshot(self, snapshot: ProducerSnapshot) -> None:
        self.stats.snapshots_compared += 1
        offset = snapshot.offset
        label = snapshot.path
        for pid, entry in sorted(self._entries(snapshot).items()):
            state = self.producers.get(pid)
            written = self.written.get(pid)
            if state is None or written is None:
                self._adopt(entry, offset, label)
                continue
            replayed = {
                "epoch": written.producer_epoch,
                "coordinator_epoch": written.coordinator_epoch,
                "current_txn_first_offset": written.txn_first_offset,
            }
            stored = {
                "epoch": entry.producer_epoch,
                "coordinator_epoch": entry.coordinator_epoch,
                "current_txn_first_offset": entry.current_txn_first_offset,
            }
            if written.sequence_known:
                replayed["last_sequence"] = written.last_seq
                replayed["last_offset"] = written.last_offset
                stored["last_sequence"] = entry.last_sequence if entry.last_offset >= 0 else NO_SEQUENCE
                stored["last_offset"] = entry.last_offset
            diffs = {k: {"snapshot": stored[k], "replayed": replayed[k]} for k in stored if stored[k] != replayed[k]}
            if not state.sequence_known and entry.last_offset >= 0 and entry.producer_epoch == state.producer_epoch:
                # The snapshot knows the sequences the log no longer shows: take them over.
                state.last_seq, state.last_offset, state.offset_delta = (
                    entry.last_sequence,
                    entry.last_offset,
                    entry.offset_delta,
                )
                state.sequence_known = True
            if not written.sequence_known and entry.last_offset >= 0 and entry.producer_epoch == written.producer_epoch:
                written.last_seq, written.last_offset = entry.last_sequence, entry.last_offset
                written.sequence_known = True
            if not diffs:
                continue
            parts = ", ".join(f"{k.replace('_', ' ')} {v['snapshot']} (snapshot) vs {v['replayed']} (log)" for k, v in diffs.items())
            anchor = state.last_batch
            self.findings.append(
                make_finding(
                    "snapshot_mismatch",
                    f"Producer state snapshot at offset {offset} of partition {self.tp} disagrees with the "
                    f"log for producer {pid}: {parts}",
                    topic=self.topic,
                    partition=self.partition,
                    segment=getattr(anchor, "segment", None),
                    offset=offset,
                    batch=anchor,
                    details={"snapshot_offset": offset, "snapshot": label, "producer_id": pid, "fields": diffs},
                )
            )

    # -- batches ----------------------------------------------------------------------------------

    def append(self, batch: BatchSummary) -> None:
        """Replay one batch (``ProducerStateManager.prepareUpdate`` + ``ProducerAppendInfo.append`` + ``update``)."""
        if not batch.valid or batch.magic < 2:
            return
        if not self._started:
            self._start(batch.base_offset)
        if self._pending:
            self._compare_due_snapshots(batch.base_offset)
        self.stats.batches_replayed += 1
        if batch.max_timestamp > self.newest_timestamp:
            self.newest_timestamp = batch.max_timestamp
        end = batch.last_offset + 1
        if self.log_end_offset is None or end > self.log_end_offset:
            self.log_end_offset = end
        if batch.producer_id < 0:
            return
        if batch.is_control:
            if batch.control_type in (ABORT, COMMIT):
                self._written(batch.producer_id).append(batch)
                self._append_marker(batch)
            # An empty or KRaft control batch changes nothing (ProducerAppendInfo.append).
            return
        self._written(batch.producer_id).append(batch)
        self._append_data(batch)

    def _written(self, pid: int) -> WrittenState:
        written = self.written.get(pid)
        if written is None:
            written = self.written[pid] = WrittenState()
        return written

    def _finding(self, check: str, message: str, batch: Any, details: dict | None = None, offset: int | None = None) -> None:
        self.findings.append(
            make_finding(
                check,
                message,
                topic=self.topic,
                partition=self.partition,
                segment=getattr(batch, "segment", None),
                offset=offset,
                batch=batch,
                details=details,
            )
        )

    def _state(self, pid: int) -> ProducerStateEntry:
        state = self.producers.get(pid)
        if state is None:
            state = self.producers[pid] = ProducerStateEntry(pid)
        return state

    def _fenced(self, batch: BatchSummary, current: int) -> None:
        """ProducerAppendInfo.checkProducerEpoch (InvalidProducerEpochException)."""
        details = {"last_seen_epoch": current}
        if batch.is_control:
            details["marker"] = MARKER_NAMES.get(batch.control_type)
        self._finding(
            "fenced_epoch_write",
            f"Epoch of producer {batch.producer_id} at offset {batch.base_offset} in partition {self.tp} is "
            f"{batch.producer_epoch}, which is smaller than the last seen epoch {current}",
            batch,
            details,
        )

    def _epoch_bump(self, batch: BatchSummary, previous: int, aborted_txn: OpenTxn | None) -> None:
        message = (
            f"Epoch of producer {batch.producer_id} rose from {previous} to {batch.producer_epoch} at offset "
            f"{batch.base_offset} in partition {self.tp}"
        )
        if batch.is_control:
            message += f" with its {MARKER_NAMES[batch.control_type]} marker"
        if aborted_txn is not None:
            message += f", aborting its open transaction that started at offset {aborted_txn.first_offset}"
        self._finding(
            "epoch_bump",
            message,
            batch,
            {"previous_epoch": previous, "open_transaction_aborted": aborted_txn is not None},
        )

    def _append_data(self, batch: BatchSummary) -> None:
        """ProducerAppendInfo.appendDataBatch: epoch, sequence, then transaction state."""
        pid = batch.producer_id
        state = self._state(pid)
        epoch = batch.producer_epoch
        current = state.producer_epoch
        if current != NO_PRODUCER_EPOCH and epoch < current:
            self._fenced(batch, current)
            return
        seq = batch.base_sequence
        check_sequence = seq >= 0 and not self.coordinator_origin
        if current != NO_PRODUCER_EPOCH and epoch > current:
            self._epoch_bump(batch, current, None)
            if check_sequence and seq != 0:
                self._finding(
                    "new_epoch_nonzero_sequence",
                    f"Invalid sequence number for new epoch of producer {pid} at offset {batch.base_offset} in "
                    f"partition {self.tp}: {epoch} (request epoch), {seq} (seq. number), {current} (current "
                    f"producer epoch)",
                    batch,
                    {"previous_epoch": current},
                )
        elif check_sequence:
            if state.sequence_known and epoch == current:
                earlier = state.history.find(seq, batch.last_sequence)
                if earlier is not None:
                    self._finding(
                        "duplicate_sequence",
                        f"Duplicate sequence number for producer {pid} at offset {batch.base_offset} in partition "
                        f"{self.tp}: sequences {seq} to {batch.last_sequence} of epoch {epoch} were already "
                        f"written at offset {earlier}",
                        batch,
                        {"earlier_offset": earlier, "first_sequence": seq, "last_sequence": batch.last_sequence},
                    )
                    return
                if not in_sequence(state.last_seq, seq):
                    if not (self.log.compacted and _ahead(state.last_seq, seq)):
                        self._finding(
                            "out_of_order_sequence",
                            f"Out of order sequence number for producer {pid} at offset {batch.base_offset} in "
                            f"partition {self.tp}: {seq} (incoming seq. number), {state.last_seq} (current end "
                            f"sequence number)",
                            batch,
                            {"expected_sequence": next_sequence(state.last_seq)},
                        )
            elif seq != 0 and not state.sequence_known and not self.log.compacted:
                self._unknown_producer(batch)
        state.add_batch(batch)

        txn = self.open_txns.get(pid)
        if batch.is_transactional:
            if txn is None:
                self.open_txns[pid] = OpenTxn(pid, batch.base_offset, batch.max_timestamp, epoch, batch)
            elif txn.epoch != epoch:
                self._finding(
                    "transaction_state_violation",
                    f"Transactional write from producer {pid} at offset {batch.base_offset} in partition "
                    f"{self.tp} has epoch {epoch}, but its open transaction that started at offset "
                    f"{txn.first_offset} has epoch {txn.epoch}",
                    batch,
                    {"first_offset": txn.first_offset, "transaction_epoch": txn.epoch},
                )
                txn.epoch = epoch
        elif txn is not None:
            self._finding(
                "transaction_state_violation",
                f"Expected transactional write from producer {pid} at offset {batch.base_offset} in partition "
                f"{self.tp}",
                batch,
                {"first_offset": txn.first_offset, "transaction_epoch": txn.epoch},
            )

    def _unknown_producer(self, batch: BatchSummary) -> None:
        """UnknownProducerId: a first batch with sequence != 0 and no state to check it against."""
        pid = batch.producer_id
        seq = batch.base_sequence
        known = None
        for snapshot in self._snapshots:
            if snapshot.offset > batch.base_offset:
                break
            entry = self._entries(snapshot).get(pid)
            if entry is not None:
                known = entry
        missing = [0, seq - 1]
        if known is not None and known.producer_epoch == batch.producer_epoch and known.last_offset >= 0:
            if in_sequence(known.last_sequence, seq):
                return  # an older snapshot shows the sequences go on: the producer only expired
            if _ahead(known.last_sequence, seq):
                missing = [next_sequence(known.last_sequence), seq - 1]
        start = self.log.log_start_offset
        details = {"log_start_offset": start, "missing_sequences": missing, "in_snapshot": known is not None}
        if start > 0:
            self._finding(
                "retention_gap",
                f"Found no record of producerId={pid} at offset {batch.base_offset} in partition {self.tp}: its "
                f"first batch has sequence {seq}, so sequences {missing[0]} to {missing[1]} were written before "
                f"the log start offset {start} and deleted (retention or DeleteRecords)",
                batch,
                details,
            )
        else:
            self._finding(
                "unknown_producer_id",
                f"Found no record of producerId={pid} at offset {batch.base_offset} in partition {self.tp}: its "
                f"first batch has sequence {seq}, not 0, and the log starts at offset 0",
                batch,
                details,
            )

    def _append_marker(self, batch: BatchSummary) -> None:
        """ProducerAppendInfo.appendEndTxnMarker: epoch, coordinator epoch, then close the transaction."""
        pid = batch.producer_id
        state = self._state(pid)
        epoch = batch.producer_epoch
        current = state.producer_epoch
        kind = MARKER_NAMES[batch.control_type]
        if current != NO_PRODUCER_EPOCH and epoch < current:
            self._fenced(batch, current)
            return
        if batch.coordinator_epoch < state.coordinator_epoch:
            self._finding(
                "coordinator_epoch_regression",
                f"Invalid coordinator epoch for producerId {pid} at offset {batch.base_offset} in partition "
                f"{self.tp}: {batch.coordinator_epoch} (zombie), {state.coordinator_epoch} (current)",
                batch,
                {"coordinator_epoch": batch.coordinator_epoch, "current_coordinator_epoch": state.coordinator_epoch},
            )
        txn = self.open_txns.pop(pid, None)
        if current != NO_PRODUCER_EPOCH and epoch > current:
            self._epoch_bump(batch, current, txn if txn is not None and batch.control_type == ABORT else None)
            # A new epoch starts at sequence 0 whatever the log held before.
            state.sequence_known = True
        if txn is None:
            self._finding(
                "orphan_marker",
                f"{kind} marker for producer {pid} at offset {batch.base_offset} in partition {self.tp} with no "
                f"open transaction",
                batch,
                {"marker": kind, "coordinator_epoch": batch.coordinator_epoch},
            )
            if batch.control_type == ABORT:
                self.empty_aborts.add((batch.segment, pid, batch.base_offset))
        elif batch.control_type == ABORT:
            self.stats.transactions_aborted += 1
            self.aborted.append(DerivedAbortedTxn(pid, txn.first_offset, batch.base_offset, batch.segment, batch))
        else:
            self.stats.transactions_committed += 1
        # ProducerStateEntry.update(epoch, coordinatorEpoch, timestamp); a zombie coordinator's lower
        # epoch is not taken over, so each of its markers is reported.
        state.maybe_update_epoch(epoch)
        state.coordinator_epoch = max(state.coordinator_epoch, batch.coordinator_epoch)
        state.last_timestamp = batch.max_timestamp
        state.last_batch = batch

    # -- end of log -------------------------------------------------------------------------------

    def finish(self) -> list[Finding]:
        if self._finished:
            return self.findings
        self._finished = True
        if not self._started:
            self._start(None)
        self._compare_due_snapshots(None)
        self.stats.producers = len(self.producers)
        self.stats.transactions_open = len(self.open_txns)
        self.findings.extend(
            open_transaction_findings(
                self.topic,
                self.partition,
                self.open_txns.values(),
                self.newest_timestamp,
                self.log.transaction_timeout_ms,
            )
        )
        self.findings.extend(
            compare_txn_index(
                self.topic,
                self.partition,
                self.aborted,
                self.log.aborted_txns,
                self.empty_aborts,
                compacted=self.log.compacted,
            )
        )
        return self.findings


def _ahead(last_seq: int, seq: int) -> bool:
    """``seq`` lies after ``last_seq`` (a forward gap), not at or before it."""
    return seq > last_seq


def replay_partition(log: PartitionLog, batches: Iterable[BatchSummary]) -> list[Finding]:
    """Replay one partition's batches (in log order: by segment base offset, then position).

    Returns the producer-state findings of SPEC section 2, offsets absolute.
    """
    replay = ProducerStateReplay(log)
    for batch in batches:
        replay.append(batch)
    return replay.finish()
