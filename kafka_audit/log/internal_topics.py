"""Which decoder reads a file's records, by where the file lives (DumpLogSegments picks its
``--offsets-decoder`` / ``--transaction-log-decoder`` / ``--cluster-metadata-decoder`` the same
way, by topic): ``__consumer_offsets-N``, ``__transaction_state-N``, ``__cluster_metadata-0``
folders, and KRaft snapshot files (``bootstrap.checkpoint``, ``<offset>-<epoch>.checkpoint``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

from kafka_audit.log.coordinator_records import decode_consumer_offsets, decode_transaction_log
from kafka_audit.log.log_names import CLUSTER_METADATA, CONSUMER_OFFSETS, TRANSACTION_STATE, parse_partition_dir
from kafka_audit.log.metadata_records import MetadataRecordDecoder
from kafka_audit.record.file_records import FileRecords
from kafka_audit.record.problem import Problem

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
    topic = topic_of(path)
    if topic == CONSUMER_OFFSETS:
        return decode_consumer_offsets
    if topic == TRANSACTION_STATE:
        return decode_transaction_log
    if topic == CLUSTER_METADATA:
        return MetadataRecordDecoder()
    return None


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
