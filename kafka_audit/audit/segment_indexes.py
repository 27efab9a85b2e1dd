"""A segment's sidecar files checked against its batches in the partition step: the offset and
time indexes (``DumpLogSegments --verify-index-only``), and how a sidecar that cannot be read as
its format says becomes a finding of that sidecar's check."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kafka_audit.io.local_file import unchanged
from kafka_audit.io.rsm_objects import is_segment_log
from kafka_audit.io.storage import StorageSettings, is_remote, local_path
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.index_files import OFFSET_INDEX, TIME_INDEX
from kafka_audit.log.sidecar_file import MAX_SIDECAR_BYTES
from kafka_audit.record.file_records import FileRecords
from kafka_audit.rules.batch_summary import BatchSummary, RunSlice
from kafka_audit.rules.findings import Finding, make_finding
from kafka_audit.rules.partition.index_check import SegmentBatches, verify_offset_index, verify_time_index


def verify_indexes(
    index: str | None,
    time_index: str | None,
    base_offset: int,
    where: dict,
    batches: Sequence[BatchSummary | RunSlice],
    newest_size: int | None = None,
    storage: StorageContext | None = None,
) -> list[Finding]:
    """A live segment's ``.index`` and ``.timeindex`` against its batches (DumpLogSegments
    ``--verify-index-only``); ``where`` holds topic, partition and segment. ``newest_size``: the
    listed size of the partition's newest segment, whose indexes a live broker keeps appending to
    after the listing (LogSegment.append writes the log, then the index): its entries at or past
    what was read are not checked (SPEC incomplete_tail). ``storage``: the request's."""
    segment = where["segment"]
    log = SegmentBatches.of(batches)  # a run's slice read as columns
    found: list[Finding] = []
    for path, extension, reader, verify in (
        (index, ".index", OFFSET_INDEX.read, verify_offset_index),
        (time_index, ".timeindex", TIME_INDEX.read, verify_time_index),
    ):
        if not path:
            continue
        parsed = reader(path, base_offset, None, storage) if newest_size is not None else None
        entries = None if parsed is None else _read_part(parsed.entries, newest_size or 0, log.end_offset)
        if parsed is None or entries is None:
            # An entry per batch at most (the time index has one more, written when the segment
            # closes: LogSegment.onBecomeInactiveSegment).
            parsed = reader(path, base_offset, log.count + 1, storage)
            entries = parsed.entries
        display = sidecar_display(segment, extension)
        found.extend(verify(entries, log, where, display))
        found.extend(sidecar_problem_findings(parsed.problems, where, display))
    return found


def _read_part(entries: list, listed_size: int, end_offset: int | None) -> list | None:
    """The entries of the newest segment's index about what the scan read (an offset index entry
    at a position before the listed size, a time index entry at an offset below the end of the
    last batch read), when the others follow them as a live broker appends them (offsets, and
    positions, rising); None when they do not (then the index is checked whole, as any other).
    ``end_offset``: after the last batch read (None: none)."""
    kept = 0
    for entry in entries:
        position = getattr(entry, "position", None)
        within = position < listed_size if position is not None else end_offset is not None and entry.offset < end_offset
        if not within:
            break
        kept += 1
    later = entries[kept:]
    for before, after in zip(entries[max(0, kept - 1):], later):
        if after.offset <= before.offset or getattr(after, "position", 1) <= getattr(before, "position", 0):
            return None
    return entries[:kept]


def sidecar_display(segment: str, extension: str) -> str:
    """The display path of a live segment's sidecar: ``t-0/0000.log`` -> ``t-0/0000.index``."""
    return segment.removesuffix(".log") + extension


def sidecar_problem_findings(problems, where: dict, display: str) -> list[Finding]:
    """A sidecar file that cannot be read as its format says: a finding of that sidecar's check
    (``index_mismatch``, ``snapshot_mismatch``, ``txn_index_mismatch``), ``position`` being the
    byte position in the sidecar file named in ``details.index_file``."""
    return [
        make_finding(p.check, p.message, **where, position=p.position, details={"index_file": display, **p.details})
        for p in problems
    ]


@dataclass(frozen=True, slots=True)
class SegmentFiles:
    """A live segment's sidecar paths (None where absent), and the segment file's own path."""

    segment: str
    base_offset: int
    index: str | None = None
    time_index: str | None = None
    txn_index: str | None = None
    log: str | None = None
    # The segment file's size at discovery (None: unknown).
    size: int | None = None
    # The partition's newest live segment (a live broker's active one).
    newest: bool = False
    # The segment file's inode at discovery (0: unknown).
    file_id: int = 0

    def still_listed(self) -> bool:
        """Whether the segment file is still the one listed (io.local_file.unchanged): the indexes
        of one deleted, swapped or shrunk since are not checked against what was read of it (its
        segment_changed finding says what was not read)."""
        return self.log is None or unchanged(local_path(self.log), self.size, self.file_id)


@dataclass(slots=True)
class IndexCheck:
    """A live segment's offset and time indexes checked in a task of their own, beside its
    replica's replay (a segment a distributed engine split into byte ranges): the same checks
    the partition step makes (:func:`verify_indexes`), which skips that segment then."""

    topic: str
    partition: int
    files: SegmentFiles
    storage_options: StorageSettings = field(default=StorageSettings(), repr=False)  # the request's settings
    empty_objects: frozenset[str] = frozenset()


def check_indexes(check: IndexCheck, summaries: Iterable[BatchSummary | RunSlice], storage: StorageContext) -> list[Finding]:
    """The findings of ``check``'s indexes against the segment's batch summaries (all of them,
    in log order; runs as slices of their columns), read under ``storage`` (of ``check.storage_options``). A segment that gave no
    batch is checked only if its file opens, as the partition step does (the segment step
    reported why it did not)."""
    files, batches = check.files, list(summaries)
    if not files.still_listed():
        return []
    if not batches and (unreadable_with_sidecars(files, storage) or not can_open(files.log, storage, True)):
        return []
    where = {"topic": check.topic, "partition": check.partition, "segment": files.segment}
    with storage.prefetching([files.index, files.time_index], MAX_SIDECAR_BYTES + 1, check.empty_objects):
        return verify_indexes(
            files.index, files.time_index, files.base_offset, where, batches, files.size if files.newest else None, storage
        )


def unreadable_with_sidecars(files: SegmentFiles, storage: StorageContext) -> bool:
    """A segment file the segment step could not open (it reported why) whose sidecars therefore
    have no log to be checked against."""
    return bool(files.index or files.time_index or files.txn_index) and not can_open(files.log, storage)


def can_open(path: str | None, storage: StorageContext, remote_too: bool = False) -> bool:
    """Whether the segment step could open the segment file (FileRecords). An object in a store
    is asked only with ``remote_too`` (a request each): it was listed a moment ago, and only a
    segment that gave no batch needs the answer. A tiered-storage plugin's chunked object is always
    asked: its indexes are no more readable than its chunks (an encrypted segment without the key)."""
    if path is None or (is_remote(path) and not remote_too and not is_segment_log(path)):
        return True
    try:
        with FileRecords(path, storage=storage):
            return True
    except (OSError, ValueError):
        return False
