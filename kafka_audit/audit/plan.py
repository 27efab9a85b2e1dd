"""The plan of a scan, made once on the driver before any step runs (:class:`ScanPlan`): the
options with what the log dirs say (:mod:`~kafka_audit.audit.log_dir_facts`), the segment tasks
and what each replica's partition step needs. An engine (``engines/``) runs the plan's steps, the
same functions either way, and hands what they found to :meth:`ScanPlan.finish`.

The unit of work is a :class:`SegmentTask` (a segment, or a byte range of a large one); the unit
of the partition step is a replica folder (``PartitionDir.key``): two brokers' copies of the same
partition scanned together are audited apart.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from kafka_audit.audit.coordinator_view import read_producer_facts
from kafka_audit.audit.log_dir_facts import with_log_dir_facts
from kafka_audit.audit.partition_audit import PartitionMeta, PartitionTotals
from kafka_audit.audit.replica_sets import replica_sets, replica_template
from kafka_audit.audit.results import Progress, ScanResult
from kafka_audit.audit.scan_options import DEFAULT_SPLIT_BYTES, ScanOptions
from kafka_audit.audit.segment_task import SegmentStats, SegmentTask
from kafka_audit.audit.summary import finish_result
from kafka_audit.io.storage import is_remote
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.checkpoints import cluster_of
from kafka_audit.log.discovery import Discovery
from kafka_audit.log.index_files import OFFSET_INDEX
from kafka_audit.log.log_names import LIVE
from kafka_audit.record.file_records import FileRecords
from kafka_audit.record.record_batch import RecordBatch
from kafka_audit.rules.findings import Finding


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """One scan's plan, built once (:meth:`build`) and handed to an engine, which runs its segment
    tasks and partition steps and calls :meth:`finish` once with what they found."""

    discovery: Discovery
    # The scan's options with the log dirs' facts (compacted topics, broker defaults by version).
    options: ScanOptions
    # The segment tasks, largest first (:func:`plan_tasks`).
    tasks: list[SegmentTask]
    # What the partition step needs, per replica key (:func:`partition_metas`).
    metas: dict[tuple, PartitionMeta]
    # When planning began (time.monotonic) and the request storage's requests_sent() then.
    started: float
    sent: tuple[int, int]

    @classmethod
    def build(cls, discovery: Discovery, options: ScanOptions) -> ScanPlan:
        """The plan of auditing everything ``discovery`` found with ``options``."""
        started, sent = time.monotonic(), discovery.storage.requests_sent()
        options = with_log_dir_facts(options, discovery)
        tasks = plan_tasks(discovery, options.split_bytes)
        return cls(discovery, options, tasks, partition_metas(discovery, options), started, sent)

    def progress(self) -> Progress:
        """A progress count of this plan's work, none of it done."""
        return Progress(len(self.tasks), sum(t.byte_count for t in self.tasks), len(self.metas))

    def finish(self, stats: SegmentStats, totals: PartitionTotals, findings: list[Finding]) -> ScanResult:
        """The scan's result from what every step found (:func:`finish_result`), timed from :meth:`build`."""
        wall = time.monotonic() - self.started
        return finish_result(self.discovery, stats, totals, findings, wall, self.options, self.sent)


def plan_tasks(discovery: Discovery, split_bytes: int = DEFAULT_SPLIT_BYTES) -> list[SegmentTask]:
    """One task per segment, or per byte range of a segment larger than 1.5x ``split_bytes``
    (cut at batch boundaries), largest first so the long tasks start early."""
    tasks: list[SegmentTask] = []
    for partition in discovery.partitions:
        newest = max((s.base_offset for s in partition.segments if s.state == LIVE), default=None)
        if newest is not None and partition.folder_last_offset is not None:
            newest = max(newest, partition.folder_last_offset)
        for segment in partition.segments:
            is_newest = segment.state == LIVE and segment.base_offset == newest
            task = SegmentTask(
                partition.topic, partition.partition, partition.display_path, segment,
                newest=is_newest, storage_options=discovery.storage.settings,
            )
            if segment.size <= split_bytes * 3 // 2:
                tasks.append(task)
            else:
                tasks.extend(_split(task, split_bytes, discovery.storage))
    tasks.sort(key=lambda t: -t.byte_count)
    return tasks


def _split(task: SegmentTask, split_bytes: int, storage: StorageContext) -> list[SegmentTask]:
    """A local segment is cut where a walk of its batch headers says (the map costs no read); an
    object in a store where its offset index says, so the driver does not read the object."""
    try:
        if is_remote(task.file.path):
            points = _index_split_points(task, split_bytes, storage)
        else:
            with FileRecords(task.file.path, task.file.size, task.file.file_id, storage) as segment:
                points = segment.split_points(split_bytes)
    except (OSError, ValueError):
        return [task]  # its own task reports why it cannot be read
    stops: list[int | None] = [*points[1:], None]
    return [task.byte_range(start, stop) for start, stop in zip(points, stops)]


def _index_split_points(task: SegmentTask, split_bytes: int, storage: StorageContext) -> list[int]:
    """Batch start positions about ``split_bytes`` apart, taken from the segment's ``.index``
    (LogSegment.append indexes a batch's position every index.interval.bytes). An entry is used
    only where the segment agrees, reading one batch there: a batch starts at that position,
    its CRC holds and it holds the entry's offset. Without a usable index the segment is one
    task, whose executor walks it whole."""
    points = [0]
    index = task.file.index
    if not index:
        return points
    entries = OFFSET_INDEX.read(index, task.file.base_offset, None, storage).entries
    with FileRecords(task.file.path, storage=storage) as segment:
        for entry in entries:
            if entry.position - points[-1] < split_bytes or entry.position >= segment.size:
                continue
            first = next(iter(segment.batches(entry.position, entry.position + 1)), None)
            if (
                isinstance(first, RecordBatch)
                and first.crc_valid
                and first.base_offset <= entry.offset <= first.last_offset
            ):
                points.append(entry.position)
    return points


def partition_metas(discovery: Discovery, options: ScanOptions) -> dict[tuple, PartitionMeta]:
    """What the partition step needs, per replica key."""
    carried = discovery.storage.settings
    metas = {p.key: PartitionMeta.from_discovery(p, options, carried) for p in discovery.partitions}
    sets = replica_sets(discovery)
    for partition in discovery.partitions:
        if partition.key in sets:
            metas[partition.key].replica_set = sets[partition.key]
            metas[partition.key].replica = replica_template(partition)
    facts = read_producer_facts(discovery)
    if facts:
        for partition in discovery.partitions:
            cluster = cluster_of(partition.path, discovery.cluster_ids, discovery.storage)
            meta = metas[partition.key]
            meta.replay = replace(meta.replay, producer_facts=facts.get(cluster, {}))
    return metas


def log_order(task: SegmentTask) -> tuple[int, str, int]:
    """Where a task's batches stand in its replica's log: segment base offset, segment file, first
    byte. A task yields its batches in file order, so tasks in this order give the log order."""
    return (task.file.base_offset, task.file.display_path, task.start)
