"""The audit core, shared by the Spark job and the one-process run: plan, audit, summarise.

``engines/spark_job.py`` runs these steps on Spark (parse in ``mapInArrow``, shuffle by replica,
replay per replica in ``applyInArrow``); :func:`audit_in_process` runs exactly the same steps in this process, for
tests, the benchmark's "audit core" figure and the fuzz script. Both return a :class:`ScanResult`.

The unit of work is a :class:`SegmentTask` (a segment, or a byte range of a large one); the unit
of the partition step is a replica folder (``PartitionDir.key``): two brokers' copies of the same
partition scanned together are audited apart.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Any

from kafka_audit.audit.coordinator_view import (
    join_coordinator_view,
    read_coordinator_view,
    read_producer_facts,
)
from kafka_audit.audit.partition_audit import PartitionMeta, PartitionTotals, audit_partition
from kafka_audit.audit.remote_log_view import remote_log_view
from kafka_audit.audit.replica_sets import ReplicaSets, merge_replica_findings, replica_sets, replica_template
from kafka_audit.audit.scan_options import DEFAULT_SPLIT_BYTES, ScanOptions
from kafka_audit.audit.segment_audit import SegmentAuditor
from kafka_audit.audit.segment_task import SegmentStats, SegmentTask, with_read_ahead
from kafka_audit.io.rsm_objects import ENCRYPTED
from kafka_audit.io.storage import is_remote
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.checkpoints import cluster_of
from kafka_audit.log.discovery import Discovery
from kafka_audit.log.feature_levels import ClusterLevels, WrittenBy, read_written_by
from kafka_audit.log.log_names import LIVE
from kafka_audit.log.offset_index import read_offset_index
from kafka_audit.record.file_records import FileRecords
from kafka_audit.record.record_batch import RecordBatch
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.catalogue import CheckId
from kafka_audit.rules.events import Event
from kafka_audit.rules.findings import Finding, assign_fingerprints, make_finding
from kafka_audit.rules.partition.missing_segments import orphan_sidecar_finding
from kafka_audit.rules.remedies import attach_remedies
from kafka_audit.rules.replay.producer_activity import count_findings
from kafka_audit.rules.validation.log_validator import ValidationConfig

# What an encrypted tiered-storage segment without --rsm-key-file needs (its finding's message).
ENCRYPTED_HINT = " (its chunks are AES-GCM-encrypted: give --rsm-key-file, the private key that unwraps its data key)"
# ServerLogConfigs.LOG_MESSAGE_TIMESTAMP_AFTER_MAX_MS_DEFAULT of Kafka 4 (Long.MAX_VALUE, off, in 3.x).
KAFKA_4_TIMESTAMP_AFTER_MAX_MS = 3_600_000


@dataclass(slots=True)
class ScanResult:
    """What a scan found: findings in SPEC order and the summary counts of SPEC section 3;
    ``events``: the replay's timeline events (``ScanOptions.timeline``), in log order per partition."""

    findings: list[Finding]
    summary: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    # The ``producers`` rows (SPEC section 3), by topic, partition, producer id.
    producers: list[dict[str, Any]] = field(default_factory=list)
    # Every (topic, partition) scanned, sorted, findings or not (a JUnit test case each).
    partitions: list[tuple[str, int]] = field(default_factory=list)


@dataclass(slots=True)
class Progress:
    """How far an audit is, for the progress display: segment tasks and their bytes audited,
    then partition replicas replayed. Both engines update it and pass it to ``on_progress``."""

    segments_total: int = 0
    bytes_total: int = 0
    partitions_total: int = 0
    segments_done: int = 0
    bytes_done: int = 0
    partitions_done: int = 0


def plan_tasks(discovery: Discovery, split_bytes: int = DEFAULT_SPLIT_BYTES) -> list[SegmentTask]:
    """One task per segment, or per byte range of a segment larger than 1.5x ``split_bytes``
    (cut at batch boundaries), largest first so the long tasks start early."""
    tasks: list[SegmentTask] = []
    for partition in discovery.partitions:
        newest = max((s.base_offset for s in partition.segments if s.state == LIVE), default=None)
        if newest is not None and partition.folder_last_offset is not None:
            newest = max(newest, partition.folder_last_offset)
        for segment in partition.segments:
            task = SegmentTask(
                topic=partition.topic,
                partition=partition.partition,
                replica=partition.display_path,
                path=segment.path,
                segment=segment.display_path,
                base_offset=segment.base_offset,
                state=segment.state,
                mtime_ms=segment.mtime_ms,
                size=segment.size,
                file_id=segment.file_id,
                newest=segment.state == LIVE and segment.base_offset == newest,
                storage_options=discovery.storage.settings,
            )
            if segment.size <= split_bytes * 3 // 2:
                tasks.append(task)
            else:
                tasks.extend(_split(task, split_bytes, segment.index, discovery.storage))
    tasks.sort(key=lambda t: -t.byte_count)
    return tasks


def _split(task: SegmentTask, split_bytes: int, index: str | None, storage: StorageContext) -> list[SegmentTask]:
    """A local segment is cut where a walk of its batch headers says (the map costs no read); an
    object in a store where its offset index says, so the driver does not read the object."""
    try:
        if is_remote(task.path):
            points = _index_split_points(task, index, split_bytes, storage)
        else:
            with FileRecords(task.path, task.size, task.file_id, storage) as segment:
                points = segment.split_points(split_bytes)
    except (OSError, ValueError):
        return [task]  # its own task reports why it cannot be read
    stops: list[int | None] = [*points[1:], None]
    return [task.byte_range(start, stop) for start, stop in zip(points, stops)]


def _index_split_points(task: SegmentTask, index: str | None, split_bytes: int, storage: StorageContext) -> list[int]:
    """Batch start positions about ``split_bytes`` apart, taken from the segment's ``.index``
    (LogSegment.append indexes a batch's position every index.interval.bytes). An entry is used
    only where the segment agrees, reading one batch there: a batch starts at that position,
    its CRC holds and it holds the entry's offset. Without a usable index the segment is one
    task, whose executor walks it whole."""
    points = [0]
    if not index:
        return points
    entries = read_offset_index(index, task.base_offset, None, storage).entries
    with FileRecords(task.path, storage=storage) as segment:
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


def with_inferred_compaction(options: ScanOptions, discovery: Discovery) -> ScanOptions:
    """SPEC section 2: a topic is compacted when ``--compacted-topic`` names it, when it is
    ``__consumer_offsets`` / ``__transaction_state`` (``ValidationConfig.is_compacted``), or when
    its log dir's ``cleaner-offset-checkpoint`` lists a partition of it (``LogCleanerManager``
    checkpoints only the logs the cleaner compacts; ``cleanup.policy`` is a topic setting). The
    result's ``validation.compacted_topics`` is then the one answer for every step of the scan."""
    listed = {p.topic for p in discovery.partitions if p.cleaner_checkpointed}
    named = options.validation.compacted_topics
    if listed <= named:
        return options
    return replace(options, validation=replace(options.validation, compacted_topics=named | listed))


def with_log_dir_facts(options: ScanOptions, discovery: Discovery) -> ScanOptions:
    """What the log dirs say about auditing them, decided once for every step of the scan: the
    compacted topics (:func:`with_inferred_compaction`) and the Kafka version that wrote each log
    dir's cluster (:func:`read_written_by`), whose broker defaults apply where no option is given
    (SPEC section 1): ``log.message.timestamp.after.max.ms`` is 3600000 on Kafka 4.x
    (``ServerLogConfigs.LOG_MESSAGE_TIMESTAMP_AFTER_MAX_MS_DEFAULT``), off (Long.MAX_VALUE) on 3.x
    and when the version is unknown; ``...before.max.ms`` is off on both. The default bound is
    checked against each segment's modification time, at or after the broker's last append.
    Clusters of different versions scanned together each keep their own defaults."""
    options = with_inferred_compaction(options, discovery)
    written_by = read_written_by(discovery)
    by_cluster = {cluster: _broker_defaults(options.validation, w) for cluster, w in written_by.clusters.items()}
    if len(set(by_cluster.values())) <= 1:
        validation = next(iter(by_cluster.values()), options.validation)
        return replace(options, validation=validation, written_by=written_by)
    by_replica = {replica: by_cluster[cluster] for replica, cluster in written_by.cluster_of.items()}
    return replace(options, written_by=written_by, validation_by_replica=by_replica)


def _broker_defaults(validation: ValidationConfig, written_by: WrittenBy) -> ValidationConfig:
    """``validation`` with the unset timestamp bound at the broker default of that version."""
    if not written_by.kafka_4 or validation.timestamp_after_max_ms is not None:
        return validation
    return replace(
        validation,
        timestamp_after_max_ms=KAFKA_4_TIMESTAMP_AFTER_MAX_MS,
        timestamp_rule=(
            f"Kafka 4.x broker default log.message.timestamp.after.max.ms={KAFKA_4_TIMESTAMP_AFTER_MAX_MS} "
            f"(the log dir's metadata.version is {written_by.metadata_version})"
        ),
    )


def _feature_levels(written_by: ClusterLevels) -> dict[str, Any]:
    """The summary's ``metadata_version`` / ``transaction_version`` (SPEC section 3): the scanned
    cluster's, or the newest one's where clusters of several versions were scanned, then with
    each cluster's in ``feature_levels_by_cluster`` (by ``cluster.id``)."""
    top = written_by.newest
    levels: dict[str, Any] = {"metadata_version": top.metadata_version, "transaction_version": top.transaction_version}
    if len({(w.metadata_version, w.transaction_version) for w in written_by.clusters.values()}) > 1:
        levels["feature_levels_by_cluster"] = {
            cluster: {"metadata_version": w.metadata_version, "transaction_version": w.transaction_version}
            for cluster, w in sorted(written_by.clusters.items())
        }
    return levels


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
            metas[partition.key].producer_facts = facts.get(cluster, {})
    return metas


def log_order(task: SegmentTask) -> tuple[int, str, int]:
    """Where a task's batches stand in its replica's log: segment base offset, segment file, first
    byte. A task yields its batches in file order, so tasks in this order give the log order."""
    return (task.base_offset, task.segment, task.start)


def audit_in_process(
    discovery: Discovery,
    options: ScanOptions,
    on_progress: Callable[[Progress], None] | None = None,
    on_batches: Callable[[list[BatchSummary]], None] | None = None,
) -> ScanResult:
    """The whole audit in this process (``scan --engine local``): the reference the Spark job
    must agree with. ``on_progress`` is called after each segment task and partition replica;
    ``on_batches`` gets each task's batch summaries (the ``batches`` dataset)."""
    storage = discovery.storage
    started, sent = time.monotonic(), storage.requests_sent()
    options = with_log_dir_facts(options, discovery)
    metas = partition_metas(discovery, options)
    tasks = plan_tasks(discovery, options.split_bytes)
    progress = Progress(len(tasks), sum(t.byte_count for t in tasks), len(metas))
    stats = SegmentStats()
    totals = PartitionTotals()
    findings: list[Finding] = []
    # Per replica, each task's batch summaries with where the task stands in the log.
    summaries: dict[tuple, list[tuple[tuple, list[BatchSummary]]]] = {key: [] for key in metas}
    validations = options.validations
    held = ReplicaSets(options.validation.is_compacted)
    for task in with_read_ahead(tasks, storage):
        auditor = SegmentAuditor(task, validations.of(task.replica), options.reference_time, storage)
        batches: list[BatchSummary] = []
        for item in auditor.run():
            if isinstance(item, BatchSummary):
                batches.append(item)
            else:
                findings.append(item)
        summaries[task.replica_key].append((log_order(task), batches))
        stats.merge(auditor.stats)
        if on_batches is not None:
            on_batches(batches)
        progress.segments_done += 1
        progress.bytes_done += task.byte_count
        if on_progress is not None:
            on_progress(progress)
    for key, meta in metas.items():
        in_log_order = chain.from_iterable(batches for _, batches in sorted(summaries[key], key=lambda t: t[0]))
        partition_findings, partition_totals = audit_partition(meta, in_log_order, storage)
        findings.extend(partition_findings)
        if not held.hold(partition_totals):
            totals.merge(partition_totals)
        progress.partitions_done += 1
        if on_progress is not None:
            on_progress(progress)
    held.finish(totals, findings)
    return finish_result(discovery, stats, totals, findings, time.monotonic() - started, options, sent)


def finish_result(
    discovery: Discovery,
    stats: SegmentStats,
    totals: PartitionTotals,
    findings: list[Finding],
    wall: float,
    options: ScanOptions,
    sent: tuple[int, int] = (0, 0),
) -> ScanResult:
    """Account for every byte found, order the findings (SPEC section 3), give them their
    fingerprints (``--baseline``: marked known) and build the summary (with ``--broker-log``: its
    counts, lines about partitions outside the scan among them; the feature levels the log dirs
    record, null where none). ``sent`` is the request storage's ``requests_sent()`` when the
    audit started: for URI inputs the summary counts the requests of discovery, of this process
    since then, and of the Spark tasks (``stats`` and ``totals``)."""
    broker_log = options.broker_log
    findings.extend(file_findings(discovery, stats))
    findings.extend(remote_log_view(discovery))
    sets = replica_sets(discovery)
    findings = merge_replica_findings(findings, discovery, sets)
    findings.sort(key=lambda f: f.sort_key)
    assign_fingerprints(findings, options.baseline)
    by_check = Counter(f.check for f in findings)
    summary = {
        "paths": list(discovery.paths),
        "partitions": len(discovery.partitions),
        "segments": stats.segments,
        "batches": stats.batches,
        "records": stats.records,
        "bytes": stats.bytes,
        "formats": dict(sorted(stats.formats.items())),
        "codecs": dict(sorted(stats.codecs.items())),
        "producers": len(totals.producers),
        "transactions": {"committed": totals.committed, "aborted": totals.aborted, "open": totals.open},
        "wall_time_s": 0.0,
        "mb_per_s": 0.0,
        "replica_sets": len(set(sets.values())),
        # SPEC section 6: log dirs without meta.properties compared as one cluster, named by their folder.
        "replica_sets_without_meta_properties": len({key for key in sets.values() if not key[2]}),
        "findings_by_check": dict(sorted(by_check.items())),
        "findings_by_severity": dict(sorted(Counter(f.severity for f in findings).items())),
        "segments_unreadable": by_check.get(CheckId.UNREADABLE_SEGMENT, 0),
        "files_skipped": by_check.get(CheckId.SKIPPED_FILE, 0),
        "files_changed": sorted(stats.changed),
        **_feature_levels(options.written_by),
        "internal_records_unknown": stats.internal_records_unknown,
        "findings_baseline": sum(f.baseline for f in findings),
        "bytes_found": sum(s.size for p in discovery.partitions for s in p.segments),
        "bytes_read": stats.bytes,
        "segment_bytes": {
            s.display_path: {"found": s.size, "read": stats.bytes_read.get(s.display_path, 0)}
            for p in discovery.partitions
            for s in p.segments
        },
    }
    if broker_log is not None:
        summary.update(broker_log.summary((p.topic, p.partition) for p in discovery.partitions))
    set_wall_time(summary, wall)
    producers = sorted(totals.producer_rows, key=lambda row: (row["topic"], row["partition"], row["producer_id"]))
    # The driver completes the findings and producer rows: the coordinator's transactional ids
    # (a scanned __transaction_state), and each row's findings, which every partition's step holds.
    coordinator = read_coordinator_view(discovery)
    join_coordinator_view(coordinator, findings, producers, summary)
    # SPEC section 3: every error and warning finding's remedy, its transactional id joined in.
    attach_remedies(findings, {s.display_path: n.base_offset for p in discovery.partitions
                               for s, n in zip(p.segments, p.segments[1:])})
    count_findings(producers, findings)
    if any(is_remote(path) for path in discovery.paths):
        here = discovery.storage.fetched_since(sent)
        summary["requests"] = discovery.fetched[0] + here[0] + stats.requests + totals.requests
        summary["bytes_fetched"] = discovery.fetched[1] + here[1] + stats.bytes_fetched + totals.bytes_fetched
        set_wall_time(summary, wall)
    scanned = sorted({(p.topic, p.partition) for p in discovery.partitions})
    return ScanResult(findings, summary, list(discovery.notes) + coordinator.notes, totals.events, producers, scanned)


def file_findings(discovery: Discovery, stats: SegmentStats) -> list[Finding]:
    """The ``skipped_file`` findings of discovery, and an ``unreadable_segment`` finding for every
    segment found but not read in full: those discovery could not read, and those whose bytes
    read (summed over the segment's tasks) fall short of the bytes found, with the executor's
    reason when it gave one. The one place that decides a scan read what it found."""
    found: list[Finding] = [
        make_finding(
            CheckId.SKIPPED_FILE,
            f"Skipped {s.display_path}: {s.reason}",
            topic=s.topic,
            partition=s.partition,
            segment=s.display_path,
            details={"reason": s.reason},
        )
        for s in discovery.skipped
    ]
    for s in discovery.unreadable:
        found.append(
            make_finding(
                CheckId.UNREADABLE_SEGMENT,
                f"Segment {s.display_path} was not read: {s.reason}",
                topic=s.topic,
                partition=s.partition,
                segment=s.display_path,
                details={"reason": s.reason, "base_offset": s.base_offset, "bytes_found": None, "bytes_read": 0},
            )
        )
    for partition in discovery.partitions:
        found.extend(
            orphan_sidecar_finding(partition.topic, partition.partition, partition.display_path, offset, names)
            for offset, names in partition.orphan_sidecars.items()
        )
        for segment in partition.segments:
            read = stats.bytes_read.get(segment.display_path, 0)
            reason = stats.unread.get(segment.display_path)
            if reason is None and (read >= segment.size or segment.display_path in stats.changed):
                continue  # read in full, or a segment_changed finding says what was not
            reason = reason or f"only {read:,} of its {segment.size:,} bytes were read"
            hint = ENCRYPTED_HINT if reason == ENCRYPTED else ""
            found.append(
                make_finding(
                    CheckId.UNREADABLE_SEGMENT,
                    f"Segment {segment.display_path} was not read in full: {reason}{hint}",
                    topic=partition.topic,
                    partition=partition.partition,
                    segment=segment.display_path,
                    details={
                        "reason": reason,
                        "base_offset": segment.base_offset,
                        "bytes_found": segment.size,
                        "bytes_read": read,
                    },
                )
            )
    return found


def set_wall_time(summary: dict[str, Any], wall: float) -> None:
    """The summary's wall time and the MB/s it gives; the CLI sets the whole command's."""
    summary["wall_time_s"] = round(wall, 3)
    summary["mb_per_s"] = round(summary["bytes"] / 1e6 / wall, 3) if wall > 0 else 0.0
    if "requests" in summary:  # URI inputs: the store's request and fetch rates
        summary["requests_per_s"] = round(summary["requests"] / wall, 1) if wall > 0 else 0.0
        summary["fetched_mb_per_s"] = round(summary["bytes_fetched"] / 1e6 / wall, 3) if wall > 0 else 0.0
