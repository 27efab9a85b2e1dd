"""Control batches (``ControlRecordType``, ``EndTransactionMarker``, the KRaft control records):
which shapes a broker writes, as ``LogValidator`` and the Raft client accept them (SPEC
``invalid_control_batch``). Only ABORT/COMMIT markers take part in the transaction replay."""

from __future__ import annotations

from collections.abc import Sequence

from kafka_audit.check_ids import CheckId
from kafka_audit.record.control_record import ControlRecord, parse_control_record
from kafka_audit.record.record_batch import NO_PRODUCER_ID, Record, RecordBatch
from kafka_audit.rules.validation.log_validator import Violation


def validate_control_batch(
    batch: RecordBatch, records: Sequence[Record], *, compacted: bool = False
) -> tuple[list[Violation], ControlRecord | None]:
    """A transaction marker batch holds exactly one well-formed control record (ControlRecordType,
    EndTransactionMarker); a KRaft control batch may hold several well-formed KRaft control records,
    as a Kafka 4 controller writes them (``KafkaRaftClient`` / ``RecordsSnapshotWriter``:
    LeaderChange, KRaftVersion and KRaftVoters in one batch; SnapshotHeader, KRaftVersion and
    KRaftVoters at a snapshot's head). Returns the violations and the first parsed record.

    In a compacted topic the cleaner may leave a control batch with no record (its transaction
    was cleaned away; ProducerAppendInfo.append: "An empty control batch means the entire
    transaction has been cleaned from the log"), which is valid there.
    """
    if compacted and not records and batch.record_count == 0:
        return [], None
    if len(records) > 1:
        return _kraft_control_batch(batch, records)
    if len(records) != 1:
        return [
            Violation(
                CheckId.INVALID_CONTROL_BATCH,
                f"Control batch holds {len(records)} records; a control batch has exactly one control record",
                details={"record_count": len(records)},
            )
        ], None
    control = parse_control_record(records[0])
    violation = control_record_violation(batch, control, records[0].offset)
    return ([] if violation is None else [violation]), control


def _kraft_control_batch(batch: RecordBatch, records: Sequence[Record]) -> tuple[list[Violation], ControlRecord | None]:
    """Several control records in one batch: each must be a well-formed KRaft control record; a
    transaction marker among them breaks the one-record rule of markers."""
    controls = [parse_control_record(record) for record in records]
    for index, (record, control) in enumerate(zip(records, controls)):
        if control.error:
            return [Violation(CheckId.INVALID_CONTROL_BATCH, control.error, record_index=index, offset=record.offset)], None
    if any(control.is_transaction_marker for control in controls):
        return [
            Violation(
                CheckId.INVALID_CONTROL_BATCH,
                f"Control batch holds {len(records)} records; a transaction marker batch has exactly one control record",
                details={"record_count": len(records)},
            )
        ], None
    return [], controls[0]


def control_record_violation(batch: RecordBatch, control: ControlRecord, offset: int | None) -> Violation | None:
    """The rule a control batch's one record (at ``offset``) breaks: it is no well-formed control
    record, or it is a transaction marker without the transaction's producer id."""
    if control.error:
        return Violation(CheckId.INVALID_CONTROL_BATCH, control.error, record_index=0, offset=offset)
    if control.is_transaction_marker and batch.producer_id == NO_PRODUCER_ID:
        return Violation(
            CheckId.INVALID_CONTROL_BATCH,
            "Transaction marker written without the transaction's producer id",
            record_index=0,
            offset=offset,
        )
    return None
