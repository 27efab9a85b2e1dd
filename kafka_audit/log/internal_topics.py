"""Which decoder reads a file's records, by where the file lives (DumpLogSegments picks its
``--offsets-decoder`` / ``--transaction-log-decoder`` / ``--cluster-metadata-decoder`` /
``--share-group-state-decoder`` the same way, by topic): ``__consumer_offsets-N``,
``__transaction_state-N``, ``__share_group_state-N``, ``__remote_log_metadata-N``, ``__cluster_metadata-0`` folders, and KRaft snapshot files (``bootstrap.checkpoint``, ``<offset>-<epoch>.checkpoint``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.coordinator_records import decode_consumer_offsets, decode_share_group_state, decode_transaction_log
from kafka_audit.log.log_names import (
    CLUSTER_METADATA,
    CONSUMER_OFFSETS,
    REMOTE_LOG_METADATA,
    SHARE_GROUP_STATE,
    TRANSACTION_STATE,
    parse_partition_dir,
)
from kafka_audit.log.metadata_records import MetadataRecordDecoder, decode_kraft_control
from kafka_audit.log.remote_log_metadata import decode_remote_log_metadata
from kafka_audit.record.control_record import parse_control_record
from kafka_audit.record.file_records import FileRecords
from kafka_audit.record.problem import Problem
from kafka_audit.record.record_batch import RecordBatch

Decoder = Callable[[bytes | None, bytes | None], dict[str, Any]]

# KRaft snapshots (Snapshots.SUFFIX) and the bootstrap file end in ".checkpoint"; the text
# checkpoints beside them end in "-checkpoint".
SNAPSHOT_SUFFIX = ".checkpoint"


def is_kraft_snapshot(path: str) -> bool:
    """A KRaft snapshot or bootstrap file: record batches, not a text checkpoint."""
    return os.path.basename(path).removesuffix(".deleted").endswith(SNAPSHOT_SUFFIX)


def topic_of(path: str) -> str | None:
    """The topic of the partition folder holding ``path``, or None."""
    parsed = parse_partition_dir(os.path.basename(os.path.dirname(os.path.abspath(path))))
    return parsed[0] if parsed else None


def decoder_for(path: str) -> Decoder | None:
    """A fresh record decoder for the file at ``path``, or None for an ordinary topic."""
    if is_kraft_snapshot(path):
        return MetadataRecordDecoder()
    return decoder_for_topic(topic_of(path))


def decoder_for_topic(topic: str | None) -> Decoder | None:
    """A fresh record decoder for a segment of ``topic``, or None for an ordinary topic."""
    if topic == CONSUMER_OFFSETS:
        return decode_consumer_offsets
    if topic == TRANSACTION_STATE:
        return decode_transaction_log
    if topic == SHARE_GROUP_STATE:
        return decode_share_group_state
    if topic == CLUSTER_METADATA:
        return MetadataRecordDecoder()
    if topic == REMOTE_LOG_METADATA:
        return decode_remote_log_metadata
    return None


UnreadTest = Callable[[bytes | None, bytes | None], bool]


def not_decoded(decoded: dict[str, Any]) -> bool:
    """Whether a decoder's answer names a record it could not read: of an unknown type or version
    (``unknown``), or one that does not decode by its schema (``error``)."""
    return "unknown" in decoded or "error" in decoded or decoded.get("record") == "unknown"


def unread_test_for_topic(topic: str | None) -> UnreadTest | None:
    """Whether a record of ``topic`` is one its decoder (:func:`decoder_for_topic`) cannot read:
    of an unknown type or version, or not decodable by its schema (SPEC section 3: the scan
    summary's ``internal_records_unknown``, never skipped silently); None for an ordinary topic."""
    decode = decoder_for_topic(topic)
    if decode is None:
        return None
    return lambda key, value: not_decoded(decode(key, value))


def count_unread(segment: FileRecords, batch: RecordBatch, unread: UnreadTest) -> int:
    """How many of an internal topic's batch's records cannot be read: data records by
    ``unread``; KRaft control records (LeaderChange, KRaftVersion, KRaftVoters, snapshot header
    and footer, as ``ControlRecordUtils`` reads them) that do not decode. Transaction markers and
    malformed control keys are the control checks' concern."""
    records = segment.records(batch, with_data=True).records
    if not batch.is_control:
        return sum(unread(r.key, r.value) for r in records)
    count = 0
    for record in records:
        control = parse_control_record(record)
        kraft = None if control.error else decode_kraft_control(control.type, record.value)
        count += kraft is not None and not_decoded(kraft)
    return count


def read_transaction_log(path: str, storage: StorageContext) -> Iterator[dict[str, Any] | Problem]:
    """Every data record of a ``__transaction_state`` segment (read under the request's
    ``storage``), decoded, in log order, with its ``offset`` and ``timestamp``; problems of the
    segment come back as :class:`Problem`."""
    with FileRecords(path, storage=storage) as segment:
        for batch in segment.batches():
            if isinstance(batch, Problem):
                yield batch
                continue
            if batch.is_control:
                continue
            decoded = segment.records(batch, with_data=True)
            for record in decoded.records:
                yield {"offset": record.offset, "timestamp": record.timestamp,
                       **decode_transaction_log(record.key, record.value)}
            yield from decoded.problems
