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
from kafka_audit.formats.default_record import RecordScreen
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


def validate_batch_header(
    batch: RecordBatch, topic_partition: str, config: ValidationConfig, *, compacted: bool = False
) -> list[Violation]:
    """Batch-level rules: size, offset range against record count, producer fields.

    ``compacted``: the topic is compacted, so the log cleaner may have rewritten the batch
    (``MemoryRecords.filterTo``): it keeps the batch's base and last offset
    (``overrideLastOffset``, so the producer's last sequence survives) with fewer records, or only
    the header with no record at all (``BatchRetention.RETAIN_EMPTY``,
    ``DefaultRecordBatch.writeEmptyHeader``). LogValidator's count checks are for client appends
    only (``AppendOrigin.CLIENT``): there a count below the offset range, even 0, is valid.
    """
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
    elif count < 0 or (count == 0 and not compacted):
        found.append(
            Violation(
                "non_monotonic_offsets",
                f"Invalid reported count for record batch: {count} in topic partition {topic_partition}",
                details={"record_count": count},
            )
        )
    elif count > count_from_offsets or (count < count_from_offsets and not compacted):
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


def validate_control_batch(
    batch: RecordBatch, records: list[Record], *, compacted: bool = False
) -> tuple[list[Violation], ControlRecord | None]:
    """A control batch holds exactly one well-formed control record (ControlRecordType,
    EndTransactionMarker). Returns the violations and the parsed record when there is one.

    In a compacted topic the cleaner may leave a control batch with no record (its transaction
    was cleaned away; ProducerAppendInfo.append: "An empty control batch means the entire
    transaction has been cleaned from the log"), which is valid there.
    """
    if compacted and not records and batch.record_count == 0:
        return [], None
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
    at the wrapper's offset. In a compacted topic the cleaner keeps each retained record's own
    offset (MemoryRecords.buildRetainedRecordsInto appends them with their offsets), so there the
    stored offsets need only rise strictly, within the batch's offset range.

    The segment audit skips this function for v2 data batches whose records pass
    :func:`record_screen`'s screen: a new or stricter per-record rule must be added there too.
    """
    found: list[Violation] = []
    compressed_legacy = batch.magic <= MAGIC_VALUE_V1 and batch.codec != 0
    cleaned = config.is_compacted(topic)
    previous_stored: int | None = None
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
        if cleaned:
            violation = _cleaned_offset_violation(batch, record, previous_stored, len(records), topic_partition)
            previous_stored = record.stored_offset
            if violation is not None:
                found.append(violation)
            expected = None
        else:
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


def record_screen(
    batch: RecordBatch, topic: str, config: ValidationConfig, reference_time: int | None
) -> RecordScreen | None:
    """The screen a v2 data batch's records can be held to instead of :func:`validate_records`.

    For such a batch :func:`validate_records` flags a record only when its offset delta is not
    its index, when it has no key in a compacted topic, or when (CREATE_TIME, a timestamp bound
    set) its timestamp lies outside ``[reference_time - before, reference_time + after]``; the
    screen holds every record to exactly those conditions (it also rejects NO_TIMESTAMP records,
    which the rule exempts: they are then validated record by record, which is merely slower).
    So a batch whose records all pass the screen gets no record-level violation, and the
    records need not be built. None for v0/v1 and control batches: they are always decoded.
    """
    if batch.magic != MAGIC_VALUE_V2 or batch.is_control:
        return None
    low = high = None
    if (
        reference_time is not None
        and batch.timestamp_type == TimestampType.CREATE_TIME
        and (config.timestamp_before_max_ms is not None or config.timestamp_after_max_ms is not None)
    ):
        if config.timestamp_before_max_ms is not None:
            low = reference_time - config.timestamp_before_max_ms
        if config.timestamp_after_max_ms is not None:
            high = reference_time + config.timestamp_after_max_ms
    return RecordScreen(config.is_compacted(topic), low, high)


def _cleaned_offset_violation(
    batch: RecordBatch, record: Record, previous: int | None, count: int, topic_partition: str
) -> Violation | None:
    """The offset rule in a compacted topic: stored offsets rise strictly; a v2 offset delta lies
    in [0, lastOffsetDelta]; v1 inner relative offsets are not negative; v0 inner absolute offsets
    end at the wrapper's offset (the wrapper carries the last inner offset)."""
    if batch.magic == MAGIC_VALUE_V2:
        low, high = 0, batch.last_offset_delta
    elif batch.codec == 0:
        return None
    elif batch.magic == MAGIC_VALUE_V1:
        low, high = 0, None
    else:
        low, high = None, batch.last_offset
    stored = record.stored_offset
    last_of_v0 = batch.magic == MAGIC_VALUE_V0 and record.index == count - 1 and stored != batch.last_offset
    # A v2 delta equal to the record's index is left to the header's count check (count above the
    # offset range), so a record the fast path's RecordScreen passes never gets a violation here.
    if (
        (previous is None or stored > previous)
        and (low is None or stored >= low)
        and (high is None or stored <= high or (batch.magic == MAGIC_VALUE_V2 and stored == record.index))
        and not last_of_v0
    ):
        return None
    return Violation(
        "non_monotonic_offsets",
        f"Record {record.index} of the batch at offset {batch.base_offset} has stored offset {stored}, "
        f"which does not rise from the previous record's {previous} within the batch's offset range "
        f"in topic partition {topic_partition}",
        record.index,
        record.offset,
        {"stored_offset": stored, "previous_stored_offset": previous},
    )


def _expected_stored_offset(batch: RecordBatch, index: int) -> int | None:
    if batch.magic == MAGIC_VALUE_V2:
        return index
    if batch.codec == 0:
        return None
    if batch.magic == MAGIC_VALUE_V1:
        return index
    # v0 inner offsets are absolute: consecutive from the first, ending at the wrapper's offset.
    return batch.last_offset - (batch.record_count or 0) + 1 + index
