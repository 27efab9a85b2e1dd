"""A segment file as a lazy sequence of batches: ``FileRecords`` / ``FileLogInputStream``.

The file is read by ranges into a buffer at its own positions (:class:`RangeBuffer`: ``pread``
for a local file, up to the size the scan listed, :mod:`kafka_audit.io.local_file`; ranged
requests for an object in a store) and walked batch by batch. Pages already walked are
dropped from the process's resident set every ``_RELEASE_EVERY`` bytes, so a 1 GiB segment
costs a bounded RSS.

Framing follows FileLogInputStream.nextBatch: ``offset i64, size i32`` then the magic byte at
position 16. Where the framing is broken (a size below the format's minimum, a size that runs
past the end of the file, bytes that end inside a header) the walk reports the problem and
stops, as Kafka's log recovery truncates there. A batch whose framing holds but whose CRC or
magic is wrong is reported and skipped by its size, so the batches after it are still audited.

The problems the walk reports, and the zero tail of a preallocated segment, are in
:mod:`kafka_audit.record.walk_problems`.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterator
from typing import TypeVar

from kafka_audit.check_ids import CheckId
from kafka_audit.io import rsm_objects
from kafka_audit.io.local_file import LocalFile
from kafka_audit.io.storage import is_remote, local_path
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.record.batch_headers import large_batch, large_message, v2_batch
from kafka_audit.record.batch_records import BatchRecords, read_batch_records
from kafka_audit.record.batch_walk import BatchColumns, CompiledWalk
from kafka_audit.record.byte_stream import STREAM_BOUND, Buffer
from kafka_audit.record.legacy_record import (
    OFFSET_SIZE,
    batch_from_message,
    parse_message,
    record_overhead,
)
from kafka_audit.record.problem import Problem
from kafka_audit.record.range_buffer import RangeBuffer
from kafka_audit.record.record_batch import (
    LEGACY_RECORD_OVERHEAD_V0,
    LOG_OVERHEAD,
    MAGIC_VALUE_V2,
    V2_RECORD_BATCH_OVERHEAD,
    RecordBatch,
)
from kafka_audit.record.walk_problems import (
    already_loaded,
    crc_message,
    is_zero,
    tail_problem,
    too_small,
    torn_by_zeros,
    unread_problem,
)

# The compiled walk's runs: without ``compiled`` the walk yields only batches and problems.
_Run = TypeVar("_Run", bound=BatchColumns)
# What a walk yields: batches, problems, runs of batches the compiled walk took.
_Item = TypeVar("_Item", bound=RecordBatch | Problem | BatchColumns)

# A batch's first field, its base offset (an int64).
_BASE_OFFSET_BYTES = 8
# Drop walked pages from the resident set this often (bytes).
_RELEASE_EVERY = 32 * 1024 * 1024
# A walk that meets this many framing problems in a row stops: the rest is not a log.
_MAX_CONSECUTIVE_FRAMING_PROBLEMS = 2


# Over 60 lines on purpose: the hot walk over batch headers (FileLogInputStream.nextBatch), its
# framing cases inline; bench/run.py's batch-level walk measures it against the read+CRC limit.
def iter_batches(
    buf: Buffer,
    start: int = 0,
    stop: int | None = None,
    end: int | None = None,
    fd: int | None = None,
    need: Callable[[int, int], None] | None = None,
    read_range: Callable[[int, int], bytes] | None = None,
    compiled: Callable[[int], Iterator[_Run]] | None = None,
) -> Iterator[RecordBatch | Problem | _Run]:
    """Yield the batches whose first byte lies in ``[start, stop)`` of ``buf[:end]``, and problems.

    ``buf`` is any buffer (mmap, bytes). Batches may extend past ``stop`` (a byte-range split
    ends at a batch boundary of its own) but not past ``end``, the file's size. A batch with
    a bad CRC is yielded (``crc_valid`` False) after its ``crc_mismatch`` problem. ``fd``, the
    file ``buf`` maps, lets a zero-filled tail be recognised from the file's holes
    (``SEEK_DATA``) instead of by reading it. ``need(a, b)``, when given, is called before
    ``buf[a:b]`` is read (a :class:`RangeBuffer` fetches the bytes then). ``read_range(a, b)``,
    when given, reads a batch larger than :data:`STREAM_BOUND` by ranged reads instead of
    through ``buf``: its header and CRC, as a stream (:func:`~kafka_audit.record.batch_headers.large_batch`). ``compiled(pos)``,
    when given, yields the runs of batches from ``pos`` with nothing to report, walked in C
    (:meth:`BatchColumns`, :mod:`.batch_walk`); the batch where it stops is read here.
    """
    end = len(buf) if end is None else end
    stop = end if stop is None else min(stop, end)
    pos = start
    framing_problems = 0
    refused = -1  # where the compiled walk last stopped: the batch there is read here
    while pos < stop:
        if compiled is not None and pos != refused:
            for run in compiled(pos):
                yield run
                pos, framing_problems = run.position, 0
            if pos >= stop:
                return
            refused = pos
        remaining = end - pos
        if need is not None:
            need(pos, pos + min(remaining, V2_RECORD_BATCH_OVERHEAD))
        if remaining < LOG_OVERHEAD + 5:
            # FileLogInputStream returns no batch when fewer than HEADER_SIZE_UP_TO_MAGIC bytes are left.
            # Its base offset, when written, says whose batch it is (LogSegment.recover truncates there).
            offset = int.from_bytes(buf[pos : pos + _BASE_OFFSET_BYTES], "big", signed=True) if remaining >= _BASE_OFFSET_BYTES else None
            tail = tail_problem(buf, pos, end, f"File ends inside a batch header ({remaining} bytes left)",
                                offset=offset, fd=fd, need=need)
            if tail is not None:
                yield tail
            return
        base_offset, size = OFFSET_SIZE.unpack_from(buf, pos)
        magic = buf[pos + 16]
        if size < LEGACY_RECORD_OVERHEAD_V0 or size > remaining - LOG_OVERHEAD:
            tail = _size_tail(buf, pos, end, base_offset, size, fd, need)
            if tail is not None:
                yield tail
            return
        entry_size = LOG_OVERHEAD + size
        large = read_range is not None and entry_size > STREAM_BOUND
        if need is not None and not large:
            need(pos, pos + entry_size)
        framing: Problem | None = None  # an entry that cannot be read as a batch, skipped
        if magic > MAGIC_VALUE_V2:
            message = f"Unknown magic byte {magic} in the batch at offset {base_offset}"
            framing = Problem(CheckId.UNKNOWN_MAGIC, pos, message, offset=base_offset, details={"magic": magic})
        elif magic == MAGIC_VALUE_V2:
            if size < V2_RECORD_BATCH_OVERHEAD - LOG_OVERHEAD:
                yield too_small(pos, base_offset, size, V2_RECORD_BATCH_OVERHEAD)
                return
            batch = v2_batch(buf, pos, size) if not large else large_batch(buf, pos, size, read_range)
        else:
            overhead = record_overhead(magic)
            if size < overhead:
                yield too_small(pos, base_offset, size, overhead + LOG_OVERHEAD)
                return
            legacy = large_message(read_range, pos, entry_size) if large else parse_message(buf, pos, pos + entry_size)
            if isinstance(legacy, str):
                framing = Problem(CheckId.INVALID_BATCH_SIZE, pos, legacy, offset=base_offset, details={"size": size})
            else:
                batch = batch_from_message(legacy, pos)
        if framing is not None:
            yield framing
            framing_problems += 1
            if framing_problems >= _MAX_CONSECUTIVE_FRAMING_PROBLEMS:
                yield unread_problem(pos + entry_size, end)
                return
            pos += entry_size
            continue
        framing_problems = 0
        if not batch.crc_valid:
            if pos + entry_size < end and is_zero(buf, pos + entry_size, end, fd, need or already_loaded):
                yield torn_by_zeros(batch, end)
                return
            yield Problem(
                CheckId.CRC_MISMATCH,
                pos,
                crc_message(buf, batch, read_range if large else None),
                offset=batch.base_offset,
                details={"stored_crc": batch.stored_crc},
            )
        yield batch
        pos += entry_size


def _size_tail(
    buf: Buffer, pos: int, end: int, base_offset: int, size: int, fd: int | None, need: Callable[[int, int], None] | None
) -> Problem | None:
    """The size field that ends the walk (FileLogInputStream.nextBatch): below the smallest
    entry's (LegacyRecord.RECORD_OVERHEAD_V0), or past the end of the file; None for a tail of
    zeros (:func:`tail_problem`)."""
    left = end - pos - LOG_OVERHEAD
    if size < LEGACY_RECORD_OVERHEAD_V0:
        message = f"Record size {size} is less than the minimum record overhead ({LEGACY_RECORD_OVERHEAD_V0})"
        check, details = CheckId.INVALID_BATCH_SIZE, {"size": size}
    else:
        message = f"Batch size {size} at position {pos} runs past the end of the file ({left} bytes left)"
        check, details = CheckId.TRUNCATED_BATCH, {"size": size, "bytes_left": left}
    return tail_problem(buf, pos, end, message, check=check, details=details, offset=base_offset, fd=fd, need=need)


def split_points(
    buf: Buffer,
    end: int,
    every: int,
    need: Callable[[int, int], None] = already_loaded,
    passed: Callable[[int], None] | None = None,
) -> list[int]:
    """Batch start positions about ``every`` bytes apart, for splitting one file into ranges.

    Hops from batch to batch reading only the 12-byte log overhead of each (no CRC, no
    records), as FileLogInputStream does; where the framing breaks, the last range simply
    runs to the end of the file and its task reports the problem. ``need`` is called before
    bytes are read (:func:`iter_batches`), ``passed(position)`` at each point found (the bytes
    before it are not read again).
    """
    points = [0]
    pos = 0
    while pos + LOG_OVERHEAD <= end:
        need(pos, pos + LOG_OVERHEAD)
        _, size = OFFSET_SIZE.unpack_from(buf, pos)
        if size < LEGACY_RECORD_OVERHEAD_V0 or pos + LOG_OVERHEAD + size > end:
            break
        pos += LOG_OVERHEAD + size
        if pos - points[-1] >= every and pos < end:
            points.append(pos)
            if passed is not None:
                passed(pos)
    return points


class FileRecords:
    """A read-only segment file (FileRecords): a :class:`RangeBuffer` of ``pread`` reads when
    local, of ranged reads when ``path`` is a URI of an object store or HDFS (:mod:`.storage`).

    Use as a context manager. ``batches()`` walks the file; ``records(batch)`` decodes one
    batch. Pages already walked are released from the resident set as the walk goes on.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        size: int | None = None,
        listed_id: int = 0,
        storage: StorageContext | None = None,
    ) -> None:
        """``size``: the file's size when the scan listed it (a remote object's saves a request;
        a local file is read up to it and never past it: ``FileRecords.slice``). ``listed_id``:
        the inode the listing saw, to tell a file swapped in at the same path (0: unknown).
        ``storage``: the request's (its settings and counts); none: no settings."""
        self.path = os.fspath(path)
        storage = storage if storage is not None else StorageContext()
        self._file: LocalFile | None = None
        if rsm_objects.is_segment_log(self.path):
            # A tiered-storage plugin's chunked object: its chunks are read and detransformed
            # as the walk needs them; ``size`` (the original segment's) is the manifest's.
            self._ranges = RangeBuffer(rsm_objects.SegmentObject(self.path, storage), pages=storage.page_pool)
        elif is_remote(self.path):
            self._ranges = RangeBuffer(storage.range_reader(self.path, size), pages=storage.page_pool)
        else:
            # A local file is read with pread into an anonymous map, never mapped itself: a
            # broker truncating it mid-read gives a short read (io.local_file), not a SIGBUS.
            self._file = LocalFile(local_path(self.path), size, listed_id, storage.max_read_rate)
            try:
                self._ranges = RangeBuffer(self._file, pages=storage.page_pool)
            except (OSError, ValueError) as exc:
                self._file.close()
                raise OSError(getattr(exc, "errno", None), f"cannot map the file ({exc})") from exc
        self.size = self._ranges.size
        self._map: mmap.mmap | bytearray | bytes = self._ranges.buffer

    def __enter__(self) -> FileRecords:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._ranges.close()
        if self._file is not None:
            self._file.close()

    @property
    def buffer(self) -> mmap.mmap | bytearray | bytes:
        return self._map

    def loaded(self) -> mmap.mmap | bytearray | bytes:
        """The whole file in :attr:`buffer` (a reader that searches all of it)."""
        self._ranges.walk(0, None)
        self._ranges.need(0, self.size)
        return self._map

    def changed(self) -> str | None:
        """How a local file differs now from what the scan listed (``io.local_file``): ``grew``,
        ``shrank``, ``vanished``, ``swapped``; None when unchanged or not local."""
        return None if self._file is None else self._file.changed()

    def split_points(self, every: int) -> list[int]:
        """Batch start positions about ``every`` bytes apart (:func:`split_points`)."""
        self._ranges.walk(0, None)
        released = [0]

        def passed(position: int) -> None:
            self._release(released[0], position)
            released[0] = position

        return split_points(self._map, self.size, every, self._ranges.need, passed)

    def batches(self, start: int = 0, stop: int | None = None) -> Iterator[RecordBatch | Problem]:
        """The batches starting in ``[start, stop)`` and the problems met, in file order."""
        need, read_range = self._ranges.need, self.read_range
        return self._released(start, stop, lambda fd: iter_batches(self._map, start, stop, self.size, fd, need, read_range))

    def runs_and_batches(
        self, compiled: CompiledWalk, start: int = 0, stop: int | None = None
    ) -> Iterator[RecordBatch | Problem | BatchColumns]:
        """:meth:`batches`, with the runs of batches the compiled walk takes (nothing to report)
        as :class:`BatchColumns` in their place."""
        ranges, read_range, size = self._ranges, self.read_range, self.size
        last = size if stop is None else min(stop, size)

        def runs(pos: int) -> Iterator[BatchColumns]:
            return compiled.runs(self._map, pos, last, size, ranges.need, ranges.loaded_to)

        return self._released(
            start, stop, lambda fd: iter_batches(self._map, start, stop, size, fd, ranges.need, read_range, compiled=runs)
        )

    def _released(self, start: int, stop: int | None, walk: Callable[[int | None], Iterator[_Item]]) -> Iterator[_Item]:
        """The walk of ``[start, stop)`` (given the file's descriptor), its pages released from
        the resident set as it goes."""
        released = start
        fd = self._file.fileno() if self.size and self._file is not None else None
        self._ranges.walk(start, stop)
        for item in walk(fd):
            yield item
            if isinstance(item, RecordBatch) and item.size > STREAM_BOUND:
                self._ranges.skip(item.position + item.size)  # read by ranges, not into the buffer
            position = item.position
            if position is not None and position - released >= _RELEASE_EVERY:
                self._release(released, position)
                released = position

    def records(self, batch: RecordBatch, with_data: bool = True) -> BatchRecords:
        return read_batch_records(self._map, batch, with_data, self.read_range)

    def read_range(self, start: int, stop: int) -> bytes:
        """``[start, stop)`` of the file by one ranged read (``pread``, or the store's), not
        through :attr:`buffer`: how a batch larger than :data:`STREAM_BOUND` is read."""
        return self._ranges.ranges.read(start, min(stop, self.size))

    def _release(self, start: int, stop: int) -> None:
        """Release the walked pages (:meth:`RangeBuffer.release`): they leave RSS and stay in the
        page cache."""
        page = mmap.PAGESIZE
        first = (start // page) * page
        length = ((stop - first) // page) * page
        if length > 0:
            self._ranges.release(first, first + length)
