"""Which decoder reads a file's records, by where the file lives (DumpLogSegments picks its
``--offsets-decoder`` / ``--transaction-log-decoder`` / ``--cluster-metadata-decoder`` /
``--share-group-state-decoder`` the same way, by topic): ``__consumer_offsets-N``,
``__transaction_state-N``, ``__share_group_state-N``, ``__remote_log_metadata-N``, ``__cluster_metadata-0`` folders, and KRaft snapshot files (``bootstrap.checkpoint``, ``<offset>-<epoch>.checkpoint``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from kafka_audit.log.coordinator_records import (
    decode_consumer_offsets,
    decode_share_group_state,
    decode_transaction_log,
    unknown_coordinator_record,
    unknown_transaction_log_record,
)
from kafka_audit.log.coordinator_schemas import GROUP_RECORDS, SHARE_RECORDS
from kafka_audit.log.log_names import (
    CLUSTER_METADATA,
    CONSUMER_OFFSETS,
    REMOTE_LOG_METADATA,
    SHARE_GROUP_STATE,
    TRANSACTION_STATE,
    parse_partition_dir,
)
from kafka_audit.log.metadata_records import MetadataRecordDecoder, unknown_metadata_record
from kafka_audit.log.remote_log_metadata import decode_remote_log_metadata, unknown_remote_log_metadata_record
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


UnknownTest = Callable[[bytes | None, bytes | None], bool]


def unknown_test_for_topic(topic: str | None) -> UnknownTest | None:
    """Whether a record of ``topic`` is of a type or version its decoder does not know (the
    decoders of :func:`decoder_for_topic` name such a record ``unknown``), read from the record's
    first bytes; None for an ordinary topic."""
    if topic == CONSUMER_OFFSETS:
        return partial(unknown_coordinator_record, GROUP_RECORDS)
    if topic == SHARE_GROUP_STATE:
        return partial(unknown_coordinator_record, SHARE_RECORDS)
    if topic == TRANSACTION_STATE:
        return unknown_transaction_log_record
    if topic == CLUSTER_METADATA:
        return unknown_metadata_record
    if topic == REMOTE_LOG_METADATA:
        return unknown_remote_log_metadata_record
    return None


def count_unknown(segment: FileRecords, batch: RecordBatch, unknown: UnknownTest) -> int:
    """How many of a data batch's records are of a type or version not known here (the scan
    summary's ``internal_records_unknown``)."""
    return sum(unknown(r.key, r.value) for r in segment.records(batch, with_data=True).records)


def read_transaction_log(path: str) -> Iterator[dict[str, Any] | Problem]:
    """Every data record of a ``__transaction_state`` segment, decoded, in log order, with its
    ``offset`` and ``timestamp``; problems of the segment come back as :class:`Problem`."""
    with FileRecords(path) as segment:
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
