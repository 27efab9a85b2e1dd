"""The one producer-state machine: Kafka's ``ProducerStateEntry`` and ``ProducerAppendInfo``
(storage module, ``org.apache.kafka.storage.internals.log``, Kafka 3.6), parametrised by the
append origin.

- :class:`ProducerStateEntry` keeps what Kafka keeps per producer id: the epoch, the metadata of
  the producer's last ``NUM_BATCHES_TO_RETAIN`` (5) data batches (``BatchMetadata``), the
  coordinator epoch, the last timestamp and the first offset of the ongoing transaction.
- :class:`ProducerStates` is a partition's map of entries (``ProducerStateManager``) and appends
  one batch at a time as ``ProducerAppendInfo.append`` does for an :class:`AppendOrigin`:

  * ``CLIENT`` (a produce request on the leader) validates: the duplicate check of
    ``UnifiedLog.analyzeAndValidateProducerState`` (``ProducerStateEntry.findDuplicateBatch``,
    made before any other check), ``checkProducerEpoch`` (``InvalidProducerEpochException``),
    ``checkSequence`` (``OutOfOrderSequenceException``) and, for end markers,
    ``checkCoordinatorEpoch`` (``TransactionCoordinatorFencedException``). A batch that fails a
    check is answered with the error and changes nothing (:class:`Rejection`).
  * ``COORDINATOR`` (the group/transaction coordinators' own appends) checks epochs only.
  * ``REPLICATION`` (a follower, and log recovery: ``UnifiedLog.loadProducersFromRecords``)
    accepts and records every batch as it is written, which is how a broker rebuilds the state
    its ``.snapshot`` files capture.

A producer id with no entry is accepted at any sequence, as ``checkSequence`` does when
``currentEntry.producerEpoch()`` is ``NO_PRODUCER_EPOCH`` (brokers since 2.5). A producer known
only from an end marker has an epoch and no batch metadata: its next data batch must start at
sequence 0 (``ProducerStateManagerTest.testAppendTxnMarkerWithNoProducerState``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

from kafka_audit.log.producer_snapshot import ProducerSnapshotEntry

INT32_MAX = 0x7FFFFFFF
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
# ProducerStateEntry.NUM_BATCHES_TO_RETAIN: the duplicate window.
NUM_BATCHES_TO_RETAIN = 5


class AppendOrigin(Enum):
    """``org.apache.kafka.storage.internals.log.AppendOrigin`` (RAFT_LEADER takes no part here)."""

    CLIENT = "client"
    COORDINATOR = "coordinator"
    REPLICATION = "replication"


_REPLICATION = AppendOrigin.REPLICATION  # read once per batch: a module name is read fastest


def in_sequence(last_seq: int, next_seq: int) -> bool:
    """ProducerAppendInfo.inSequence: next = last + 1, or the wrap from 2^31-1 to 0."""
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


def next_sequence(last_seq: int) -> int:
    """The sequence a producer must send next after ``last_seq`` (0 when it has none)."""
    return 0 if last_seq in (NO_SEQUENCE, INT32_MAX) else last_seq + 1


def wrap(value: int, bits: int) -> int:
    """``value`` as a Java int (32) or long (64) holds it: two's complement overflow."""
    half = 1 << (bits - 1)
    return (value + half) % (1 << bits) - half


def decrement_sequence(sequence: int, decrement: int) -> int:
    """DefaultRecordBatch.decrementSequence (Java int arithmetic: a damaged snapshot's huge or
    negative offset delta wraps, it never leaves the int range)."""
    if sequence < decrement:
        return wrap(INT32_MAX - (decrement - sequence) + 1, 32)
    return wrap(sequence - decrement, 32)


class BatchMetadata(NamedTuple):
    """``BatchMetadata``: a retained data batch. ``offset_delta`` is last offset - first offset,
    as ``ProducerAppendInfo.appendDataBatch`` computes it."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return wrap(self.last_offset - self.offset_delta, 64)


@dataclass(slots=True)
class ProducerStateEntry:
    """``ProducerStateEntry``: the state of one producer id."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batch_metadata: deque = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int = -1

    @property
    def last_seq(self) -> int:
        return self.batch_metadata[-1].last_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batch_metadata[-1].last_offset if self.batch_metadata else -1

    def maybe_update_epoch(self, epoch: int) -> bool:
        """maybeUpdateProducerEpoch: another epoch clears the batch metadata."""
        if epoch == self.producer_epoch:
            return False
        self.batch_metadata.clear()
        self.producer_epoch = epoch
        return True

    def add_batch(self, epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int) -> None:
        """addBatch: the oldest of 5 retained batches makes room for the new one."""
        if epoch != self.producer_epoch:
            self.maybe_update_epoch(epoch)
        self.batch_metadata.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def end_transaction(self, epoch: int, coordinator_epoch: int, timestamp: int) -> None:
        """update(producerEpoch, coordinatorEpoch, lastTimestamp) after an end marker."""
        self.maybe_update_epoch(epoch)
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = timestamp
        self.current_txn_first_offset = -1

    def find_duplicate_batch(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """findDuplicateBatch: a retained batch of the same epoch and exactly this sequence range."""
        if epoch != self.producer_epoch:
            return None
        for metadata in self.batch_metadata:
            if metadata.last_seq == last_seq and metadata.first_seq == first_seq:
                return metadata
        return None

    def copy(self) -> "ProducerStateEntry":
        """An equal entry that shares nothing mutable with this one (``BatchMetadata`` is immutable)."""
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            self.batch_metadata.copy(),
            self.coordinator_epoch,
            self.last_timestamp,
            self.current_txn_first_offset,
        )

    @classmethod
    def from_snapshot(cls, entry: ProducerSnapshotEntry) -> "ProducerStateEntry":
        """ProducerStateManager.readSnapshot: one batch's metadata when the entry has a last offset."""
        state = cls(
            entry.producer_id,
            entry.producer_epoch,
            coordinator_epoch=entry.coordinator_epoch,
            last_timestamp=entry.timestamp,
            current_txn_first_offset=entry.current_txn_first_offset,
        )
        if entry.last_offset >= 0 and entry.last_sequence >= 0:
            state.batch_metadata.append(
                BatchMetadata(entry.last_sequence, entry.last_offset, entry.offset_delta, entry.timestamp)
            )
        return state


@dataclass(slots=True)
class Rejection:
    """A check a ``CLIENT`` (or ``COORDINATOR``) append failed: the audit's check id, Kafka's
    sentence, and the check's details. The batch changed nothing."""

    check: str
    message: str
    details: dict[str, Any]


class ProducerStates:
    """A partition's producer entries as appends of one :class:`AppendOrigin` build them
    (``ProducerStateManager`` with ``prepareUpdate`` / ``ProducerAppendInfo`` / ``update``)."""

    def __init__(self, topic_partition: str, origin: AppendOrigin) -> None:
        self.tp = topic_partition
        self.origin = origin
        self.entries: dict[int, ProducerStateEntry] = {}

    def get(self, producer_id: int) -> ProducerStateEntry | None:
        return self.entries.get(producer_id)

    def copy(self, origin: AppendOrigin) -> "ProducerStates":
        """These entries, copied, to be appended to as ``origin`` from now on."""
        states = ProducerStates(self.tp, origin)
        states.entries = {pid: entry.copy() for pid, entry in self.entries.items()}
        return states

    def touch(self, producer_id: int) -> None:
        """``update`` of an append that appended nothing: the producer id gets an (empty) entry."""
        self.entries.setdefault(producer_id, ProducerStateEntry(producer_id))

    def load(self, entry: ProducerSnapshotEntry) -> None:
        """ProducerStateManager.loadProducerEntry."""
        self.entries[entry.producer_id] = ProducerStateEntry.from_snapshot(entry)

    def expire(self, producer_id: int, now_ms: int, expiration_ms: int) -> ProducerStateEntry | None:
        """removeExpiredProducers for one producer id: removed (and returned) when it has no
        ongoing transaction and ``now - lastTimestamp >= producer.id.expiration.ms``
        (``isProducerExpired``)."""
        entry = self.entries.get(producer_id)
        if (
            entry is None
            or now_ms - entry.last_timestamp < expiration_ms
            or entry.current_txn_first_offset >= 0
            or entry.last_timestamp < 0
            or now_ms < 0
        ):
            return None
        return self.entries.pop(producer_id)

    def append_data(self, batch: Any, origin: AppendOrigin | None = None) -> Rejection | None:
        """A data batch (``appendDataBatch``, after the duplicate check for ``CLIENT``).

        ``batch`` has the fields of a BatchSummary. ``origin`` overrides this map's origin for
        one batch (the replay records a batch the log holds after a client check failed)."""
        origin = origin or self.origin
        pid = batch.producer_id
        entry = self.entries.get(pid)
        epoch = batch.producer_epoch
        if entry is None:
            entry = self.entries[pid] = ProducerStateEntry(pid)
        elif origin is not _REPLICATION:
            metadata = entry.batch_metadata
            # A batch of the same epoch that goes on at the next sequence passes every check (a
            # retained range never starts after the last sequence): the common case, tested first.
            if not (
                metadata
                and epoch == entry.producer_epoch
                and (batch.base_sequence == metadata[-1].last_seq + 1 or in_sequence(metadata[-1].last_seq, batch.base_sequence))
            ):
                rejection = self._validate_data(batch, entry, origin)
                if rejection is not None:
                    return rejection
        last_offset = batch.last_offset
        entry.add_batch(epoch, batch.last_sequence, last_offset, last_offset - batch.base_offset, batch.max_timestamp)
        if batch.is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = batch.base_offset  # began a new transaction (TxnMetadata)
        return None

    def _validate_data(self, batch: Any, current: ProducerStateEntry, origin: AppendOrigin) -> Rejection | None:
        """The duplicate check (CLIENT), checkProducerEpoch, then checkSequence (CLIENT)."""
        if origin is AppendOrigin.CLIENT:
            duplicate = current.find_duplicate_batch(batch.producer_epoch, batch.base_sequence, batch.last_sequence)
            if duplicate is not None:
                return self._duplicate(batch, duplicate)
        rejection = self._check_epoch(batch, current)
        if rejection is None and origin is AppendOrigin.CLIENT:
            rejection = self._check_sequence(batch, current)
        return rejection

    def append_marker(self, batch: Any, origin: AppendOrigin | None = None) -> Rejection | None:
        """An end marker (``appendEndTxnMarker``): epoch and coordinator epoch checks, then the
        transaction ends. Whether it completed a transaction is read from the entry before."""
        origin = origin or self.origin
        pid = batch.producer_id
        current = self.entries.get(pid)
        if origin is not _REPLICATION and current is not None:
            rejection = self._check_epoch(batch, current)
            if rejection is None and batch.coordinator_epoch < current.coordinator_epoch:
                rejection = Rejection(
                    "coordinator_epoch_regression",
                    f"Invalid coordinator epoch for producerId {pid} at offset {batch.base_offset} in partition "
                    f"{self.tp}: {batch.coordinator_epoch} (zombie), {current.coordinator_epoch} (current)",
                    {"coordinator_epoch": batch.coordinator_epoch, "current_coordinator_epoch": current.coordinator_epoch},
                )
            if rejection is not None:
                return rejection
        entry = current if current is not None else self.entries.setdefault(pid, ProducerStateEntry(pid))
        entry.end_transaction(batch.producer_epoch, batch.coordinator_epoch, batch.max_timestamp)
        return None

    def _duplicate(self, batch: Any, original: BatchMetadata) -> Rejection:
        # UnifiedLog.analyzeAndValidateProducerState: the broker answers NONE with the original
        # batch's offsets and appends nothing, so a copy in the log is data no broker writes.
        return Rejection(
            "duplicate_sequence",
            f"Duplicate sequence number for producer {batch.producer_id} at offset {batch.base_offset} in "
            f"partition {self.tp}: sequences {batch.base_sequence} to {batch.last_sequence} of epoch "
            f"{batch.producer_epoch} were already written at offset {original.first_offset}",
            {
                "original_offset": original.first_offset,
                "first_sequence": batch.base_sequence,
                "last_sequence": batch.last_sequence,
            },
        )

    def _check_epoch(self, batch: Any, current: ProducerStateEntry) -> Rejection | None:
        """checkProducerEpoch (InvalidProducerEpochException)."""
        if batch.producer_epoch >= current.producer_epoch:
            return None
        return Rejection(
            "fenced_epoch_write",
            f"Epoch of producer {batch.producer_id} at offset {batch.base_offset} in {self.tp} is "
            f"{batch.producer_epoch}, which is smaller than the last seen epoch {current.producer_epoch}",
            {"last_seen_epoch": current.producer_epoch},
        )

    def _check_sequence(self, batch: Any, current: ProducerStateEntry) -> Rejection | None:
        """checkSequence against the entry before this batch (an empty updatedEntry)."""
        epoch, seq, pid = batch.producer_epoch, batch.base_sequence, batch.producer_id
        if epoch != current.producer_epoch:
            if seq != 0 and current.producer_epoch != NO_PRODUCER_EPOCH:
                return Rejection(
                    "new_epoch_nonzero_sequence",
                    f"Invalid sequence number for new epoch of producer {pid} at offset {batch.base_offset} in "
                    f"partition {self.tp}: {epoch} (request epoch), {seq} (seq. number), "
                    f"{current.producer_epoch} (current producer epoch)",
                    {"previous_epoch": current.producer_epoch},
                )
            return None
        last = current.last_seq
        if current.producer_epoch == NO_PRODUCER_EPOCH or in_sequence(last, seq):
            return None
        return Rejection(
            "out_of_order_sequence",
            f"Out of order sequence number for producer {pid} at offset {batch.base_offset} in partition "
            f"{self.tp}: {seq} (incoming seq. number), {last} (current end sequence number)",
            {"expected_sequence": next_sequence(last)},
        )
