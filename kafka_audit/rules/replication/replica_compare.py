"""Replicas of one partition compared by their batch summaries (SPEC section 6), never payloads.

Two replicas agree on an offset when their batches there have the same offsets, CRC, producer
fields and partition leader epoch (``DefaultRecordBatch``'s CRC covers the attributes through the
records, not the base offset nor the partition leader epoch). Only offsets both hold are compared:
above both log starts (retention runs on each broker's clock) and, in compacted partitions, above
both ``cleaner-offset-checkpoint`` entries (each cleaner rewrites batches on its own schedule).
Segment roll points and index files may differ: batches are compared, not files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from kafka_audit.rules.replication.fetcher_truncation import EpochLog, truncation_offset
from kafka_audit.rules.replication.leader_epoch_cache import LeaderEpochCache, lineage_from_batches


class BatchDigest(NamedTuple):
    """What one batch is compared by (the first seven fields), and what a lost batch tells."""

    base_offset: int
    last_offset: int
    leader_epoch: int
    crc: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    max_timestamp: int
    segment: int  # index into ReplicaDigest.segments
    position: int


_COMPARED = 7


@dataclass(slots=True)
class ReplicaDigest:
    """One replica of a partition: its broker, checkpoints and the digests of its live batches
    in log order. ``name`` labels it: the node id, or the log dir's folder without meta.properties."""

    node_id: int | None
    log_dir: str
    high_watermark: int | None
    cleaner_offset: int | None
    log_start_offset: int
    checkpoint_epochs: list[tuple[int, int]] | None
    batches: list[BatchDigest] = field(default_factory=list)
    segments: list[str] = field(default_factory=list)

    @property
    def name(self) -> int | str:
        return self.node_id if self.node_id is not None else self.log_dir

    @property
    def log_end_offset(self) -> int:
        return self.batches[-1].last_offset + 1 if self.batches else self.log_start_offset

    def lineage(self) -> LeaderEpochCache:
        """The ``leader-epoch-checkpoint``, or the batches' epochs where it is missing or empty
        (``LogSegment.recover`` assigns each recovered batch's epoch: a log with epochs has entries)."""
        if self.checkpoint_epochs:
            return LeaderEpochCache(self.checkpoint_epochs)
        return lineage_from_batches((b.leader_epoch, b.base_offset) for b in self.batches)

    def epoch_log(self) -> EpochLog:
        return EpochLog(self.lineage(), self.log_end_offset, self.high_watermark)

    def index_from(self, offset: int) -> int:
        """The index of the first batch whose last offset is at or above ``offset``."""
        low, high = 0, len(self.batches)
        while low < high:
            middle = (low + high) // 2
            if self.batches[middle].last_offset < offset:
                low = middle + 1
            else:
                high = middle
        return low

    def batch_at(self, offset: int) -> BatchDigest | None:
        """The batch holding ``offset`` (batches are in offset order)."""
        low = self.index_from(offset)
        found = self.batches[low] if low < len(self.batches) else None
        return found if found is not None and found.base_offset <= offset else None


def same_batch(a: BatchDigest, b: BatchDigest) -> bool:
    return a[:_COMPARED] == b[:_COMPARED]


def latest_epoch(replica: ReplicaDigest) -> int:
    latest = replica.lineage().latest_epoch
    return -1 if latest is None else latest


def kept_replica(replicas: list[ReplicaDigest]) -> ReplicaDigest:
    """SPEC section 6: the replica whose lineage holds the highest leader epoch (ties: the longest
    log; equals are equally kept, the first by name stands for them)."""
    return min(replicas, key=lambda r: (-latest_epoch(r), -r.log_end_offset, *name_order(r)))


def name_order(replica: ReplicaDigest) -> tuple[int, int, str]:
    """Replicas by node id, then those named by their folder."""
    node = replica.node_id
    return (0, node, "") if node is not None else (1, 0, replica.log_dir)


def first_difference(a: ReplicaDigest, b: ReplicaDigest, compacted: bool) -> int | None:
    """The first offset both replicas hold at which their batches differ, or None."""
    low = max(a.log_start_offset, b.log_start_offset)
    if compacted:
        low = max(low, a.cleaner_offset or 0, b.cleaner_offset or 0)
    high = min(a.log_end_offset, b.log_end_offset)
    # Plain indexing and one dict: this walks every batch of both replicas.
    by_base = {d[0]: d[:_COMPARED] for d in b.batches if d[0] >= low and d[1] < high}
    pop = by_base.pop
    first: int | None = None
    for digest in a.batches:
        base = digest[0]
        if base < low or digest[1] >= high:
            continue
        if pop(base, None) != digest[:_COMPARED]:
            first = base
            break
    left = min(by_base, default=None) if first is None else min((o for o in by_base if o < first), default=None)
    return left if left is not None and (first is None or left < first) else first


@dataclass(frozen=True, slots=True)
class Truncation:
    """The batches a replica drops when it follows the kept one (``UnifiedLog.truncateTo``)."""

    replica: ReplicaDigest
    truncate_to: int
    batches: list[BatchDigest]
    below_high_watermark: bool


@dataclass(slots=True)
class Comparison:
    """What the replicas of one partition tell, side by side."""

    replicas: list[ReplicaDigest]
    kept: ReplicaDigest
    diverged_at: int | None = None
    truncations: list[Truncation] = field(default_factory=list)
    lagging: list[ReplicaDigest] = field(default_factory=list)


def compare_replicas(replicas: list[ReplicaDigest], compacted: bool) -> Comparison:
    """The kept replica, where the others' lineages part from it, what each truncates (the fetcher's
    offset, when some batch from there on is not the kept replica's), and which are behind."""
    kept = kept_replica(replicas)
    result = Comparison(replicas, kept)
    leader = kept.epoch_log()
    kept_by_base = {d.base_offset: d for d in kept.batches}
    for replica in replicas:
        if replica is kept:
            continue
        differs = first_difference(replica, kept, compacted)
        if differs is not None and (result.diverged_at is None or differs < result.diverged_at):
            result.diverged_at = differs
        offset = truncation_offset(replica.epoch_log(), leader)
        dropped = replica.batches[replica.index_from(offset):]
        if any(not _kept_holds(kept_by_base, d) for d in dropped):
            result.truncations.append(Truncation(replica, offset, dropped, _below_high_watermark(replicas, replica, dropped[0], offset)))
        elif differs is None and replica.log_end_offset < kept.log_end_offset:
            result.lagging.append(replica)
    return result


def _kept_holds(kept_by_base: dict[int, BatchDigest], digest: BatchDigest) -> bool:
    other = kept_by_base.get(digest.base_offset)
    return other is not None and same_batch(other, digest)


def _below_high_watermark(replicas: list[ReplicaDigest], replica: ReplicaDigest, first: BatchDigest, offset: int) -> bool:
    """SPEC: the highest high watermark checkpointed by a replica holding those same batches (the
    first one dropped, the same on it) was above the first offset dropped: committed records lost."""
    marks = [
        r.high_watermark
        for r in replicas
        if r.high_watermark is not None
        and (r is replica or ((held := r.batch_at(first.base_offset)) is not None and same_batch(held, first)))
    ]
    return bool(marks) and max(marks) > offset
