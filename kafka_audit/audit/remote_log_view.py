"""``__remote_log_metadata`` joined into a scan on the driver (SPEC section 5): the remote objects
and local logs discovery found, set against each remote segment's latest metadata state."""

from __future__ import annotations

from kafka_audit.log.discovery import Discovery
from kafka_audit.log.log_names import LIVE
from kafka_audit.rules.findings import Finding
from kafka_audit.rules.partition.remote_log import RemoteObject, remote_log_findings


def remote_log_view(discovery: Discovery) -> list[Finding]:
    """The findings of the tiered-storage checks, when ``__remote_log_metadata`` was scanned."""
    if discovery.remote_log is None:
        return []
    objects: dict[str, RemoteObject] = {}
    scanned: set[tuple[str, int]] = set()
    local_starts: dict[tuple[str, int], int] = {}
    for partition in discovery.partitions:
        key = (partition.topic, partition.partition)
        local = [s.base_offset for s in partition.segments if s.remote_id is None and s.state == LIVE]
        if partition.local_log_start is not None:
            local_starts[key] = partition.local_log_start
        elif local and not partition.remote and partition.kind == LIVE:
            local_starts[key] = min(local)
        for segment in partition.segments:
            if segment.remote_id is not None:
                scanned.add(key)
                objects[segment.remote_id] = RemoteObject(segment.display_path, segment.size, segment.remote_txn_index)
    return remote_log_findings(discovery.remote_log.segments.values(), objects, scanned, local_starts)
