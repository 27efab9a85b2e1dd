"""The end of every scan, on either engine: the findings completed and ordered (SPEC section 3),
the summary counted, the producer rows joined to the coordinator's view, into a :class:`ScanResult`."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kafka_audit.audit.coordinator_view import join_coordinator_view, read_coordinator_view
from kafka_audit.audit.file_accounting import file_findings
from kafka_audit.audit.partition_audit import PartitionTotals
from kafka_audit.audit.remote_log_view import remote_log_view
from kafka_audit.audit.replica_sets import SetKey, merge_replica_findings, replica_sets
from kafka_audit.audit.results import ScanResult
from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.audit.segment_task import SegmentStats
from kafka_audit.io.storage import is_remote
from kafka_audit.log.discovery import Discovery
from kafka_audit.log.feature_levels import ClusterLevels
from kafka_audit.rules.catalogue import CheckId
from kafka_audit.rules.findings import Finding, assign_fingerprints
from kafka_audit.rules.remedies import attach_remedies
from kafka_audit.rules.replay.producer_activity import count_findings


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
    summary = _summary(discovery, stats, totals, findings, sets, options.written_by)
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


def _summary(
    discovery: Discovery,
    stats: SegmentStats,
    totals: PartitionTotals,
    findings: list[Finding],
    sets: dict[tuple, SetKey],
    written_by: ClusterLevels,
) -> dict[str, Any]:
    """The summary's counts (SPEC section 3), in its field order; the wall time is set after."""
    by_check = Counter(f.check for f in findings)
    return {
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
        **_feature_levels(written_by),
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


def set_wall_time(summary: dict[str, Any], wall: float) -> None:
    """The summary's wall time and the MB/s it gives; the CLI sets the whole command's."""
    summary["wall_time_s"] = round(wall, 3)
    summary["mb_per_s"] = round(summary["bytes"] / 1e6 / wall, 3) if wall > 0 else 0.0
    if "requests" in summary:  # URI inputs: the store's request and fetch rates
        summary["requests_per_s"] = round(summary["requests"] / wall, 1) if wall > 0 else 0.0
        summary["fetched_mb_per_s"] = round(summary["bytes_fetched"] / 1e6 / wall, 3) if wall > 0 else 0.0
