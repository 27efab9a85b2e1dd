"""Where a follower truncates before it follows a leader: ``AbstractFetcherThread``'s truncation
(KIP-101, and KIP-279's iterative case), run offline on two replicas' lineages.

The follower asks for the end offset of its latest epoch (``OffsetsForLeaderEpoch``); the leader
answers with ``endOffsetFor`` (:class:`LeaderEpochCache`). When the follower knows the epoch of
the answer, it truncates to min(its own end offset of that epoch, the leader's answer, its log
end) and is done; when it does not, it truncates to the end of its largest epoch below that one
and asks again (``getOffsetTruncationState``). ``UnifiedLog.truncateTo`` then drops every batch
from that offset on.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_audit.rules.replication.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochCache


@dataclass(frozen=True, slots=True)
class EpochLog:
    """One replica as the fetcher sees it: its lineage, log end offset and high watermark."""

    lineage: LeaderEpochCache
    log_end_offset: int
    high_watermark: int | None = None


def truncation_offset(follower: EpochLog, leader: EpochLog) -> int:
    """The offset ``follower`` truncates to before it fetches from ``leader``: its log end
    offset when nothing is truncated. A follower without epochs truncates to its high watermark
    (``truncateToHighWatermark``); a leader that knows no such epoch answers undefined, and the
    follower then keeps its fetch offset (its log end here)."""
    lineage = follower.lineage.copy()
    end = follower.log_end_offset
    # Each round drops at least the follower's latest epoch: bounded by its epoch count.
    for _ in range(len(lineage.entries) + 1):
        latest = lineage.latest_epoch
        if latest is None:
            hw = follower.high_watermark
            return min(end, hw) if hw is not None else end
        leader_epoch, leader_end = leader.lineage.end_offset_for(latest, leader.log_end_offset)
        if leader_end == UNDEFINED_EPOCH_OFFSET:
            return end
        if leader_epoch == UNDEFINED_EPOCH:
            return min(leader_end, end)
        own_epoch, own_end = lineage.end_offset_for(leader_epoch, end)
        if own_end == UNDEFINED_EPOCH_OFFSET:
            # The follower tracked no epoch that early: truncate to the leader's offset.
            return min(leader_end, end)
        if own_epoch != leader_epoch:
            # KIP-279: an epoch the follower does not know; truncate to the end of its largest
            # epoch below it, and ask again with the epoch that is then its latest.
            end = min(own_end, end)
            lineage.truncate_from_end(end)
            continue
        return min(own_end, leader_end, end)
    return end
