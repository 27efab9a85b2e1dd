"""A producer's state as the broker held it at a rejection's time, replayed from the log
(``ProducerStateEntry`` / ``BatchMetadata``): one append (:class:`ProducerAppend`), what
retention removed by then (:class:`Retention`), and the state at that time (:class:`StateAtTime`).
Read by the rejection matcher (:mod:`.broker_rejection`) and its explanation (:mod:`.rejection_explanation`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from kafka_audit.io.broker_log_lines import BrokerLogLine
from kafka_audit.log.producer_snapshot import ProducerSnapshotEntry
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.findings import iso_time


@dataclass(frozen=True, slots=True)
class ProducerAppend:
    """One append as the broker's producer state keeps it: the batch's epoch, sequences, offsets
    and max timestamp (``BatchMetadata``), from the log or from a snapshot entry."""

    producer_id: int
    epoch: int
    base_sequence: int
    last_sequence: int
    base_offset: int
    last_offset: int
    timestamp: int
    transactional: bool
    marker: bool = False
    from_snapshot: bool = False

    @classmethod
    def of_batch(cls, batch: BatchSummary) -> ProducerAppend:
        return cls(
            batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.last_sequence, batch.base_offset,
            batch.last_offset, batch.max_timestamp, batch.is_transactional, batch.is_transaction_marker,
        )

    @classmethod
    def of_snapshot_entry(cls, entry: ProducerSnapshotEntry) -> ProducerAppend:
        """A snapshot entry with last offset -1 holds only an epoch (a producer known from a
        marker): it stands as a marker."""
        base_sequence = entry.last_sequence - entry.offset_delta if entry.last_sequence >= 0 else entry.last_sequence
        return cls(
            entry.producer_id, entry.producer_epoch, base_sequence, entry.last_sequence,
            entry.last_offset - entry.offset_delta, entry.last_offset, entry.timestamp,
            entry.current_txn_first_offset >= 0, marker=entry.last_offset < 0, from_snapshot=True,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "producer_epoch": self.epoch,
            "base_sequence": self.base_sequence,
            "last_sequence": self.last_sequence,
            "base_offset": self.base_offset,
            "last_offset": self.last_offset,
            "timestamp": self.timestamp,
            "time": iso_time(self.timestamp),
            "transactional": self.transactional,
            "source": "snapshot" if self.from_snapshot else "log",
        }


@dataclass(slots=True)
class Retention:
    """What retention had done to the partition by a time, from the broker's lines."""

    log_start_offset: int | None  # the last "Incremented log start offset" before the time
    log_start_time: int | None
    deleted_segments: list[BrokerLogLine]  # "Deleting segment" lines before the time
    log_start_now: int  # the scanned log's start offset

    def deleted(self, offset: int) -> tuple[bool | None, int | None, int | None]:
        """Whether ``offset`` was gone by then, when (the line's time), and the log start offset
        that removed it. (None, None, None): only the scanned log start says it is gone now."""
        if self.log_start_offset is not None and offset < self.log_start_offset:
            return True, self.log_start_time, self.log_start_offset
        covering = [line for line in self.deleted_segments if line.offset is not None and line.offset <= offset]
        if covering and offset < self.log_start_now:
            holder = max(covering, key=lambda line: cast(int, line.offset))
            return True, holder.time, None
        if offset < self.log_start_now:
            return None, None, None
        return False, None, None


@dataclass(slots=True)
class StateAtTime:
    """The replayed state of one producer (or of the partition) at a rejection's time."""

    time: int
    producer_id: int | None
    producer_id_source: str | None  # "log line", "only candidate" or None
    candidates: list[int]
    last_batch: ProducerAppend | None
    last_marker: ProducerAppend | None
    epoch_start: ProducerAppend | None  # first batch of the producer's current epoch
    partition_last: ProducerAppend | None
    retention: Retention
    expiration_ms: int

    @property
    def epoch(self) -> int | None:
        """The producer's epoch: a marker after its last batch may have raised it."""
        latest = max((a for a in (self.last_batch, self.last_marker) if a), key=log_position, default=None)
        return latest.epoch if latest else None

    @property
    def last_activity(self) -> int | None:
        return max((a.timestamp for a in (self.last_batch, self.last_marker) if a), default=None)

    @property
    def idle_ms(self) -> int | None:
        last = self.last_activity
        return None if last is None or last < 0 else self.time - last

    @property
    def open_transaction(self) -> bool:
        """A transactional batch after the producer's last marker (ProducerStateEntry.currentTxnFirstOffset)."""
        if self.last_batch is None or not self.last_batch.transactional:
            return False
        return self.last_marker is None or self.last_marker.last_offset < self.last_batch.last_offset

    @property
    def expired(self) -> bool:
        """ProducerStateManager.isProducerExpired: idle at least producer.id.expiration.ms and no
        open transaction."""
        idle = self.idle_ms
        return idle is not None and idle >= self.expiration_ms and not self.open_transaction

    def deleted(self) -> tuple[bool | None, int | None, int | None]:
        if self.last_batch is None:
            return False, None, None
        return self.retention.deleted(self.last_batch.last_offset)

    def to_dict(self) -> dict[str, Any]:
        deleted, deleted_time, removed_by = self.deleted()
        return {
            "producer_id": self.producer_id,
            "producer_id_source": self.producer_id_source,
            "candidates": self.candidates,
            "producer_epoch": self.epoch,
            "last_batch": self.last_batch.to_dict() if self.last_batch else None,
            "last_marker_offset": self.last_marker.last_offset if self.last_marker else None,
            "epoch_first_offset": self.epoch_start.base_offset if self.epoch_start else None,
            "idle_ms": self.idle_ms,
            "expired": self.expired,
            "producer_id_expiration_ms": self.expiration_ms,
            "open_transaction": self.open_transaction,
            "log_start_offset": self.retention.log_start_offset,
            "log_start_time": iso_time(self.retention.log_start_time),
            "log_start_offset_now": self.retention.log_start_now,
            "deleted_by_retention": deleted,
            "deleted_time": iso_time(deleted_time),
            "deleted_log_start_offset": removed_by,
            "partition_last_offset": self.partition_last.last_offset if self.partition_last else None,
        }


def log_position(append: ProducerAppend) -> int:
    return append.last_offset if not append.marker else append.base_offset


def is_newer(append: ProducerAppend, known: ProducerAppend | None) -> bool:
    """Later in the log; at the same place, the batch itself over a snapshot's copy of it."""
    if known is None:
        return True
    position, known_position = log_position(append), log_position(known)
    return position > known_position or (position == known_position and known.from_snapshot and not append.from_snapshot)
