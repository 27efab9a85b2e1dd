"""The compact per-batch summary that the producer-state replay consumes.

The segment audit emits one summary per batch; Spark shuffles them by (topic, partition) and
sorts them by offset, and the replay walks them in that order. A NamedTuple pickles small. A run
of batches the compiled walk took comes as :class:`SummaryColumns`, the same summaries as columns.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from kafka_audit.record.batch_walk import COLUMNS, BatchColumns
from kafka_audit.record.control_record import ControlRecord
from kafka_audit.record.record_batch import COMPRESSION_CODEC_MASK, ControlRecordType, RecordBatch, codec_label

NO_CONTROL_TYPE = -1


class BatchSummary(NamedTuple):
    topic: str
    partition: int
    segment: str
    segment_base_offset: int
    position: int
    base_offset: int
    last_offset: int
    magic: int
    # False when the batch is corrupt (bad CRC, undecodable): its producer fields are not trusted.
    valid: bool
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_sequence: int
    is_transactional: bool
    is_control: bool
    # ControlRecordType id of a control batch's record (NO_CONTROL_TYPE otherwise / when malformed).
    control_type: int
    coordinator_epoch: int
    max_timestamp: int
    record_count: int
    size: int
    # For the ``batches`` Parquet dataset (SPEC section 3); the replay does not read them.
    compression: str = "none"
    crc_valid: bool = True
    # For the replica comparison (rules/replication): the batch's partition leader epoch (which its
    # CRC does not cover) and its stored CRC. -1: none (v0/v1).
    partition_leader_epoch: int = -1
    crc: int = -1

    @property
    def is_transaction_marker(self) -> bool:
        return self.is_control and self.control_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT)

    @classmethod
    def of(
        cls,
        topic: str,
        partition: int,
        segment: str,
        segment_base_offset: int,
        batch: RecordBatch,
        valid: bool,
        control: ControlRecord | None,
    ) -> BatchSummary:
        if control is not None and control.error is None:
            control_type = NO_CONTROL_TYPE if control.type is None else control.type
            coordinator_epoch = -1 if control.coordinator_epoch is None else control.coordinator_epoch
        else:
            control_type, coordinator_epoch = NO_CONTROL_TYPE, -1
        # tuple.__new__ with the fields in order: the NamedTuple's own __new__ is a Python call
        # per batch (tests/test_quick_path.py checks the order against the keywords).
        return _new(
            cls,
            (
                topic,
                partition,
                segment,
                segment_base_offset,
                batch.position,
                batch.base_offset,
                batch.last_offset,
                batch.magic,
                valid,
                batch.producer_id,
                batch.producer_epoch,
                batch.base_sequence,
                batch.last_sequence,
                batch.is_transactional,
                batch.is_control,
                control_type,
                coordinator_epoch,
                batch.max_timestamp,
                batch.record_count or 0,
                batch.size,
                batch.compression,
                batch.crc_valid,
                batch.partition_leader_epoch,
                batch.stored_crc,
            ),
        )


_new = tuple.__new__


# The codec ids a ``compression`` column holds, by their BatchSummary label (and back).
_CODEC_IDS = {codec_label(codec): codec for codec in range(COMPRESSION_CODEC_MASK + 1)}
_CODEC_LABELS = tuple(codec_label(codec) for codec in range(COMPRESSION_CODEC_MASK + 1))


@dataclass(frozen=True, slots=True)
class SummaryColumns:
    """The summaries of a run of one task's batches, as columns (:class:`BatchColumns`: the
    compiled walk's, or built here from summaries where it is not built): iterating gives the
    :class:`BatchSummary` tuples, equal to those the Python walk gives for the same batches."""

    topic: str
    partition: int
    segment: str
    segment_base_offset: int
    batches: BatchColumns

    def __len__(self) -> int:
        return self.batches.count

    def __iter__(self) -> Iterator[BatchSummary]:
        head = (self.topic, self.partition, self.segment, self.segment_base_offset)
        for row in zip(*self.batches.columns()):
            yield _of_row(head, row)

    def summary(self, row: tuple[int, ...]) -> BatchSummary:
        """The summary of one of the run's batches from its row (a tuple of :data:`COLUMNS`'
        values, as ``zip(*self.batches.columns())`` gives them)."""
        return _of_row((self.topic, self.partition, self.segment, self.segment_base_offset), row)

    @classmethod
    def of_summaries(cls, summaries: Sequence[BatchSummary]) -> SummaryColumns:
        """The columns of one task's summaries, in Python (the same bytes the compiled walk
        writes for the batches it takes); ``summaries`` is not empty."""
        first = summaries[0]
        arrays = []
        for name, code in COLUMNS:
            if name == "compression":
                values = array(code, [_CODEC_IDS[s.compression] for s in summaries])
            else:
                values = array(code, [int(getattr(s, name)) for s in summaries])
            arrays.append(values.tobytes())
        end = summaries[-1].position + summaries[-1].size
        columns = BatchColumns(b"".join(arrays), len(summaries), end)
        return cls(first.topic, first.partition, first.segment, first.segment_base_offset, columns)


@dataclass(frozen=True, slots=True)
class RunSlice:
    """Batches ``[start, stop)`` of a run, kept as columns (the partition step's fast path took
    them; its segment's index verification reads them so)."""

    run: SummaryColumns
    start: int
    stop: int

    def summaries(self) -> list[BatchSummary]:
        """The batches as summaries (one object each: where a finding needs them)."""
        return [self.run.summary(row) for row in zip(*(c[self.start : self.stop] for c in self.run.batches.columns()))]


def _of_row(head: tuple[str, int, str, int], row: tuple[int, ...]) -> BatchSummary:
    """A summary from the task's fields and one row of :data:`COLUMNS` (in their order)."""
    (
        position, base_offset, last_offset, producer_id, max_timestamp, crc, size, base_sequence, last_sequence,
        record_count, coordinator_epoch, partition_leader_epoch, producer_epoch, control_type, magic, valid,
        is_transactional, is_control, crc_valid, compression,
    ) = row
    return _new(BatchSummary, (
        *head, position, base_offset, last_offset, magic, valid == 1, producer_id, producer_epoch,
        base_sequence, last_sequence, is_transactional == 1, is_control == 1, control_type,
        coordinator_epoch, max_timestamp, record_count, size, _CODEC_LABELS[compression], crc_valid == 1,
        partition_leader_epoch, crc,
    ))


def flatten(items: Iterable[BatchSummary | SummaryColumns]) -> Iterator[BatchSummary]:
    """The summaries of ``items`` (summaries, and runs of them as columns), one by one, in order."""
    for item in items:
        if isinstance(item, SummaryColumns):
            yield from item
        else:
            yield item
