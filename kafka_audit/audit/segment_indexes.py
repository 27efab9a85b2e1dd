"""A segment's sidecar files checked against its batches in the partition step: the offset and
time indexes (``DumpLogSegments --verify-index-only``), and how a sidecar that cannot be read as
its format says becomes a finding of that sidecar's check."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kafka_audit.io import storage
from kafka_audit.io.rsm_objects import is_segment_log
from kafka_audit.log.offset_index import read_offset_index
from kafka_audit.log.sidecar_file import MAX_SIDECAR_BYTES
from kafka_audit.log.time_index import read_time_index
from kafka_audit.record.file_records import FileRecords
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.findings import Finding, make_finding
from kafka_audit.rules.index_check import SegmentBatches, verify_offset_index, verify_time_index


def verify_indexes(
    index: str | None, time_index: str | None, base_offset: int, where: dict, batches: list[BatchSummary]
) -> list[Finding]:
    """A live segment's ``.index`` and ``.timeindex`` against its batches (DumpLogSegments
    ``--verify-index-only``); ``where`` holds topic, partition and segment."""
    segment = where["segment"]
    log = SegmentBatches.of(batches)
    found: list[Finding] = []
    for path, extension, reader, verify in (
        (index, ".index", read_offset_index, verify_offset_index),
        (time_index, ".timeindex", read_time_index, verify_time_index),
    ):
        if not path:
            continue
        # An entry per batch at most (the time index has one more, written when the segment
        # closes: LogSegment.onBecomeInactiveSegment).
        parsed = reader(path, base_offset, len(batches) + 1)
        display = sidecar_display(segment, extension)
        found.extend(verify(parsed.entries, log, where, display))
        found.extend(sidecar_problem_findings(parsed.problems, where, display))
    return found


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


@dataclass(slots=True)
class IndexCheck:
    """A live segment's offset and time indexes checked in a task of their own, beside its
    replica's replay (a segment a distributed engine split into byte ranges): the same checks
    the partition step makes (:func:`verify_indexes`), which skips that segment then."""

    topic: str
    partition: int
    files: SegmentFiles
    storage_options: tuple = field(default=(), repr=False)  # may hold credentials: not in reprs
    empty_objects: frozenset[str] = frozenset()


def check_indexes(check: IndexCheck, summaries: Iterable[BatchSummary]) -> list[Finding]:
    """The findings of ``check``'s indexes against the segment's batch summaries (all of them,
    in log order). A segment that gave no batch is checked only if its file opens, as the
    partition step does (the segment step reported why it did not)."""
    storage.configure(check.storage_options)
    files, batches = check.files, list(summaries)
    if not batches and (unreadable_with_sidecars(files) or not can_open(files.log, True)):
        return []
    where = dict(topic=check.topic, partition=check.partition, segment=files.segment)
    with storage.prefetching([files.index, files.time_index], MAX_SIDECAR_BYTES + 1, check.empty_objects):
        return verify_indexes(files.index, files.time_index, files.base_offset, where, batches)


def unreadable_with_sidecars(files: SegmentFiles) -> bool:
    """A segment file the segment step could not open (it reported why) whose sidecars therefore
    have no log to be checked against."""
    return bool(files.index or files.time_index or files.txn_index) and not can_open(files.log)


def can_open(path: str | None, remote_too: bool = False) -> bool:
    """Whether the segment step could open the segment file (FileRecords). An object in a store
    is asked only with ``remote_too`` (a request each): it was listed a moment ago, and only a
    segment that gave no batch needs the answer. A tiered-storage plugin's chunked object is always
    asked: its indexes are no more readable than its chunks (an encrypted segment without the key)."""
    if path is None or (storage.is_remote(path) and not remote_too and not is_segment_log(path)):
        return True
    try:
        with FileRecords(path):
            return True
    except (OSError, ValueError):
        return False
