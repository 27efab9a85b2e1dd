"""``.index`` and ``.timeindex`` against the log, in the spirit of DumpLogSegments ``--verify-index-only``.

LogSegment.append writes an offset index entry ``(largestOffset, physicalPosition)`` for a
whole append (every ``index.interval.bytes``): the position where the append starts and the
last offset of its last batch. A leader appends one batch per produce request, so the entry
names that batch's last offset, which is what DumpLogSegments compares; a follower appends
several fetched batches at once, so the entry may name a later batch's last offset. We check
what an index lookup (OffsetIndex.lookup + FileRecords.searchForOffsetWithSize) relies on,
which holds in both cases:

- the position is the start of a batch, and the offset is the last offset of a batch at or
  after it, not below that first batch's last offset;
- the offset is below the first offset found at the next entry's position;
- entries increase in offset and position (DumpLogSegments' "non-consecutive" pairs).

A time index entry ``(timestamp, offset)`` (TimeIndex.maybeAppend of the segment's max
timestamp so far and the offset it was seen at) must point into a batch whose max timestamp
equals it, and timestamps must increase (DumpLogSegments' "out of order" timestamps).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from kafka_audit.check_ids import CheckId
from kafka_audit.log.index_files import OffsetPosition, TimestampOffset
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.findings import Finding, make_finding

# Entries of one index file reported one by one; the rest are counted in one last finding. A
# garbage index of a few MiB would otherwise give millions of findings (DumpLogSegments lists
# every mismatch; a broker rebuilds an index it finds corrupt, OffsetIndex.sanityCheck).
MAX_FINDINGS_PER_INDEX = 100


class _IndexFindings:
    """The ``index_mismatch`` findings of one index file: the first :data:`MAX_FINDINGS_PER_INDEX`
    listed, the rest counted in one last finding."""

    def __init__(self, where: dict[str, Any], index_path: str) -> None:
        self.where = where
        self.index_path = index_path
        self.found: list[Finding] = []
        self.more = 0

    def add(self, message: str, details: dict[str, int], **fields: Any) -> None:
        if len(self.found) >= MAX_FINDINGS_PER_INDEX:
            self.more += 1
            return
        self.found.append(
            make_finding(
                CheckId.INDEX_MISMATCH, message, **self.where, **fields, details={"index_file": self.index_path, **details}
            )
        )

    def close(self) -> list[Finding]:
        if self.more:
            self.found.append(
                make_finding(
                    CheckId.INDEX_MISMATCH,
                    f"{self.more} more entries of {self.index_path} disagree with the log (not listed one by one)",
                    **self.where,
                    details={"index_file": self.index_path, "more_entries": self.more},
                )
            )
        return self.found

_BASE_OFFSET, _POSITION, _LAST_OFFSET = attrgetter("base_offset"), attrgetter("position"), attrgetter("last_offset")


@dataclass(slots=True)
class SegmentBatches:
    """The valid batches of one segment, for index lookups: by position, and by offset."""

    by_position: dict[int, BatchSummary]
    base_offsets: list[int]
    batches: list[BatchSummary]
    last_offsets: set[int]

    @classmethod
    def of(cls, batches: list[BatchSummary]) -> SegmentBatches:
        ordered = sorted([b for b in batches if b.valid], key=_BASE_OFFSET)
        return cls(
            dict(zip(map(_POSITION, ordered), ordered)),
            list(map(_BASE_OFFSET, ordered)),
            ordered,
            set(map(_LAST_OFFSET, ordered)),
        )

    def containing(self, offset: int) -> BatchSummary | None:
        at = bisect.bisect_right(self.base_offsets, offset) - 1
        if at >= 0:
            batch = self.batches[at]
            if batch.base_offset <= offset <= batch.last_offset:
                return batch
        return None


def verify_offset_index(
    entries: list[OffsetPosition], log: SegmentBatches, where: dict[str, Any], index_path: str
) -> list[Finding]:
    """``entries`` have ``offset`` (absolute) and ``position``; ``where`` names topic/partition/segment."""
    found = _IndexFindings(where, index_path)
    by_position, last_offsets, count = log.by_position, log.last_offsets, len(entries)
    previous = None
    for number, entry in enumerate(entries):
        batch = by_position.get(entry.position)
        problem = None
        if previous is not None and (entry.offset <= previous.offset or entry.position <= previous.position):
            problem = (
                f"Index entry {number} (offset {entry.offset}, position {entry.position}) does not follow "
                f"entry {number - 1} (offset {previous.offset}, position {previous.position})"
            )
        elif batch is None:
            problem = f"Index offset {entry.offset} points to position {entry.position}, where no batch starts"
        elif entry.offset < batch.last_offset or entry.offset not in last_offsets:
            problem = (
                f"Index offset {entry.offset} at position {entry.position} does not match the log: "
                f"the batch there ends at offset {batch.last_offset}"
            )
        elif number + 1 < count:
            following = by_position.get(entries[number + 1].position)
            if following is not None and entry.offset >= following.base_offset:
                problem = (
                    f"Index offset {entry.offset} at position {entry.position} reaches into the next entry's "
                    f"batch at offset {following.base_offset}"
                )
        if problem:
            # Without a batch at the position, the time concerned is that of the batch holding the offset.
            holder = log.containing(entry.offset) if batch is None else None
            timestamp = holder.max_timestamp if holder is not None and holder.max_timestamp >= 0 else None
            found.add(
                problem, {"entry": number}, position=entry.position, offset=entry.offset, batch=batch, timestamp=timestamp
            )
        previous = entry
    return found.close()


def verify_time_index(entries: list[TimestampOffset], log: SegmentBatches, where: dict[str, Any], index_path: str) -> list[Finding]:
    """``entries`` have ``timestamp`` and ``offset`` (absolute)."""
    found = _IndexFindings(where, index_path)
    previous = None
    for number, entry in enumerate(entries):
        batch = log.containing(entry.offset)
        problem = None
        if previous is not None and entry.timestamp <= previous.timestamp:
            problem = (
                f"Time index timestamp {entry.timestamp} at entry {number} is not above the previous "
                f"entry's {previous.timestamp}"
            )
        elif batch is None:
            problem = f"Time index offset {entry.offset} (timestamp {entry.timestamp}) is in no batch of the log"
        elif batch.max_timestamp != entry.timestamp:
            problem = (
                f"Time index timestamp {entry.timestamp} for offset {entry.offset} does not match the max "
                f"timestamp {batch.max_timestamp} of its batch"
            )
        if problem:
            # Without a batch at the offset, the time concerned is the entry's own.
            timestamp = entry.timestamp if batch is None and entry.timestamp >= 0 else None
            found.add(
                problem, {"entry": number, "timestamp": entry.timestamp}, offset=entry.offset, batch=batch, timestamp=timestamp
            )
        previous = entry
    return found.close()
