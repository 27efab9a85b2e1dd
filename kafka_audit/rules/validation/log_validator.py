"""The broker's record validation, re-run offline on one decoded batch: the settings that shape it
(:class:`ValidationConfig`), a broken rule (:class:`Violation`), the per-record rules
(:func:`validate_records`) and the screens of the quick path derived from them
(:func:`record_screen`); the batch-level stages are in :mod:`.batch_validation`.

Follows ``org.apache.kafka.storage.internals.log.LogValidator`` (validateBatch, validateRecord,
validateKey, validateTimestamp, validateRecordCompression, processRecordErrors) and the batch
checks of ``UnifiedLog.analyzeAndValidateRecords`` / ``UnifiedLog.append`` (size against
``max.message.bytes`` and ``segment.bytes``), adapted to data already on disk: what a broker
rewrote on append (v1 inner offsets, LOG_APPEND_TIME) must now read as the broker left it, and
control batches, which clients may not write, are valid when the broker wrote them.

As the broker does, a batch is answered by the first stage that rejects it: its size
(MESSAGE_TOO_LARGE), its header (``validateBatch``: INVALID_RECORD), its records (each record
at most once, the first rule it breaks; the batch's code is ``processRecordErrors``'s), then its
size against ``segment.bytes`` (RECORD_LIST_TOO_LARGE). The segment audit runs the stages in
that order (``audit/segment_audit.py``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_audit.check_ids import CheckId
from kafka_audit.log.log_names import ALWAYS_COMPACTED_TOPICS
from kafka_audit.record.record_batch import (
    COMPRESSION_CODEC_MASK,
    MAGIC_VALUE_V0,
    MAGIC_VALUE_V1,
    MAGIC_VALUE_V2,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    CompressionType,
    Record,
    RecordBatch,
    TimestampType,
)
from kafka_audit.record.record_screen import RecordScreen
from kafka_audit.rules.catalogue import CHECKS, UNCOMPRESSED_OFFSET_DELTAS, Check

# Kafka's default max.message.bytes (TopicConfig): 1 MiB plus the 12-byte log overhead.
DEFAULT_MAX_MESSAGE_BYTES = 1048588
# Kafka's default segment.bytes (LogConfig): 1 GiB.
DEFAULT_SEGMENT_BYTES = 1073741824
_INVALID_TIMESTAMP = "INVALID_TIMESTAMP"
_LONG_MAX = (1 << 63) - 1


def _java_long(value: int) -> int:
    """``value`` as a Java long computes it (two's complement, 64 bits)."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


@dataclass(frozen=True, slots=True)
class ValidationConfig:
    """The broker and topic settings that change the rules (SPEC section 1 options).

    ``reference_time`` is the broker's "now" for timestamp checks; the timestamp bounds are
    ``None`` when off (the broker default, Long.MAX_VALUE).
    """

    # Topics named compacted (``--compacted-topic``, the cleaner's checkpoint); the topics a broker
    # always compacts are added by :meth:`is_compacted`, the one place that does.
    compacted_topics: frozenset[str] = frozenset()
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    timestamp_before_max_ms: int | None = None
    timestamp_after_max_ms: int | None = None
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    # Where the timestamp bounds come from when not from the options: the broker default of the
    # Kafka version that wrote the log (said in the details of timestamp_out_of_range).
    timestamp_rule: str | None = None

    def is_compacted(self, topic: str) -> bool:
        return topic in self.compacted_topics or topic in ALWAYS_COMPACTED_TOPICS


@dataclass(slots=True)
class Violation:
    """One rule broken: a check id, Kafka's sentence, and the record index if record-level.

    ``error`` names the Kafka error when it is not the check's own (the batch's answer per
    processRecordErrors, RECORD_LIST_TOO_LARGE); ``spec`` is a named catalogue variant.
    """

    check: str
    message: str
    record_index: int | None = None
    offset: int | None = None
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    spec: Check | None = None


def validate_records(
    batch: RecordBatch,
    records: Sequence[Record],
    topic: str,
    topic_partition: str,
    config: ValidationConfig,
    reference_time: int | None,
    omitted: Counter[str] | None = None,
    keep: int = 0,
) -> list[Violation]:
    """LogValidator's per-record rules: each record gets at most one violation, the first rule
    it breaks in Kafka's order (validateRecordCompression, then validateRecord: magic, key,
    timestamp), then the format's offset rule; the batch's error is processRecordErrors's.

    Offsets: v2 deltas read 0, 1, 2, ...; v1 wrapper: inner relative offsets read 0..n-1 (the
    broker rewrites them on append); v0 wrapper: inner absolute offsets are consecutive and end
    at the wrapper's offset. In an uncompressed v2 batch a delta out of line is a warning only:
    the broker assigns such a batch's offsets in place and never reads the deltas
    (LogValidator.assignOffsetsNonCompressed). In a compacted topic the cleaner keeps each
    retained record's own offset (MemoryRecords.buildRetainedRecordsInto), so there the stored
    offsets need only rise strictly, within the batch's offset range.

    The segment audit's quick path skips this function for v2 batches whose records pass
    :func:`record_screen`'s screen: a new or stricter per-record rule must narrow that screen too
    (the screen may only say that this function would find nothing).

    With ``omitted``, only the first ``keep`` violations of each check are listed and the others
    counted there: a batch of millions of records read as a stream keeps a bounded list.
    """
    found: list[Violation] = []
    compressed_legacy = batch.magic <= MAGIC_VALUE_V1 and batch.codec != CompressionType.NONE
    cleaned = config.is_compacted(topic)
    compacted = cleaned and not batch.is_control
    check_time = reference_time is not None and (
        config.timestamp_before_max_ms is not None or config.timestamp_after_max_ms is not None
    )
    create_time = batch.timestamp_type == TimestampType.CREATE_TIME
    offsets_spec = UNCOMPRESSED_OFFSET_DELTAS if batch.magic == MAGIC_VALUE_V2 and batch.codec == CompressionType.NONE else None
    previous_stored: int | None = None
    listed: Counter[str] = Counter()
    for record in records:
        violation = _record_rule_violation(
            batch, record, topic_partition, config, reference_time,
            compressed_legacy=compressed_legacy, compacted=compacted, check_time=check_time, create_time=create_time,
        )
        if cleaned:
            offset_violation = _cleaned_offset_violation(batch, record, previous_stored, len(records), topic_partition)
            previous_stored = record.stored_offset
        else:
            offset_violation = _offset_violation(batch, record, topic_partition)
        if violation is None and offset_violation is not None:
            offset_violation.spec = offsets_spec
            violation = offset_violation
        if violation is not None:
            if omitted is None or listed[violation.check] < keep:
                found.append(violation)
                listed[violation.check] += 1
            else:
                omitted[violation.check] += 1
    return _process_record_errors(found)


# LogValidator's record rules in Kafka's order, one return per rule, so that the first rule a
# record breaks is the one reported (validateRecord stops there too).
def _record_rule_violation(
    batch: RecordBatch,
    record: Record,
    topic_partition: str,
    config: ValidationConfig,
    reference_time: int | None,
    *,
    compressed_legacy: bool,
    compacted: bool,
    check_time: bool,
    create_time: bool,
) -> Violation | None:
    """The first of LogValidator's record rules that ``record`` breaks, in Kafka's order."""
    index = record.index
    if compressed_legacy:
        inner = _inner_message_violation(batch, record, topic_partition)
        if inner is not None:
            return inner
    if compacted and record.key_size < 0:  # LogValidator.validateKey
        return Violation(
            CheckId.MISSING_KEY_COMPACTED,
            f"Compacted topic cannot accept message without key in topic partition {topic_partition}",
            index,
            record.offset,
        )
    # LogValidator.validateTimestamp, and the timestamp-type bits the formats forbid.
    if record.magic == MAGIC_VALUE_V0 and record.attributes & TIMESTAMP_TYPE_MASK:
        return Violation(
            CheckId.INVALID_TIMESTAMP_TYPE,
            "Timestamp type bit set in a magic v0 message, which has no timestamp",
            index,
            record.offset,
        )
    if compressed_legacy and create_time and record.attributes & TIMESTAMP_TYPE_MASK:
        return Violation(
            CheckId.INVALID_TIMESTAMP_TYPE,
            "Inner message has timestamp type LogAppendTime under a CreateTime wrapper",
            index,
            record.offset,
        )
    if check_time and create_time and reference_time is not None and record.timestamp != NO_TIMESTAMP:
        before, after = config.timestamp_before_max_ms, config.timestamp_after_max_ms
        diff = reference_time - record.timestamp
        if (before is not None and diff > before) or (after is not None and -diff > after):
            return _timestamp_out_of_range(record, config, reference_time)
    return None


def _inner_message_violation(batch: RecordBatch, record: Record, topic_partition: str) -> Violation | None:
    """LogValidator.validateRecordCompression of an inner message of a compressed v0/v1 wrapper
    (AbstractLegacyRecordBatch: an inner message with a codec of its own is nested compression,
    which Kafka never reads), and the inner magic that must match the wrapper's."""
    if record.attributes & COMPRESSION_CODEC_MASK:
        return Violation(
            CheckId.NESTED_COMPRESSION,
            "Compressed outer record should not have an inner record with a compression attribute set",
            record.index,
            record.offset,
            {"inner_codec": record.attributes & COMPRESSION_CODEC_MASK},
        )
    if record.magic != batch.magic:
        return Violation(
            CheckId.INNER_MAGIC_MISMATCH,
            f"Record at offset {record.offset}'s magic {record.magic} does not match outer magic "
            f"{batch.magic} in topic partition {topic_partition}",
            record.index,
            record.offset,
            {"inner_magic": record.magic, "outer_magic": batch.magic},
        )
    return None


def _timestamp_out_of_range(record: Record, config: ValidationConfig, reference_time: int) -> Violation:
    """LogValidator.validateTimestamp's error: the record's timestamp is outside ``[now - before,
    now + after]``; Kafka prints the bounds as Java longs (an unset one, Long.MAX_VALUE, wraps)."""
    before, after = config.timestamp_before_max_ms, config.timestamp_after_max_ms
    low = _java_long(reference_time - (_LONG_MAX if before is None else before))
    high = _java_long(reference_time + (_LONG_MAX if after is None else after))
    return Violation(
        CheckId.TIMESTAMP_OUT_OF_RANGE,
        f"Timestamp {record.timestamp} of message with offset {record.offset} is out of range. "
        f"The timestamp should be within [{low}, {high}]",
        record.index,
        record.offset,
        {"timestamp": record.timestamp, "reference_time": reference_time}
        | ({"rule": config.timestamp_rule} if config.timestamp_rule else {}),
    )


def _process_record_errors(found: list[Violation]) -> list[Violation]:
    """LogValidator.processRecordErrors: the batch is answered INVALID_TIMESTAMP when any record
    error is one, else INVALID_RECORD; every culprit record carries the batch's answer."""
    if any((error := CHECKS[v.check].error) is not None and error.name == _INVALID_TIMESTAMP for v in found):
        for v in found:
            if v.spec is None:
                v.error = _INVALID_TIMESTAMP
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
    return RecordScreen(config.is_compacted(topic), *_timestamp_bounds(batch, config, reference_time))


def control_record_screen(batch: RecordBatch, config: ValidationConfig, reference_time: int | None) -> RecordScreen | None:
    """The screen a v2 control batch's records can be held to instead of :func:`validate_records`:
    as :func:`record_screen`'s, without the key rule (a control record is no compacted topic's
    record), its offset delta its index satisfying both offset rules. None for other batches."""
    if batch.magic != MAGIC_VALUE_V2 or not batch.is_control:
        return None
    return RecordScreen(False, *_timestamp_bounds(batch, config, reference_time))


def _timestamp_bounds(
    batch: RecordBatch, config: ValidationConfig, reference_time: int | None
) -> tuple[int | None, int | None]:
    """The timestamps validateTimestamp accepts for the batch's records: ``(low, high)``, None
    where unbounded (no reference time, LOG_APPEND_TIME, or no bound configured)."""
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
    return low, high


def _cleaned_offset_violation(
    batch: RecordBatch, record: Record, previous: int | None, count: int, topic_partition: str
) -> Violation | None:
    """The offset rule in a compacted topic: stored offsets rise strictly; a v2 offset delta lies
    in [0, lastOffsetDelta]; v1 inner relative offsets are not negative; v0 inner absolute offsets
    end at the wrapper's offset (the wrapper carries the last inner offset)."""
    if batch.magic == MAGIC_VALUE_V2:
        low, high = 0, batch.last_offset_delta
    elif batch.codec == CompressionType.NONE:
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
        CheckId.NON_MONOTONIC_OFFSETS,
        f"Record {record.index} of the batch at offset {batch.base_offset} has stored offset {stored}, "
        f"which does not rise from the previous record's {previous} within the batch's offset range "
        f"in topic partition {topic_partition}",
        record.index,
        record.offset,
        {"stored_offset": stored, "previous_stored_offset": previous},
    )


def _offset_violation(batch: RecordBatch, record: Record, topic_partition: str) -> Violation | None:
    """The stored offset a record of a non-compacted topic must have, against the one it has."""
    index = record.index
    if batch.magic == MAGIC_VALUE_V2 or (batch.codec != CompressionType.NONE and batch.magic == MAGIC_VALUE_V1):
        expected = index
    elif batch.codec == CompressionType.NONE:
        return None
    else:
        # v0 inner offsets are absolute: consecutive from the first, ending at the wrapper's offset.
        expected = batch.last_offset - (batch.record_count or 0) + 1 + index
    if record.stored_offset == expected:
        return None
    return Violation(
        CheckId.NON_MONOTONIC_OFFSETS,
        f"Record {index} of the batch at offset {batch.base_offset} has stored offset "
        f"{record.stored_offset}, expected {expected} in topic partition {topic_partition}",
        index,
        record.offset,
        {"stored_offset": record.stored_offset, "expected": expected},
    )
