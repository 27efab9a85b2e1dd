"""Kafka's ``ProducerStateEntry`` (storage module, ``org.apache.kafka.storage.internals.log``): what
a partition keeps per producer id, and the sequence arithmetic its checks use.

:class:`ProducerStateEntry` keeps the epoch, the metadata of the producer's last
``NUM_BATCHES_TO_RETAIN`` (5) data batches (``BatchMetadata``), the coordinator epoch, the last
timestamp and the first offset of the ongoing transaction. The checks of one batch against an
entry are :mod:`kafka_audit.rules.replay.producer_append_info` (``ProducerAppendInfo``); the map of entries is
:mod:`kafka_audit.rules.replay.producer_state_manager` (``ProducerStateManager``).
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
    batch_metadata: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
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

    def copy(self) -> ProducerStateEntry:
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
    def from_snapshot(cls, entry: ProducerSnapshotEntry) -> ProducerStateEntry:
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
