"""The ``replica_divergence``, ``replica_truncation`` and ``replica_lag`` findings of one partition's
:class:`Comparison` (SPEC section 6), each with its remedy (SPEC section 3)."""

from __future__ import annotations

import shlex
from typing import Any

from kafka_audit.rules.catalogue import TRUNCATION_ABOVE_HIGH_WATERMARK, CheckId
from kafka_audit.rules.findings import Finding, iso_time, make_finding
from kafka_audit.rules.replication.replica_compare import BatchDigest, Comparison, ReplicaDigest, Truncation, latest_epoch

_REFERENCES = ["KIP-101", "KIP-279", "KIP-320", "Kafka docs: unclean.leader.election.enable", "Kafka docs: Replication"]


def replica_findings(topic: str, partition: int, comparison: Comparison) -> list[Finding]:
    """One divergence finding per partition, one truncation finding per replica that drops
    records, one lag finding per replica that is merely behind."""
    common = {
        "replicas": [_replica_row(r) for r in comparison.replicas],
        "kept_replica": comparison.kept.name,
    }
    where = {"topic": topic, "partition": partition}
    found: list[Finding] = []
    if comparison.diverged_at is not None:
        found.append(_divergence(where, common, comparison, comparison.diverged_at))
    found.extend(_truncation(where, common, comparison, t) for t in comparison.truncations)
    found.extend(_lag(where, common, comparison, r) for r in comparison.lagging)
    return found


def _replica_row(replica: ReplicaDigest) -> dict[str, Any]:
    return {
        "node_id": replica.name,
        "log_dir": replica.log_dir,
        "log_end_offset": replica.log_end_offset,
        "latest_epoch": latest_epoch(replica),
        "high_watermark": replica.high_watermark,
    }


def _divergence(where: dict[str, Any], common: dict[str, Any], comparison: Comparison, offset: int) -> Finding:
    kept = comparison.kept
    epochs = []
    for replica in comparison.replicas:
        held = replica.batch_at(offset)
        epochs.append({"node_id": replica.name, "leader_epoch": held.leader_epoch if held is not None else None})
    held = kept.batch_at(offset)
    parted = ", ".join(str(e["node_id"]) for e in epochs if e["node_id"] != kept.name)
    remedy = {
        "summary": (
            f"The replicas hold different records from offset {offset}: Kafka keeps broker {kept.name}'s "
            f"(the highest leader epoch) and the others truncate theirs when they follow it; compare both "
            f"copies at that offset before any broker restarts and truncates."
        ),
        "commands": [_dump(r, offset, None) for r in comparison.replicas if r.batch_at(offset) is not None],
        "loses": "Nothing yet: the copies still hold both lineages; a broker that rejoins truncates its own.",
        "references": _REFERENCES,
    }
    return make_finding(
        CheckId.REPLICA_DIVERGENCE,
        f"Replicas of {where['topic']}-{where['partition']} diverge at offset {offset}: broker {kept.name} "
        f"(kept, highest leader epoch) and broker(s) {parted} hold different batches there",
        **where,
        segment=kept.segments[held.segment] if held is not None else None,
        position=held.position if held is not None else None,
        offset=offset,
        timestamp=held.max_timestamp if held is not None and held.max_timestamp >= 0 else None,
        details={**common, "diverged_at": offset, "epochs": epochs, "remedy": remedy},
    )


def _truncation(where: dict[str, Any], common: dict[str, Any], comparison: Comparison, truncation: Truncation) -> Finding:
    replica, batches = truncation.replica, truncation.batches
    first, last = truncation.truncate_to, batches[-1].last_offset
    records = sum(b.record_count for b in batches)
    stamps = [b.max_timestamp for b in batches if b.max_timestamp >= 0]
    producers = sorted({b.producer_id for b in batches if b.producer_id >= 0})
    below = truncation.below_high_watermark
    head = batches[0]
    details = {
        **common,
        "node_id": replica.name,
        "truncate_to": first,
        "first_offset": first,
        "last_offset": last,
        "records": records,
        "leader_epochs": sorted({b.leader_epoch for b in batches}),
        "producer_ids": producers,
        "first_timestamp": min(stamps, default=None),
        "last_timestamp": max(stamps, default=None),
        "below_high_watermark": below,
        "remedy": _truncation_remedy(where, comparison, truncation, records, producers),
    }
    told = "below its high watermark: committed records are lost" if below else "above every high watermark: acks=1 or unacknowledged writes"
    return make_finding(
        CheckId.REPLICA_TRUNCATION,
        f"Broker {replica.name} truncates {where['topic']}-{where['partition']} to offset {first} when it follows "
        f"broker {comparison.kept.name}: {records} record(s) at offsets {first}-{last} are dropped, {told}",
        **where,
        segment=replica.segments[head.segment],
        position=head.position,
        offset=first,
        timestamp=max(stamps, default=None),
        details=details,
        spec=None if below else TRUNCATION_ABOVE_HIGH_WATERMARK,
    )


def _truncation_remedy(where: dict[str, Any], comparison: Comparison, truncation: Truncation, records: int,
                       producers: list[int]) -> dict[str, Any]:
    first, last = truncation.truncate_to, truncation.batches[-1].last_offset
    stamps = [b.max_timestamp for b in truncation.batches if b.max_timestamp >= 0]
    span = f" written {iso_time(min(stamps))} to {iso_time(max(stamps))}" if stamps else ""
    topic = where["topic"]
    return {
        "summary": (
            f"{records} record(s) at offsets {first}-{last} of {topic}-{where['partition']}{span} (producer ids "
            f"{producers or 'none'}) exist only in broker {truncation.replica.name}'s copy; consumers may have read "
            f"them, and the kept replica holds other records at those offsets. Save them from this copy and produce "
            f"them again."
        ),
        "commands": [
            _dump(truncation.replica, first, last),
            f"kafka-console-producer.sh --bootstrap-server <broker> --topic {shlex.quote(topic)} "
            f"--property parse.key=true --property key.separator=$'\\t' < records-{first}-{last}.txt",
            f"kafka-consumer-groups.sh --bootstrap-server <broker> --describe --all-groups  "
            f"# groups whose committed offset on {topic}-{where['partition']} is above {first} read records that no longer exist",
        ],
        "loses": (
            "Produced again, the records get new offsets after the kept log's end; consumers that read the lost "
            "ones see other records at the same offsets, and ordering against records written since is not kept. "
            "Headers are not re-produced this way, and a key or value that is not UTF-8 is dumped as key_b64/value_b64 "
            "and must be decoded first."
        ),
        "references": _REFERENCES,
    }


def _lag(where: dict[str, Any], common: dict[str, Any], comparison: Comparison, replica: ReplicaDigest) -> Finding:
    behind = comparison.kept.log_end_offset - replica.log_end_offset
    remedy = {
        "summary": f"Broker {replica.name} is {behind} offset(s) behind; it catches up by fetching from the leader, nothing is lost.",
        "commands": ["kafka-topics.sh --bootstrap-server <broker> --describe --under-replicated-partitions"],
        "loses": "Nothing.",
        "references": ["Kafka docs: Replication (replica.lag.time.max.ms)"],
    }
    return make_finding(
        CheckId.REPLICA_LAG,
        f"Broker {replica.name}'s copy of {where['topic']}-{where['partition']} ends at offset {replica.log_end_offset}, "
        f"{behind} behind broker {comparison.kept.name} (a prefix of its log)",
        **where,
        # Where its log ends: its last segment (a location for CI formats).
        segment=replica.segments[replica.batches[-1].segment] if replica.batches else None,
        offset=replica.log_end_offset,
        details={**common, "node_id": replica.name, "log_end_offset": replica.log_end_offset, "behind": behind,
                 "remedy": remedy},
    )


def _dump(replica: ReplicaDigest, first: int, last: int | None) -> str:
    """``kafka-audit dump`` of the segment files holding offsets ``first``..``last`` of a replica,
    its batches in that range kept (``jq``)."""
    held: list[BatchDigest] = [b for b in replica.batches if b.last_offset >= first and (last is None or b.base_offset <= last)]
    if last is None:
        held = held[:1]
    files = " ".join(shlex.quote(f) for f in sorted({replica.segments[b.segment] for b in held}))
    if last is None:
        return (f"kafka-audit dump {files} --records --format json "
                f"| jq -c 'select(.last_offset >= {first} and .base_offset <= {first})'")
    # The records themselves, key and value tab-separated, for kafka-console-producer.sh.
    return (
        f"kafka-audit dump {files} --print-data --format json | jq -r 'select(.last_offset >= {first} and "
        f".base_offset <= {last}) | .records[] | select(.offset >= {first} and .offset <= {last}) | "
        f"[.key // \"\", .value // \"\"] | @tsv' > records-{first}-{last}.txt"
    )
