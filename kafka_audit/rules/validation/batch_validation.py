"""The broker's batch-level rules, re-run offline on one batch: its size against
``max.message.bytes`` (``UnifiedLog.analyzeAndValidateRecords``), its header
(``LogValidator.validateBatch``: offset range, count, origin, base sequence), and its size against
``segment.bytes`` (``UnifiedLog.append``). A control batch's records are judged in
:mod:`.control_batch`, the record-level rules in :mod:`.log_validator`.
"""

from __future__ import annotations

from kafka_audit.check_ids import CheckId
from kafka_audit.log.log_names import CLUSTER_METADATA
from kafka_audit.record.record_batch import (
    CONTROL_FLAG_MASK,
    MAGIC_VALUE_V2,
    TRANSACTIONAL_FLAG_MASK,
    RecordBatch,
)
from kafka_audit.rules.validation.log_validator import ValidationConfig, Violation


def validate_batch_header(
    batch: RecordBatch, topic_partition: str, config: ValidationConfig, *, compacted: bool = False, topic: str = ""
) -> list[Violation]:
    """The batch-level rules that come before the records: at most one violation, the first.

    ``UnifiedLog.analyzeAndValidateRecords`` checks the size against ``max.message.bytes``
    (before the CRC); ``LogValidator.validateBatch`` then checks, for a v2 batch from a client,
    the offset range, the record count, that it is no control batch, and the base sequence.

    ``compacted``: the topic is compacted, so the log cleaner may have rewritten the batch
    (``MemoryRecords.filterTo``): it keeps the batch's base and last offset
    (``overrideLastOffset``, so the producer's last sequence survives) with fewer records, or only
    the header with no record at all (``BatchRetention.RETAIN_EMPTY``,
    ``DefaultRecordBatch.writeEmptyHeader``). LogValidator's count checks are for client appends
    only (``AppendOrigin.CLIENT``): there a count below the offset range, even 0, is valid.
    """
    oversized = validate_batch_size(batch, topic_partition, config)
    if oversized is not None:
        return [oversized]
    if batch.magic != MAGIC_VALUE_V2:
        return []
    violation = _offset_range_violation(batch, topic_partition, compacted) or _origin_violation(
        batch, topic_partition, topic
    )
    return [violation] if violation is not None else []


def validate_batch_size(batch: RecordBatch, topic_partition: str, config: ValidationConfig) -> Violation | None:
    """``UnifiedLog.analyzeAndValidateRecords`` checks each batch's size against
    ``max.message.bytes`` before anything else, its CRC included (``batch.isValid`` comes next):
    an oversized batch is answered MESSAGE_TOO_LARGE whatever its CRC. The poison pill of
    KAFKA-15259."""
    sentence = (
        "The record batch size in the append to {tp} is {size} bytes which exceeds the maximum "
        "configured value of {limit}."
    )
    return _too_large(batch, topic_partition, config.max_message_bytes, "max_message_bytes", sentence)


def _offset_range_violation(batch: RecordBatch, topic_partition: str, compacted: bool) -> Violation | None:
    """LogValidator.validateBatch's offset range and record count rules (the cleaner's output
    of a compacted topic excepted)."""
    count = batch.record_count or 0
    count_from_offsets = batch.last_offset - batch.base_offset + 1
    if count == count_from_offsets and count > 0:  # the common batch: none of the rules below fires
        return None
    if count_from_offsets <= 0:
        message = (
            f"Batch has an invalid offset range: [{batch.base_offset}, {batch.last_offset}] "
            f"in topic partition {topic_partition}"
        )
    elif count < 0 or (count == 0 and not compacted):
        message = f"Invalid reported count for record batch: {count} in topic partition {topic_partition}"
    elif count > count_from_offsets or (count < count_from_offsets and not compacted):
        message = (
            f"Inconsistent batch offset range [{batch.base_offset}, {batch.last_offset}] and count of "
            f"records {count} in topic partition {topic_partition}"
        )
    else:
        return None
    details = {"record_count": count, "last_offset_delta": batch.last_offset_delta}
    return Violation(CheckId.NON_MONOTONIC_OFFSETS, message, details=details)


def _origin_violation(batch: RecordBatch, topic_partition: str, topic: str) -> Violation | None:
    """LogValidator.validateBatch's client rules, exactly (Kafka 3.6): a client may not write a
    control batch, and a batch with a producer id (``hasProducerId``: id > -1) needs a base
    sequence >= 0. Nothing else: a transactional batch with producer id -1 and a producer id
    with epoch -1 are accepted.

    On disk a control batch is the broker's when it carries the transactional bit (transaction
    markers, ``MemoryRecords.withEndTransactionMarker``) or lies in the KRaft metadata log; any
    other can only have come from a client (the Raft layer writes the metadata log's LEADER_CHANGE,
    SNAPSHOT_* and KRAFT_* control records without the transactional bit). ``batch`` is a v2 batch (validate_batch_header)."""
    attributes = batch.attributes
    if attributes & CONTROL_FLAG_MASK:  # RecordBatch.is_control, of a v2 batch
        if attributes & TRANSACTIONAL_FLAG_MASK or topic == CLUSTER_METADATA:
            return None
        return Violation(
            CheckId.INVALID_CONTROL_BATCH,
            f"Clients are not allowed to write control records in topic partition {topic_partition}",
            details={"is_transactional": False},
        )
    if batch.producer_id >= 0 and batch.base_sequence < 0:
        return Violation(
            CheckId.INVALID_PRODUCER_FIELDS,
            f"Invalid sequence number {batch.base_sequence} in record batch with producerId {batch.producer_id} "
            f"in topic partition {topic_partition}",
            details={
                "producer_id": batch.producer_id,
                "producer_epoch": batch.producer_epoch,
                "base_sequence": batch.base_sequence,
            },
        )
    return None


def validate_appended_size(batch: RecordBatch, topic_partition: str, config: ValidationConfig) -> Violation | None:
    """UnifiedLog.append, after validation: a batch larger than ``segment.bytes`` can never fit a
    segment (RecordBatchTooLargeException, RECORD_LIST_TOO_LARGE)."""
    sentence = (
        "Message batch size is {size} bytes in append to partition {tp}, which exceeds the maximum "
        "configured segment size of {limit}."
    )
    return _too_large(batch, topic_partition, config.segment_bytes, "segment_bytes", sentence, "RECORD_LIST_TOO_LARGE")


def _too_large(
    batch: RecordBatch, topic_partition: str, limit: int, limit_name: str, sentence: str, error: str | None = None
) -> Violation | None:
    """RECORD_TOO_LARGE for a batch larger than ``limit`` (the config ``limit_name``), in Kafka's
    ``sentence`` (a template of ``tp``, ``size`` and ``limit``); ``error`` the answer's own."""
    if batch.size <= limit:
        return None
    message = sentence.format(tp=topic_partition, size=batch.size, limit=limit)
    return Violation(CheckId.RECORD_TOO_LARGE, message, details={"size": batch.size, limit_name: limit}, error=error)
