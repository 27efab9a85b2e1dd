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

(Slightly over the house's 400 lines: the walk, its framing problems and the file they read
stay together, as Kafka keeps ``FileRecords`` and ``FileLogInputStream`` side by side.)
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib
from collections.abc import Callable, Iterator
from typing import TypeVar, overload

import crc32c

from kafka_audit.io import rsm_objects, storage
from kafka_audit.io.local_file import LocalFile
from kafka_audit.record.batch_records import BatchRecords, read_batch_records
from kafka_audit.record.batch_walk import BatchColumns, CompiledWalk
from kafka_audit.record.byte_stream import STREAM_BOUND, stream_checksum
from kafka_audit.record.legacy_record import (
    LegacyMessage,
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
    V2_ATTRIBUTES_OFFSET,
    V2_HEADER,
    V2_RECORD_BATCH_OVERHEAD,
    RecordBatch,
)
from kafka_audit.record.stream_legacy import read_message_header

_OFFSET_SIZE = struct.Struct(">qi")

# What a walk yields: batches, problems, runs of batches the compiled walk took.
_Item = TypeVar("_Item", bound=RecordBatch | Problem | BatchColumns)

# Drop walked pages from the resident set this often (bytes).
_RELEASE_EVERY = 64 * 1024 * 1024
# A walk that meets this many framing problems in a row stops: the rest is not a log.
_MAX_CONSECUTIVE_FRAMING_PROBLEMS = 2


@overload
def iter_batches(
    buf,
    start: int = 0,
    stop: int | None = None,
    end: int | None = None,
    fd: int | None = None,
    need: Callable[[int, int], None] | None = None,
    read_range: Callable[[int, int], bytes] | None = None,
    compiled: None = None,
) -> Iterator[RecordBatch | Problem]: ...


@overload
def iter_batches(
    buf,
    start: int = 0,
    stop: int | None = None,
    end: int | None = None,
    fd: int | None = None,
    need: Callable[[int, int], None] | None = None,
    read_range: Callable[[int, int], bytes] | None = None,
    *,
    compiled: Callable[[int], Iterator[BatchColumns]],
) -> Iterator[RecordBatch | Problem | BatchColumns]: ...


# Over 60 lines on purpose: the hot walk over batch headers (FileLogInputStream.nextBatch), its
# framing cases inline; bench/run.py's batch-level walk measures it against the read+CRC limit.
def iter_batches(
    buf,
    start: int = 0,
    stop: int | None = None,
    end: int | None = None,
    fd: int | None = None,
    need: Callable[[int, int], None] | None = None,
    read_range: Callable[[int, int], bytes] | None = None,
    compiled: Callable[[int], Iterator[BatchColumns]] | None = None,
) -> Iterator[RecordBatch | Problem | BatchColumns]:
    """Yield the batches whose first byte lies in ``[start, stop)`` of ``buf[:end]``, and problems.

    ``buf`` is any buffer (mmap, bytes). Batches may extend past ``stop`` (a byte-range split
    ends at a batch boundary of its own) but not past ``end``, the file's size. A batch with
    a bad CRC is yielded (``crc_valid`` False) after its ``crc_mismatch`` problem. ``fd``, the
    file ``buf`` maps, lets a zero-filled tail be recognised from the file's holes
    (``SEEK_DATA``) instead of by reading it. ``need(a, b)``, when given, is called before
    ``buf[a:b]`` is read (a :class:`RangeBuffer` fetches the bytes then). ``read_range(a, b)``,
    when given, reads a batch larger than :data:`STREAM_BOUND` by ranged reads instead of
    through ``buf``: its header and CRC, as a stream (:func:`_large_batch`). ``compiled(pos)``,
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
            tail = _tail_problem(buf, pos, end, f"File ends inside a batch header ({remaining} bytes left)", fd=fd, need=need)
            if tail is not None:
                yield tail
            return
        base_offset, size = _OFFSET_SIZE.unpack_from(buf, pos)
        magic = buf[pos + 16]
        if size < LEGACY_RECORD_OVERHEAD_V0:
            tail = _tail_problem(
                buf,
                pos,
                end,
                f"Record size {size} is less than the minimum record overhead ({LEGACY_RECORD_OVERHEAD_V0})",
                check="invalid_batch_size",
                details={"size": size},
                offset=base_offset,
                fd=fd,
                need=need,
            )
            if tail is not None:
                yield tail
            return
        if size > remaining - LOG_OVERHEAD:
            tail = _tail_problem(
                buf,
                pos,
                end,
                f"Batch size {size} at position {pos} runs past the end of the file "
                f"({remaining - LOG_OVERHEAD} bytes left)",
                details={"size": size, "bytes_left": remaining - LOG_OVERHEAD},
                offset=base_offset,
                fd=fd,
                need=need,
            )
            if tail is not None:
                yield tail
            return
        entry_size = LOG_OVERHEAD + size
        large = read_range is not None and entry_size > STREAM_BOUND
        if need is not None and not large:
            need(pos, pos + entry_size)
        if magic > MAGIC_VALUE_V2:
            yield Problem(
                "unknown_magic",
                pos,
                f"Unknown magic byte {magic} in the batch at offset {base_offset}",
                offset=base_offset,
                details={"magic": magic},
            )
            framing_problems += 1
            if framing_problems >= _MAX_CONSECUTIVE_FRAMING_PROBLEMS:
                yield _unread_problem(pos + entry_size, end)
                return
            pos += entry_size
            continue
        if magic == MAGIC_VALUE_V2:
            if size < V2_RECORD_BATCH_OVERHEAD - LOG_OVERHEAD:
                yield _too_small(pos, base_offset, size, V2_RECORD_BATCH_OVERHEAD)
                return
            batch = _v2_batch(buf, pos, size) if not large else _large_batch(buf, pos, size, read_range)
        else:
            overhead = record_overhead(magic)
            if size < overhead:
                yield _too_small(pos, base_offset, size, overhead + LOG_OVERHEAD)
                return
            if large:
                message = _large_message(read_range, pos, entry_size)
            else:
                message = parse_message(buf, pos, pos + entry_size)
            if isinstance(message, str):
                yield Problem("invalid_batch_size", pos, message, offset=base_offset, details={"size": size})
                framing_problems += 1
                if framing_problems >= _MAX_CONSECUTIVE_FRAMING_PROBLEMS:
                    yield _unread_problem(pos + entry_size, end)
                    return
                pos += entry_size
                continue
            batch = batch_from_message(message, pos)
        framing_problems = 0
        if not batch.crc_valid:
            if pos + entry_size < end and _is_zero(buf, pos + entry_size, end, fd, need or _loaded):
                yield _torn_by_zeros(batch, end)
                return
            yield Problem(
                "crc_mismatch",
                pos,
                _crc_message(buf, batch, read_range if large else None),
                offset=batch.base_offset,
                details={"stored_crc": batch.stored_crc},
            )
        yield batch
        pos += entry_size


def _large_batch(buf, pos: int, size: int, read_range) -> RecordBatch:
    """:func:`_v2_batch` of a batch too large for one buffer: its header from ``buf``, its CRC
    by ranged reads (``read_range``), never the whole batch in memory."""
    header = bytes(memoryview(buf)[pos : pos + V2_RECORD_BATCH_OVERHEAD])
    batch = _v2_batch(header, 0, V2_RECORD_BATCH_OVERHEAD - LOG_OVERHEAD)
    batch.position, batch.size = pos, LOG_OVERHEAD + size
    crc = stream_checksum(read_range, pos + V2_ATTRIBUTES_OFFSET, pos + LOG_OVERHEAD + size, crc32c.crc32c)
    batch.crc_valid = crc == batch.stored_crc
    return batch


def _large_message(read_range, pos: int, entry_size: int) -> LegacyMessage | str:
    """parse_message of a v0/v1 message too large for one buffer: its fields by ranged reads, its
    CRC-32 (magic..end) as a stream."""
    message = read_message_header(read_range, pos, pos + entry_size)
    if not isinstance(message, str):
        crc = stream_checksum(read_range, pos + LOG_OVERHEAD + 4, pos + entry_size, zlib.crc32)
        message.crc_valid = crc == message.crc
    return message


def _v2_batch(buf, pos: int, size: int) -> RecordBatch:
    (
        base_offset,
        _,
        leader_epoch,
        magic,
        crc,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    ) = V2_HEADER.unpack_from(buf, pos)
    end = pos + LOG_OVERHEAD + size
    crc_valid = crc32c.crc32c(memoryview(buf)[pos + V2_ATTRIBUTES_OFFSET : end]) == crc
    # Positional, in RecordBatch's field order: keyword arguments made this call a sixth of the
    # batch walk's time (tests/test_file_records.py checks the order).
    return RecordBatch(
        pos,  # position
        base_offset,
        base_offset + last_offset_delta,  # last_offset
        magic,
        LOG_OVERHEAD + size,  # size
        crc,  # stored_crc
        crc_valid,
        attributes & 0xFFFF,  # attributes
        record_count,
        leader_epoch,  # partition_leader_epoch
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
    )


def _crc_message(buf, batch: RecordBatch, read_range=None) -> str:
    """DefaultRecordBatch.ensureValid / LegacyRecord.ensureValid wording (a large batch's CRC
    computed again by ranged reads)."""
    start = batch.position + (V2_ATTRIBUTES_OFFSET if batch.magic == MAGIC_VALUE_V2 else LOG_OVERHEAD + 4)
    update = crc32c.crc32c if batch.magic == MAGIC_VALUE_V2 else zlib.crc32
    if read_range is not None:
        computed = stream_checksum(read_range, start, batch.position + batch.size, update)
    else:
        computed = update(memoryview(buf)[start : batch.position + batch.size])
    return f"Record is corrupt (stored crc = {batch.stored_crc}, computed crc = {computed})"


def _too_small(pos: int, base_offset: int, size: int, overhead: int) -> Problem:
    return Problem(
        "invalid_batch_size",
        pos,
        f"Record batch is corrupt (the size {size + LOG_OVERHEAD} is smaller than the minimum "
        f"allowed overhead {overhead})",
        offset=base_offset,
        details={"size": size},
    )


def _loaded(start: int, stop: int) -> None:
    """The ``need`` of a buffer that holds the whole file (a memory map, bytes)."""


def _is_zero(
    buf, start: int, end: int, fd: int | None = None, need: Callable[[int, int], None] = _loaded
) -> bool:
    """Whether ``buf[start:end]`` is all zero bytes.

    A preallocated segment (``preallocate=true``, or a sparse copy) can be a gigabyte of holes:
    with ``fd`` the holes are skipped with ``lseek(SEEK_DATA/SEEK_HOLE)`` without being read,
    and the data regions are compared a chunk at a time, each chunk's pages dropped from the
    resident set once compared (as :meth:`FileRecords._release` does for walked batches).
    """
    view = memoryview(buf)
    chunk = 1 << 20
    zeros = bytes(min(chunk, max(0, end - start)))
    releasable = isinstance(buf, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED")
    at = start
    while at < end:
        region_end = end
        if fd is not None and hasattr(os, "SEEK_DATA"):
            try:
                data = os.lseek(fd, at, os.SEEK_DATA)
            except OSError:
                return True  # ENXIO: no data at or after ``at``, a hole to the end of the file
            if data >= end:
                return True
            at = data
            try:
                region_end = min(end, os.lseek(fd, at, os.SEEK_HOLE))
            except OSError:
                region_end = end
            region_end = max(region_end, min(end, at + 1))
        while at < region_end:
            upto = min(at + chunk, region_end)
            need(at, upto)
            part = view[at:upto]
            same = part == zeros[: len(part)]
            if releasable and same:
                # Only pages of zeros: in a RangeBuffer's anonymous map they read back as zeros.
                _drop_pages(buf, at, upto)
            if not same:
                return False
            at = upto
    return True


def _drop_pages(buf: mmap.mmap, start: int, stop: int) -> None:
    """madvise(MADV_DONTNEED) the whole pages inside ``[start, stop)`` of a read-only map."""
    page = mmap.PAGESIZE
    first = -(-start // page) * page
    length = (stop // page) * page - first
    if length > 0:
        buf.madvise(mmap.MADV_DONTNEED, first, length)


def _tail_problem(
    buf,
    pos: int,
    end: int,
    message: str,
    check: str = "truncated_batch",
    details: dict | None = None,
    offset: int | None = None,
    fd: int | None = None,
    need: Callable[[int, int], None] | None = None,
) -> Problem | None:
    """A problem that ends the walk; None for a tail of zeros: preallocated bytes after the last
    batch are not data (FileRecords.open with preallocate, SPEC incomplete_tail)."""
    details = dict(details or {})
    if _is_zero(buf, pos, end, fd, need or _loaded):
        return None
    details["unread_bytes"] = end - pos
    return Problem(check, pos, message, offset=offset, details=details, incomplete=check == "truncated_batch")


def _torn_by_zeros(batch: RecordBatch, end: int) -> Problem:
    """The last batch of a preallocated file, cut off mid-write: it fails its CRC and only zeros
    follow it (SPEC incomplete_tail)."""
    after = batch.position + batch.size
    return Problem(
        "truncated_batch",
        batch.position,
        f"The batch at offset {batch.base_offset} fails its CRC and only {end - after} zero bytes follow it "
        f"(a write cut off in a preallocated segment)",
        offset=batch.base_offset,
        details={"size": batch.size - LOG_OVERHEAD, "stored_crc": batch.stored_crc, "unread_bytes": end - batch.position},
        incomplete=True,
    )


def _unread_problem(pos: int, end: int) -> Problem:
    return Problem(
        "truncated_batch",
        pos,
        f"Stopped after repeated framing errors: {end - pos} bytes at the end of the file are not audited",
        details={"unread_bytes": end - pos},
    )


def split_points(
    buf,
    end: int,
    every: int,
    need: Callable[[int, int], None] = _loaded,
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
        _, size = _OFFSET_SIZE.unpack_from(buf, pos)
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

    def __init__(self, path: str | os.PathLike[str], size: int | None = None, listed_id: int = 0) -> None:
        """``size``: the file's size when the scan listed it (a remote object's saves a request;
        a local file is read up to it and never past it: ``FileRecords.slice``). ``listed_id``:
        the inode the listing saw, to tell a file swapped in at the same path (0: unknown)."""
        self.path = os.fspath(path)
        self._file: LocalFile | None = None
        if rsm_objects.is_segment_log(self.path):
            # A tiered-storage plugin's chunked object: its chunks are read and detransformed
            # as the walk needs them; ``size`` (the original segment's) is the manifest's.
            self._ranges = RangeBuffer(rsm_objects.SegmentObject(self.path))
        elif storage.is_remote(self.path):
            self._ranges = RangeBuffer(storage.RangeReader(self.path, size))
        else:
            # A local file is read with pread into an anonymous map, never mapped itself: a
            # broker truncating it mid-read gives a short read (io.local_file), not a SIGBUS.
            self._file = LocalFile(storage.local_path(self.path), size, listed_id, storage.max_read_rate())
            try:
                self._ranges = RangeBuffer(self._file)
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
    def buffer(self):
        return self._map

    def loaded(self):
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
        """madvise(MADV_DONTNEED) the walked pages: they leave RSS and stay in the page cache."""
        if not isinstance(self._map, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
            return
        page = mmap.PAGESIZE
        first = (start // page) * page
        length = ((stop - first) // page) * page
        if length > 0:
            self._map.madvise(mmap.MADV_DONTNEED, first, length)
            self._ranges.released(first + length)
