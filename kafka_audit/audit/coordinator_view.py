"""The transaction coordinator's view, joined into a scan on the driver (SPEC section 2,
``transactional_id`` and ``hanging_transaction.details.coordinator_state``).

When ``__transaction_state`` partitions are among the scanned data, their records are read in
log order (the coordinator's ``TransactionStateManager`` loads them the same way: the last
record of a transactional id wins) and each producer id is mapped to the transactional id and
the latest metadata the coordinator wrote for it. Every finding and ``producers`` row of that
producer id then carries the ``transactional_id``; an open or hanging transaction gets the
coordinator's state, partitions and timeout, which say what the coordinator will do about it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafka_audit.check_ids import CheckId
from kafka_audit.log.checkpoints import cluster_of
from kafka_audit.log.discovery import Discovery
from kafka_audit.log.internal_topics import read_transaction_log
from kafka_audit.log.log_names import TRANSACTION_STATE
from kafka_audit.record.problem import Problem
from kafka_audit.rules.findings import Finding, iso_time
from kafka_audit.rules.replay.transaction_version import CoordinatorFacts

_OPEN_CHECKS = (CheckId.HANGING_TRANSACTION, CheckId.OPEN_TRANSACTION)


@dataclass(slots=True)
class CoordinatorView:
    """(cluster, producer id) -> the coordinator's latest record for it (producer ids are a
    cluster's own: :func:`cluster_of`); where each scanned partition's cluster is; notes on what
    could not be read."""

    by_producer: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    partitions_read: int = 0
    # partition display path -> cluster, and (topic, partition) -> the clusters holding it.
    cluster_by_folder: dict[str, str] = field(default_factory=dict)
    clusters_by_partition: dict[tuple[str, int], set[str]] = field(default_factory=dict)

    def cluster(self, topic: str | None, partition: int | None, segment: str | None) -> str | None:
        """The cluster of a finding or row: by its segment's folder, else by its topic and
        partition when only one cluster holds them (None: unknown, nothing is joined)."""
        if segment is not None:
            folder = segment.rsplit("/", 1)[0] if "/" in segment else ""
            if folder in self.cluster_by_folder:
                return self.cluster_by_folder[folder]
        if topic is None or partition is None:
            return None
        clusters = self.clusters_by_partition.get((topic, partition), set())
        return next(iter(clusters)) if len(clusters) == 1 else None

    def record(self, cluster: str | None, producer_id: int | None) -> dict[str, Any] | None:
        if cluster is None or producer_id is None:
            return None
        return self.by_producer.get((cluster, producer_id))

    def transactional_id(self, cluster: str | None, producer_id: int | None) -> str | None:
        record = self.record(cluster, producer_id)
        return record["transactional_id"] if record else None

    def coordinator_state(self, cluster: str | None, producer_id: int) -> dict[str, Any] | None:
        """The fields of the coordinator's latest record for ``producer_id`` that say where its
        transaction stands (TransactionMetadata: state, epoch, partitions, timeout, times)."""
        record = self.record(cluster, producer_id)
        if record is None or record.get("tombstone"):
            return None
        return {
            "transactional_id": record["transactional_id"],
            "state": record["state"],
            "producer_epoch": record["producer_epoch"],
            "partitions": record["partitions"],
            "transaction_timeout_ms": record["transaction_timeout_ms"],
            "transaction_start_time": iso_time(record["start_timestamp"]),
            "last_update_time": iso_time(record["last_update_timestamp"]),
            "transaction_log_offset": record["offset"],
        }


def read_coordinator_view(discovery: Discovery) -> CoordinatorView:
    """Read the live segments of every scanned ``__transaction_state`` partition, each under its
    cluster."""
    view = CoordinatorView()
    if not any(p.topic == TRANSACTION_STATE for p in discovery.partitions):
        return view
    for partition in discovery.partitions:
        cluster = cluster_of(partition.path, discovery.cluster_ids, discovery.storage)
        view.cluster_by_folder[partition.display_path] = cluster
        view.clusters_by_partition.setdefault((partition.topic, partition.partition), set()).add(cluster)
        if partition.topic != TRANSACTION_STATE:
            continue
        view.partitions_read += 1
        for segment in sorted((s for s in partition.segments if s.state == "live"), key=lambda s: s.base_offset):
            try:
                for item in read_transaction_log(segment.path, discovery.storage):
                    if isinstance(item, Problem) or "error" in item or item.get("tombstone"):
                        continue  # the scan reports the segment's problems itself
                    view.by_producer[(cluster, item["producer_id"])] = item
            except (OSError, ValueError) as exc:
                view.notes.append(f"transactional ids: cannot read {segment.display_path} ({exc})")
    return view


def read_producer_facts(discovery: Discovery) -> dict[str, dict[int, CoordinatorFacts]]:
    """What every scanned ``__transaction_state`` record says per producer id, for the replay, by
    cluster (:func:`cluster_of`: producer ids are a cluster's own, so a scan of several clusters'
    log dirs joins each partition only to its own cluster's coordinator): the highest
    ``ClientTransactionVersion`` recorded (the tagged field is absent from the ``Empty`` record
    ``InitProducerId`` writes), and the latest timeout and ``NextProducerId``. Problems of the
    segments are the scan's to report; here a segment that cannot be read gives no facts."""
    facts: dict[str, dict[int, CoordinatorFacts]] = {}
    for partition in discovery.partitions:
        if partition.topic != TRANSACTION_STATE:
            continue
        mine = facts.setdefault(cluster_of(partition.path, discovery.cluster_ids, discovery.storage), {})
        for segment in sorted((s for s in partition.segments if s.state == "live"), key=lambda s: s.base_offset):
            try:
                for item in read_transaction_log(segment.path, discovery.storage):
                    if not isinstance(item, Problem) and "error" not in item and not item.get("tombstone"):
                        _merge_facts(mine, item)
            except (OSError, ValueError):
                continue  # read_coordinator_view notes it
    return facts


def _merge_facts(facts: dict[int, CoordinatorFacts], record: dict[str, Any]) -> None:
    pid = record["producer_id"]
    known = facts.get(pid)
    recorded = record.get("client_transaction_version")
    earlier = known.client_transaction_version if known is not None else None
    versions = [v for v in (recorded, earlier) if v is not None]
    next_id = record.get("next_producer_id")
    aborts = known.prepare_aborts if known is not None else ()
    if record["state"] == "PrepareAbort":
        aborts += ((record["producer_epoch"], record["start_timestamp"], record["last_update_timestamp"]),)
    inits = known.init_epochs if known is not None else frozenset()
    if record["state"] == "Empty":
        inits = inits | {record["producer_epoch"]}
    facts[pid] = CoordinatorFacts(
        record["transactional_id"],
        max(versions) if versions else None,
        record["transaction_timeout_ms"],
        next_id if next_id is not None and next_id >= 0 else (known.next_producer_id if known else -1),
        aborts,
        inits,
    )


def join_coordinator_view(
    view: CoordinatorView, findings: list[Finding], producers: list[dict[str, Any]], summary: dict[str, Any]
) -> None:
    """Fill ``transactional_id`` into the findings and producer rows, ``coordinator_state`` into
    the details of open and hanging transactions, and count the transactional ids in the summary
    (in place)."""
    summary["transactional_ids"] = len({(c, r["transactional_id"]) for (c, _), r in view.by_producer.items()})
    if not view.by_producer:
        return
    for finding in findings:
        cluster = view.cluster(finding.topic, finding.partition, finding.segment)
        finding.transactional_id = view.transactional_id(cluster, finding.producer_id)
        if finding.check in _OPEN_CHECKS and finding.producer_id is not None:
            state = view.coordinator_state(cluster, finding.producer_id)
            if state is not None:
                finding.details["coordinator_state"] = state
    for row in producers:
        cluster = view.cluster(row["topic"], row["partition"], None)
        row["transactional_id"] = view.transactional_id(cluster, row["producer_id"])
