"""``LeaderEpochFileCache`` (storage/internals/epoch): a replica's epoch lineage, the epochs and
the offsets at which each began, and ``endOffsetFor``, the answer to ``OffsetsForLeaderEpoch``."""

from __future__ import annotations

from collections.abc import Iterable

# OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET.
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    """The (epoch, start offset) entries of one replica, in epoch order, both strictly increasing."""

    def __init__(self, entries: Iterable[tuple[int, int]] = ()) -> None:
        self.entries: list[tuple[int, int]] = []
        for epoch, start in entries:
            self.assign(epoch, start)

    def assign(self, epoch: int, start_offset: int) -> None:
        """``assign``: nothing when the latest entry has this epoch at or below this offset
        (``isUpdateNeeded``); else the entries whose epoch or start offset is not below the new
        one's are dropped (``maybeTruncateNonMonotonicEntries``) and the entry is added."""
        if epoch < 0 or start_offset < 0:
            return
        if self.entries and self.entries[-1][0] == epoch and self.entries[-1][1] <= start_offset:
            return
        self.entries = [(e, s) for e, s in self.entries if e < epoch and s < start_offset]
        self.entries.append((epoch, start_offset))

    @property
    def latest_epoch(self) -> int | None:
        return self.entries[-1][0] if self.entries else None

    def epochs(self) -> list[int]:
        return [epoch for epoch, _ in self.entries]

    def end_offset_for(self, requested: int, log_end_offset: int) -> tuple[int, int]:
        """``endOffsetFor``: (the largest epoch at or below ``requested``, the start offset of the
        first epoch above it); the log end offset for the latest epoch; (requested, first start)
        below every epoch; undefined for an undefined epoch or one above every epoch."""
        if requested == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self.entries and self.entries[-1][0] == requested:
            return requested, log_end_offset
        higher = next(((e, s) for e, s in self.entries if e > requested), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = next(((e, s) for e, s in reversed(self.entries) if e <= requested), None)
        if floor is None:
            return requested, higher[1]
        return floor[0], higher[1]

    def truncate_from_end(self, end_offset: int) -> None:
        """``truncateFromEnd``: drop the entries starting at or after ``end_offset``."""
        if end_offset >= 0 and self.entries and self.entries[-1][1] >= end_offset:
            self.entries = [(e, s) for e, s in self.entries if s < end_offset]

    def truncate_from_start(self, start_offset: int) -> None:
        """``truncateFromStart``: entries at or before ``start_offset`` go, the last of them kept
        with ``start_offset`` as its start (retention moved the log start)."""
        if start_offset < 0 or not self.entries or self.entries[0][1] >= start_offset:
            return
        before = [(e, s) for e, s in self.entries if s <= start_offset]
        after = [(e, s) for e, s in self.entries if s > start_offset]
        self.entries = [(before[-1][0], start_offset), *after] if before else after

    def copy(self) -> LeaderEpochCache:
        clone = LeaderEpochCache()
        clone.entries = list(self.entries)
        return clone


def lineage_from_batches(epochs_at: Iterable[tuple[int, int]]) -> LeaderEpochCache:
    """A lineage rebuilt from the batches' (partition leader epoch, base offset) in log order, as
    ``UnifiedLog`` rebuilds a missing checkpoint (``LogLoader``: ``assign`` per batch with an epoch)."""
    cache = LeaderEpochCache()
    for epoch, base_offset in epochs_at:
        if epoch >= 0:
            cache.assign(epoch, base_offset)
    return cache
