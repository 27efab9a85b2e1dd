"""The partition step's sidecar files, after Kafka's ProducerStateManager and LogSegment: the
producer snapshots and transaction indexes the replay reads (:func:`read_sidecars`), each live
segment's offset and time indexes verified against its batches (:class:`IndexVerifier`), and the
order they are read in (:func:`sidecar_paths`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kafka_audit.audit.segment_indexes import (
    SegmentFiles,
    can_open,
    sidecar_display,
    sidecar_problem_findings,
    verify_indexes,
)
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.producer_snapshot import ProducerSnapshot, read_producer_snapshot
from kafka_audit.log.sidecar_file import SidecarEntries
from kafka_audit.log.transaction_index import read_transaction_index
from kafka_audit.rules.batch_summary import BatchSummary, RunSlice
from kafka_audit.rules.findings import Finding


class PartitionFiles(Protocol):
    """What these read of :class:`kafka_audit.audit.partition_audit.PartitionMeta`."""

    topic: str
    partition: int
    segments: dict[str, SegmentFiles]
    snapshots: list[tuple[str, str]]  # (path, as the user's PATH shows it)
    indexes_apart: frozenset[str]


def sidecar_paths(meta: PartitionFiles) -> list[str | None]:
    """The partition's sidecars in the order the partition step reads them."""
    files = list(meta.segments.values())
    paths: list[str | None] = [*(path for path, _ in meta.snapshots), *(f.txn_index for f in files)]
    for f in files:
        paths += [f.index, f.time_index]
    return paths


def _shown_as(parsed, display: str):
    """A sidecar read from ``path`` but named in findings as the user's PATH shows it (the same
    for a local copy and for its upload to a store)."""
    parsed.path = display
    return parsed


def read_sidecars(
    meta: PartitionFiles, unreadable: set[str], storage: StorageContext, findings: list[Finding]
) -> tuple[list[ProducerSnapshot], dict[str, SidecarEntries]]:
    """The partition's producer snapshots and the transaction indexes of its readable segments
    (ProducerStateManager and LogSegment read them); their problems added to ``findings``."""
    snapshots = [_shown_as(read_producer_snapshot(path, storage), display) for path, display in meta.snapshots]
    txn_indexes = {
        files.segment: read_transaction_index(files.txn_index, storage)
        for files in meta.segments.values()
        if files.txn_index and files.segment not in unreadable
    }
    where = {"topic": meta.topic, "partition": meta.partition}
    for snapshot, (_, display) in zip(snapshots, meta.snapshots):
        findings.extend(sidecar_problem_findings(snapshot.problems, {**where, "segment": None}, display))
    for segment, parsed in txn_indexes.items():
        findings.extend(
            sidecar_problem_findings(parsed.problems, {**where, "segment": segment}, sidecar_display(segment, ".txnindex"))
        )
    return snapshots, txn_indexes


class IndexVerifier:
    """The verification of each live segment's offset and time indexes against its batches, as
    LogSegment.sanityCheck and recover do, a segment at a time; ``changed``: the segments deleted,
    swapped or shrunk since the listing."""

    def __init__(self, meta: PartitionFiles, storage: StorageContext, findings: list[Finding]) -> None:
        self.meta, self.storage, self.findings = meta, storage, findings
        self.verified: set[str] = set()
        self.changed: set[str] = set()

    def verify(self, segment: str, batches: Sequence[BatchSummary | RunSlice]) -> None:
        """The segment's indexes against its batches in log order (summaries, and slices of runs as
        columns)."""
        self.verified.add(segment)
        meta = self.meta
        files = meta.segments[segment]
        if not files.still_listed():
            self.changed.add(segment)
            return
        if segment in meta.indexes_apart:
            return
        where = {"topic": meta.topic, "partition": meta.partition, "segment": segment}
        newest_size = files.size if files.newest else None
        self.findings.extend(
            verify_indexes(files.index, files.time_index, files.base_offset, where, batches, newest_size, self.storage)
        )

    def verify_unread(self, unreadable: set[str]) -> None:
        """Segments without a readable batch still have indexes that must agree with that; a
        segment file that cannot be opened at all (the segment step noted why) has no log to
        verify its indexes against."""
        live = self.meta.segments
        for segment in live:
            if segment not in self.verified and segment not in unreadable and can_open(live[segment].log, self.storage, True):
                self.verify(segment, [])
