"""One unit of the segment step's work and what it counts: a segment or a byte range of one
(:class:`SegmentTask`), the tasks in order with each one's first ranged read started early on an
object store (:func:`with_read_ahead`), and the summary panel's counts (:class:`SegmentStats`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from kafka_audit.io.rsm_objects import is_segment_log
from kafka_audit.io.storage import StorageSettings, is_remote
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.discovery import SegmentFile
from kafka_audit.record.range_buffer import first_read


@dataclass(frozen=True, slots=True)
class SegmentTask:
    """One unit of parsing work: a segment file, or the batches starting in ``[start, stop)``.

    ``replica`` is the partition folder's display path (with topic and partition, the key of
    the partition step); ``file`` is the segment as discovery listed it, whole: the path to open,
    the path findings show, its base offset, state, size, modification time (the default
    reference time of timestamp checks) and inode. ``storage_options`` are the request's storage
    settings, which the executor needs to read a URI.
    """

    topic: str
    partition: int
    replica: str
    file: SegmentFile
    start: int = 0
    stop: int | None = None
    # The partition's newest live segment: an incomplete batch at its end is an incomplete tail
    # (a write in progress, LogSegment.recover's truncation), not corruption.
    newest: bool = False
    storage_options: StorageSettings = field(default=StorageSettings(), repr=False, compare=False)

    @property
    def replica_key(self) -> tuple[str, int, str]:
        return (self.topic, self.partition, self.replica)

    @property
    def byte_count(self) -> int:
        return (self.file.size if self.stop is None else self.stop) - self.start

    def byte_range(self, start: int, stop: int | None) -> SegmentTask:
        """The same segment, restricted to the batches starting in ``[start, stop)``."""
        return replace(self, start=start, stop=stop)


def with_read_ahead(tasks: Iterable[SegmentTask], storage: StorageContext) -> Iterator[SegmentTask]:
    """The tasks in the same order; the first ranged read of each task on an object store starts
    (in ``storage``'s read-ahead) while the task before it is audited, so the store's latency
    overlaps the parsing. When the tasks are done (or given up), the pages their reads passed on
    to each other are freed (``storage.page_pool``)."""
    previous: SegmentTask | None = None
    try:
        for task in tasks:
            if _reads_ahead(task):
                storage.prefetch_range(*_first_read(task))
            if previous is not None:
                yield previous
                _forget_first_read(previous, storage)
            previous = task
        if previous is not None:
            yield previous
            _forget_first_read(previous, storage)
    finally:
        storage.page_pool.clear()


def _reads_ahead(task: SegmentTask) -> bool:
    """A task on an object store whose first bytes lie at the task's positions: not a tiered-storage
    plugin's chunked object, read through its manifest (rsm_objects)."""
    return bool(task.file.size) and is_remote(task.file.path) and not is_segment_log(task.file.path)


def _first_read(task: SegmentTask) -> tuple[str, int, int]:
    return (task.file.path, *first_read(task.file.size, task.start, task.stop))


def _forget_first_read(task: SegmentTask, storage: StorageContext) -> None:
    """A task done without taking its first read (it failed before): the bytes are dropped."""
    if _reads_ahead(task):
        storage.discard_prefetched([_first_read(task)])


@dataclass(slots=True)
class SegmentStats:
    """Counts for the summary panel; merged across tasks with :meth:`merge`.

    ``bytes_read`` holds the bytes read per segment (display path), ``unread`` why a segment
    could not be read in full: the driver sets them against the bytes discovery found, so a scan
    never calls clean what it did not read (``audit.file_accounting.file_findings``)."""

    segments: int = 0
    batches: int = 0
    records: int = 0
    bytes: int = 0
    formats: Counter = field(default_factory=Counter)
    codecs: Counter = field(default_factory=Counter)
    bytes_read: Counter = field(default_factory=Counter)
    unread: dict[str, str] = field(default_factory=dict)
    # Requests to an object store and the bytes fetched, where a Spark task counts them.
    requests: int = 0
    bytes_fetched: int = 0
    # Records of internal topics whose type or version no schema here knows (SPEC section 3).
    internal_records_unknown: int = 0
    # Files that grew, shrank, vanished or were swapped while the scan ran (display path to how:
    # io.local_file), the summary's ``files_changed``.
    changed: dict[str, str] = field(default_factory=dict)

    def merge(self, other: SegmentStats) -> SegmentStats:
        self.segments += other.segments
        self.batches += other.batches
        self.records += other.records
        self.bytes += other.bytes
        self.internal_records_unknown += other.internal_records_unknown
        self.formats.update(other.formats)
        self.codecs.update(other.codecs)
        self.bytes_read.update(other.bytes_read)
        self.requests += other.requests
        self.bytes_fetched += other.bytes_fetched
        for segment, reason in other.unread.items():
            self.unread.setdefault(segment, reason)
        for segment, how in other.changed.items():
            self.changed.setdefault(segment, how)
        return self
