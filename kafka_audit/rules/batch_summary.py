"""The compact per-batch summary that the producer-state replay consumes.

The segment audit emits one summary per batch; Spark shuffles them by (topic, partition) and
sorts them by offset, and the replay walks them in that order. A NamedTuple pickles small.
"""

from __future__ import annotations

from typing import NamedTuple

from kafka_audit.record.control_record import ControlRecord
from kafka_audit.record.record_batch import ControlRecordType, RecordBatch

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
