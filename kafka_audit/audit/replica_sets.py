"""Replicas of one partition brought together (SPEC section 6): which partition folders form a
replica set, the digest each one's partition step leaves (:class:`ReplicaDigest`: batch
summaries by offset, epoch, CRC and producer fields, never payloads), and the comparison that
turns the digests of a set into ``replica_*`` findings and counts the set once, from its kept
replica. Both engines run it on the partition steps' totals.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from kafka_audit.log.discovery import Discovery, PartitionDir
from kafka_audit.log.log_names import CLUSTER_METADATA, LIVE
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.findings import Finding, fingerprint_identity
from kafka_audit.rules.replication.replica_compare import BatchDigest, ReplicaDigest, compare_replicas, name_order
from kafka_audit.rules.replication.replica_findings import replica_findings

# (topic, partition, cluster id): the replicas of one partition in one cluster.
SetKey = tuple[str, int, str]


def replica_sets(discovery: Discovery) -> dict[tuple, SetKey]:
    """Replica key -> set key, for the partition folders that have a peer: log dirs of one cluster
    (same ``cluster.id``, or none at all) holding the same topic-partition. ``__cluster_metadata``
    is a Raft log whose copies may be prefixes of each other: not compared."""
    groups: dict[SetKey, list[PartitionDir]] = {}
    for partition in discovery.partitions:
        broker = partition.broker
        if broker is None or partition.kind != LIVE or partition.remote or partition.topic == CLUSTER_METADATA:
            continue
        groups.setdefault((partition.topic, partition.partition, broker.cluster_id), []).append(partition)
    return {p.key: key for key, members in groups.items() if len(members) > 1 for p in members}


def replica_template(partition: PartitionDir) -> ReplicaDigest:
    """The digest a partition step fills: the broker's facts, no batches yet."""
    broker = partition.broker
    assert broker is not None  # replica_sets keeps labelled folders only
    return ReplicaDigest(
        node_id=broker.node_id,
        log_dir=broker.log_dir,
        high_watermark=broker.high_watermark,
        cleaner_offset=broker.cleaner_offset,
        log_start_offset=0,
        checkpoint_epochs=list(broker.leader_epochs) if broker.leader_epochs is not None else None,
    )


def digest_batches(digest: ReplicaDigest, live: Iterable[str], summaries: Iterable[BatchSummary]) -> Iterator[BatchSummary]:
    """``summaries`` passed on, each valid batch of a live segment noted in ``digest`` on the way."""
    segments: dict[str, int] = {}
    live_set = set(live)
    note = digest.batches.append
    for s in summaries:
        if s.valid and s.segment in live_set:
            index = segments.get(s.segment)
            if index is None:
                index = segments[s.segment] = len(digest.segments)
                digest.segments.append(s.segment)
            # tuple.__new__ with the fields in order: the NamedTuple's __new__ is a call per batch.
            note(_new(BatchDigest, (s.base_offset, s.last_offset, s.partition_leader_epoch, s.crc, s.producer_id,
                                    s.producer_epoch, s.base_sequence, s.record_count, s.max_timestamp, index, s.position)))
        yield s


_new = tuple.__new__


@dataclass(slots=True)
class ReplicaSets:
    """The partition steps' totals of replicas in a set, held until the set is complete; then
    compared (:meth:`finish`). ``is_compacted``: whether a topic is compacted."""

    is_compacted: Callable[[str], bool]
    held: dict[SetKey, list] = field(default_factory=dict)

    def hold(self, totals) -> bool:
        """Keep a replica's totals back when it belongs to a set (True); False otherwise."""
        if totals.replica_set is None:
            return False
        self.held.setdefault(totals.replica_set, []).append(totals)
        return True

    def finish(self, merged, findings: list[Finding]) -> None:
        """Compare each set, add its findings, and merge its totals into ``merged``: transactions,
        producers and events from the kept replica only; a store's request counts from all."""
        for (topic, partition, _), members in sorted(self.held.items()):
            members.sort(key=lambda t: name_order(t.digest))
            comparison = compare_replicas([t.digest for t in members], self.is_compacted(topic))
            findings.extend(replica_findings(topic, partition, comparison))
            kept = next(t for t in members if t.digest is comparison.kept)
            merged.merge(kept)
            _producers_side_by_side(merged, kept, [t for t in members if t is not kept])
            for totals in members:
                if totals is not kept:
                    merged.requests += totals.requests
                    merged.bytes_fetched += totals.bytes_fetched
        self.held.clear()


def _producers_side_by_side(merged, kept, others: list) -> None:
    """SPEC section 6: where a replica's ``producers`` rows differ from the kept replica's, both
    are shown, each with its ``node_id`` (the kept replica's rows are the ones counted)."""
    kept_rows = {row["producer_id"]: row for row in kept.producer_rows}
    differing = [
        {**row, "node_id": totals.digest.name}
        for totals in others
        for row in totals.producer_rows
        if kept_rows.get(row["producer_id"]) != row
    ]
    if differing:
        for row in kept.producer_rows:
            row["node_id"] = kept.digest.name
        merged.producer_rows.extend(differing)


def merge_replica_findings(findings: list[Finding], discovery: Discovery, sets: dict[tuple, SetKey]) -> list[Finding]:
    """A finding that several replicas of a set give alike (the same identity but for the folder)
    is kept once, with ``details.node_ids``: each finding of a set's replica names its node."""
    if not sets:
        return findings
    folders = {p.display_path: p for p in discovery.partitions if p.key in sets}
    kept: dict[tuple, Finding] = {}
    out: list[Finding] = []
    for finding in findings:
        partition = folders.get(os.path.dirname(finding.segment)) if finding.segment else None
        if partition is None or partition.broker is None or finding.check.startswith("replica_"):
            out.append(finding)
            continue
        name = partition.broker.node_id if partition.broker.node_id is not None else partition.broker.log_dir
        identity = (sets[partition.key], fingerprint_identity(finding))
        first = kept.get(identity)
        if first is None:
            finding.details = {**finding.details, "node_ids": [name]}
            kept[identity] = finding
            out.append(finding)
        elif name not in first.details["node_ids"]:
            first.details["node_ids"].append(name)
    return out
