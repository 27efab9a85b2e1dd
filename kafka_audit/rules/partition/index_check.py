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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from kafka_audit.check_ids import CheckId
from kafka_audit.log.index_files import OffsetPosition, TimestampOffset
from kafka_audit.record.batch_walk import COLUMN_NAMES
from kafka_audit.rules.batch_summary import BatchSummary, RunSlice
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

# The fields an index lookup reads: as a run's columns (record.batch_walk.COLUMNS), of a summary.
_LOOKUP = ("position", "base_offset", "last_offset", "max_timestamp")
_FIELDS = tuple(attrgetter(name) for name in _LOOKUP)


@dataclass(slots=True)
class SegmentBatches:
    """The valid batches of one segment, for index lookups: by position (``by_position``: the
    index of the batch starting there) and by offset, in base offset order, their fields as
    lists; :meth:`summary` makes one a :class:`BatchSummary` (for a finding). ``count``: every
    batch, valid or not; ``end_offset``: the offset after the last one in log order (None: none)."""

    by_position: dict[int, int]
    base_offsets: list[int]
    last_offsets: list[int]
    max_timestamps: list[int]
    ends: set[int]
    count: int
    end_offset: int | None
    _kept: list[list[BatchSummary] | RunSlice]  # the parts of the lists, each from _starts[i] on
    _starts: list[int]
    _order: list[int] | None

    @classmethod
    def of(cls, batches: Sequence[BatchSummary | RunSlice]) -> SegmentBatches:
        """From a segment's batches in log order: summaries, and slices of runs as columns (read
        at C speed, never made objects)."""
        fields: tuple[list[int], list[int], list[int], list[int]] = ([], [], [], [])
        kept: list[list[BatchSummary] | RunSlice] = []
        starts: list[int] = []
        count, end_offset = 0, None
        for part in _grouped(batches):
            if isinstance(part, RunSlice):
                named = dict(zip(COLUMN_NAMES, part.run.batches.columns()))
                starts.append(len(fields[0]))
                kept.append(part)
                for values, name in zip(fields, _LOOKUP):
                    values.extend(named[name][part.start : part.stop].tolist())
                count += part.stop - part.start
                end_offset = fields[2][-1] + 1
            else:
                count += len(part)
                end_offset = part[-1].last_offset + 1
                valid = [batch for batch in part if batch.valid]
                starts.append(len(fields[0]))
                kept.append(valid)
                for values, field in zip(fields, _FIELDS):
                    values.extend(map(field, valid))
        positions, bases, lasts, stamps = fields
        order = None
        if bases != sorted(bases):  # in order (the common case), told at C speed
            order = sorted(range(len(bases)), key=bases.__getitem__)  # stable: as sorted() by base offset
            positions, bases, lasts, stamps = ([values[i] for i in order] for values in fields)
        return cls(
            dict(zip(positions, range(len(positions)))), bases, lasts, stamps, set(lasts), count, end_offset, kept, starts,
            order,
        )

    def containing(self, offset: int) -> int | None:
        """The batch holding ``offset`` (its index), None: none."""
        at = bisect.bisect_right(self.base_offsets, offset) - 1
        if at >= 0 and self.base_offsets[at] <= offset <= self.last_offsets[at]:
            return at
        return None

    def summary(self, at: int) -> BatchSummary:
        """Batch ``at`` (an index of the lists) as a summary."""
        index = self._order[at] if self._order is not None else at
        which = bisect.bisect_right(self._starts, index) - 1
        part, row = self._kept[which], index - self._starts[which]
        if isinstance(part, RunSlice):
            return part.run.summary(tuple(column[part.start + row] for column in part.run.batches.columns()))
        return part[row]


def _grouped(batches: Sequence[BatchSummary | RunSlice]) -> Iterator[RunSlice | list[BatchSummary]]:
    """``batches`` as slices of runs that are all valid, and lists of the summaries between them
    (a slice with an invalid batch read as summaries)."""
    pending: list[BatchSummary] = []
    for part in batches:
        if not isinstance(part, RunSlice):
            pending.append(part)
        elif _all_valid(part):
            if pending:
                yield pending
                pending = []
            yield part
        else:
            pending.extend(part.summaries())
    if pending:
        yield pending


def _all_valid(part: RunSlice) -> bool:
    """Whether every batch of the slice is valid (as the compiled walk's always are)."""
    valid = part.run.batches.column("valid")[part.start : part.stop]
    return min(valid, default=1) == 1


def verify_offset_index(
    entries: list[OffsetPosition], log: SegmentBatches, where: dict[str, Any], index_path: str
) -> list[Finding]:
    """``entries`` have ``offset`` (absolute) and ``position``; ``where`` names topic/partition/segment."""
    found = _IndexFindings(where, index_path)
    by_position, ends, count = log.by_position, log.ends, len(entries)
    bases, lasts, stamps = log.base_offsets, log.last_offsets, log.max_timestamps
    previous = None
    for number, entry in enumerate(entries):
        at = by_position.get(entry.position)
        problem = None
        if previous is not None and (entry.offset <= previous.offset or entry.position <= previous.position):
            problem = (
                f"Index entry {number} (offset {entry.offset}, position {entry.position}) does not follow "
                f"entry {number - 1} (offset {previous.offset}, position {previous.position})"
            )
        elif at is None:
            problem = f"Index offset {entry.offset} points to position {entry.position}, where no batch starts"
        elif entry.offset < lasts[at] or entry.offset not in ends:
            problem = (
                f"Index offset {entry.offset} at position {entry.position} does not match the log: "
                f"the batch there ends at offset {lasts[at]}"
            )
        elif number + 1 < count:
            following = by_position.get(entries[number + 1].position)
            if following is not None and entry.offset >= bases[following]:
                problem = (
                    f"Index offset {entry.offset} at position {entry.position} reaches into the next entry's "
                    f"batch at offset {bases[following]}"
                )
        if problem:
            # Without a batch at the position, the time concerned is that of the batch holding the offset.
            holder = log.containing(entry.offset) if at is None else None
            timestamp = stamps[holder] if holder is not None and stamps[holder] >= 0 else None
            batch = log.summary(at) if at is not None else None
            found.add(
                problem, {"entry": number}, position=entry.position, offset=entry.offset, batch=batch, timestamp=timestamp
            )
        previous = entry
    return found.close()


def verify_time_index(entries: list[TimestampOffset], log: SegmentBatches, where: dict[str, Any], index_path: str) -> list[Finding]:
    """``entries`` have ``timestamp`` and ``offset`` (absolute)."""
    found = _IndexFindings(where, index_path)
    stamps = log.max_timestamps
    previous = None
    for number, entry in enumerate(entries):
        at = log.containing(entry.offset)
        problem = None
        if previous is not None and entry.timestamp <= previous.timestamp:
            problem = (
                f"Time index timestamp {entry.timestamp} at entry {number} is not above the previous "
                f"entry's {previous.timestamp}"
            )
        elif at is None:
            problem = f"Time index offset {entry.offset} (timestamp {entry.timestamp}) is in no batch of the log"
        elif stamps[at] != entry.timestamp:
            problem = (
                f"Time index timestamp {entry.timestamp} for offset {entry.offset} does not match the max "
                f"timestamp {stamps[at]} of its batch"
            )
        if problem:
            # Without a batch at the offset, the time concerned is the entry's own.
            timestamp = entry.timestamp if at is None and entry.timestamp >= 0 else None
            batch = log.summary(at) if at is not None else None
            found.add(
                problem, {"entry": number, "timestamp": entry.timestamp}, offset=entry.offset, batch=batch, timestamp=timestamp
            )
        previous = entry
    return found.close()
