"""The broker's record validation, re-run offline on one decoded batch.

Follows ``org.apache.kafka.storage.internals.log.LogValidator`` (validateBatch, validateRecord,
validateKey, validateTimestamp, validateRecordCompression) and the batch checks of
``UnifiedLog.analyzeAndValidateRecords`` (size against ``max.message.bytes``), adapted to data
already on disk: what a broker rewrote on append (v1 inner offsets, LOG_APPEND_TIME) must now
read as the broker left it, and control batches, which only clients may not write, are valid
when well-formed. Every bad record is reported, not only the first (KIP-467's per-record list).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_audit.formats.control_record import ControlRecord, parse_control_record
from kafka_audit.formats.record_batch import (
    COMPRESSION_CODEC_MASK,
    MAGIC_VALUE_V0,
    MAGIC_VALUE_V1,
    MAGIC_VALUE_V2,
    NO_PRODUCER_ID,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    Record,
    RecordBatch,
    TimestampType,
)

# Kafka's default max.message.bytes (TopicConfig): 1 MiB plus the 12-byte log overhead.
DEFAULT_MAX_MESSAGE_BYTES = 1048588
# Topics a broker always creates with cleanup.policy=compact.
ALWAYS_COMPACTED_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


@dataclass(frozen=True, slots=True)
class ValidationConfig:
    """The broker and topic settings that change the rules (SPEC section 1 options).

    ``reference_time`` is the broker's "now" for timestamp checks; the timestamp bounds are
    ``None`` when off (the broker default, Long.MAX_VALUE).
    """

    compacted_topics: frozenset[str] = ALWAYS_COMPACTED_TOPICS
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    timestamp_before_max_ms: int | None = None
    timestamp_after_max_ms: int | None = None

    def is_compacted(self, topic: str) -> bool:
        return topic in self.compacted_topics or topic in ALWAYS_COMPACTED_TOPICS


@dataclass(slots=True)
class Violation:
    """One rule broken: a check id, Kafka's sentence, and the record index if record-level."""

    check: str
    message: str
    record_index: int | None = None
    offset: int | None = None
    details: dict = field(default_factory=dict)


def validate_batch_header(batch: RecordBatch, topic_partition: str, config: ValidationConfig) -> list[Violation]:
    """Batch-level rules: size, offset range against record count, producer fields."""
    found: list[Violation] = []
    if batch.size > config.max_message_bytes:
        # UnifiedLog.analyzeAndValidateRecords; the poison pill of KAFKA-15259.
        found.append(
            Violation(
                "record_too_large",
                f"The record batch size in the append to {topic_partition} is {batch.size} bytes which "
                f"exceeds the maximum configured value of {config.max_message_bytes}.",
                details={"size": batch.size, "max_message_bytes": config.max_message_bytes},
            )
        )
    if batch.magic != MAGIC_VALUE_V2:
        return found
    count = batch.record_count or 0
    count_from_offsets = batch.last_offset - batch.base_offset + 1
    if count_from_offsets <= 0:
        found.append(
            Violation(
                "non_monotonic_offsets",
                f"Batch has an invalid offset range: [{batch.base_offset}, {batch.last_offset}] "
                f"in topic partition {topic_partition}",
                details={"record_count": count, "last_offset_delta": batch.last_offset_delta},
            )
        )
    elif count <= 0:
        found.append(
            Violation(
                "non_monotonic_offsets",
                f"Invalid reported count for record batch: {count} in topic partition {topic_partition}",
                details={"record_count": count},
            )
        )
    elif count_from_offsets != count:
        found.append(
            Violation(
                "non_monotonic_offsets",
                f"Inconsistent batch offset range [{batch.base_offset}, {batch.last_offset}] and count of "
                f"records {count} in topic partition {topic_partition}",
                details={"record_count": count, "last_offset_delta": batch.last_offset_delta},
            )
        )
    found.extend(_producer_field_violations(batch, topic_partition))
    return found


def _producer_field_violations(batch: RecordBatch, topic_partition: str) -> list[Violation]:
    """LogValidator.validateBatch's sequence rule, plus the field combinations a producer
    (MemoryRecordsBuilder) and a coordinator (EndTransactionMarker) can never write."""
    pid, epoch, sequence = batch.producer_id, batch.producer_epoch, batch.base_sequence
    details = {"producer_id": pid, "producer_epoch": epoch, "base_sequence": sequence}
    if pid == NO_PRODUCER_ID:
        # Brokers' own writers (e.g. the group coordinator) leave epoch/sequence at -1/0 here: not checked.
        if batch.is_transactional:
            return [Violation("invalid_producer_fields", "Transactional batch without a producer id", details=details)]
        return []
    if pid < 0:
        return [Violation("invalid_producer_fields", f"Invalid producer id {pid}", details=details)]
    if epoch < 0:
        return [
            Violation("invalid_producer_fields", f"Invalid producer epoch {epoch} for producerId {pid}", details=details)
        ]
    # Transaction markers carry the producer id and epoch but no sequence (RecordBatch.NO_SEQUENCE).
    if not batch.is_control and sequence < 0:
        return [
            Violation(
                "invalid_producer_fields",
                f"Invalid sequence number {sequence} in record batch with producerId {pid} in topic "
                f"partition {topic_partition}",
                details=details,
            )
        ]
    return []


def validate_control_batch(batch: RecordBatch, records: list[Record]) -> tuple[list[Violation], ControlRecord | None]:
    """A control batch holds exactly one well-formed control record (ControlRecordType,
    EndTransactionMarker). Returns the violations and the parsed record when there is one."""
    if len(records) != 1:
        return [
            Violation(
                "invalid_control_batch",
                f"Control batch holds {len(records)} records; a control batch has exactly one control record",
                details={"record_count": len(records)},
            )
        ], None
    control = parse_control_record(records[0])
    if control.error:
        return [Violation("invalid_control_batch", control.error, record_index=0, offset=records[0].offset)], control
    if control.is_transaction_marker and batch.producer_id == NO_PRODUCER_ID:
        return [
            Violation(
                "invalid_control_batch",
                "Transaction marker written without the transaction's producer id",
                record_index=0,
                offset=records[0].offset,
            )
        ], control
    return [], control


def validate_records(
    batch: RecordBatch,
    records: list[Record],
    topic: str,
    topic_partition: str,
    config: ValidationConfig,
    reference_time: int | None,
) -> list[Violation]:
    """LogValidator.validateRecord for every record, and the offset rules of the format.

    v2: offset deltas read 0, 1, 2, ... . v1 wrapper: inner relative offsets read 0..n-1 (the
    broker rewrites them on append). v0 wrapper: inner absolute offsets are consecutive and end
    at the wrapper's offset.
    """
    found: list[Violation] = []
    compressed_legacy = batch.magic <= MAGIC_VALUE_V1 and batch.codec != 0
    compacted = config.is_compacted(topic) and not batch.is_control
    check_time = reference_time is not None and (
        config.timestamp_before_max_ms is not None or config.timestamp_after_max_ms is not None
    )
    create_time = batch.timestamp_type == TimestampType.CREATE_TIME
    before = config.timestamp_before_max_ms
    after = config.timestamp_after_max_ms

    for record in records:
        index = record.index
        if compressed_legacy:
            if record.magic != batch.magic:
                found.append(
                    Violation(
                        "inner_magic_mismatch",
                        f"Record at offset {record.offset}'s magic {record.magic} does not match outer magic "
                        f"{batch.magic} in topic partition {topic_partition}",
                        index,
                        record.offset,
                        {"inner_magic": record.magic, "outer_magic": batch.magic},
                    )
                )
                continue
            if record.attributes & COMPRESSION_CODEC_MASK:
                found.append(
                    Violation(
                        "decompression_failed",
                        "Compressed outer record should not have an inner record with a compression "
                        "attribute set",
                        index,
                        record.offset,
                    )
                )
                continue
        expected = _expected_stored_offset(batch, index)
        if expected is not None and record.stored_offset != expected:
            found.append(
                Violation(
                    "non_monotonic_offsets",
                    f"Record {index} of the batch at offset {batch.base_offset} has stored offset "
                    f"{record.stored_offset}, expected {expected} in topic partition {topic_partition}",
                    index,
                    record.offset,
                    {"stored_offset": record.stored_offset, "expected": expected},
                )
            )
        if compacted and record.key_size < 0:
            found.append(
                Violation(
                    "missing_key_compacted",
                    f"Compacted topic cannot accept message without key in topic partition {topic_partition}",
                    index,
                    record.offset,
                )
            )
        if record.magic == MAGIC_VALUE_V0 and record.attributes & TIMESTAMP_TYPE_MASK:
            found.append(
                Violation(
                    "invalid_timestamp_type",
                    "Timestamp type bit set in a magic v0 message, which has no timestamp",
                    index,
                    record.offset,
                )
            )
        elif compressed_legacy and create_time and record.attributes & TIMESTAMP_TYPE_MASK:
            found.append(
                Violation(
                    "invalid_timestamp_type",
                    "Inner message has timestamp type LogAppendTime under a CreateTime wrapper",
                    index,
                    record.offset,
                )
            )
        elif check_time and create_time and record.timestamp != NO_TIMESTAMP:
            diff = reference_time - record.timestamp
            if (before is not None and diff > before) or (after is not None and -diff > after):
                low = "-inf" if before is None else reference_time - before
                high = "+inf" if after is None else reference_time + after
                found.append(
                    Violation(
                        "timestamp_out_of_range",
                        f"Timestamp {record.timestamp} of message with offset {record.offset} is out of range. "
                        f"The timestamp should be within [{low}, {high}]",
                        index,
                        record.offset,
                        {"timestamp": record.timestamp, "reference_time": reference_time},
                    )
                )
    return found


def _expected_stored_offset(batch: RecordBatch, index: int) -> int | None:
    if batch.magic == MAGIC_VALUE_V2:
        return index
    if batch.codec == 0:
        return None
    if batch.magic == MAGIC_VALUE_V1:
        return index
    # v0 inner offsets are absolute: consecutive from the first, ending at the wrapper's offset.
    return batch.last_offset - (batch.record_count or 0) + 1 + index
