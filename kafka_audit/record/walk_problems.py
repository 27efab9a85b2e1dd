"""The problems a segment walk (:func:`~kafka_audit.record.file_records.iter_batches`) reports
where a batch's framing or CRC fails, and the tail of zeros after the last batch of a preallocated
segment, which is not data.

Framing follows FileLogInputStream.nextBatch; a size below the format's minimum, a size that runs
past the end of the file, bytes that end inside a header end the walk, as Kafka's log recovery
(``LogSegment.recover``) truncates there. Zero bytes after the last batch are preallocated space
(``FileRecords.open`` with ``preallocate``), not a truncated batch (SPEC ``incomplete_tail``).
"""

from __future__ import annotations

import mmap
import os
import zlib
from collections.abc import Callable

import crc32c

from kafka_audit.check_ids import CheckId
from kafka_audit.record.byte_stream import Buffer, ReadRange, stream_checksum
from kafka_audit.record.problem import Problem
from kafka_audit.record.record_batch import LOG_OVERHEAD, MAGIC_VALUE_V2, V2_ATTRIBUTES_OFFSET, RecordBatch


def crc_message(buf: Buffer, batch: RecordBatch, read_range: ReadRange | None = None) -> str:
    """DefaultRecordBatch.ensureValid / LegacyRecord.ensureValid wording (a large batch's CRC
    computed again by ranged reads)."""
    start = batch.position + (V2_ATTRIBUTES_OFFSET if batch.magic == MAGIC_VALUE_V2 else LOG_OVERHEAD + 4)
    update = crc32c.crc32c if batch.magic == MAGIC_VALUE_V2 else zlib.crc32
    if read_range is not None:
        computed = stream_checksum(read_range, start, batch.position + batch.size, update)
    else:
        computed = update(memoryview(buf)[start : batch.position + batch.size])
    return f"Record is corrupt (stored crc = {batch.stored_crc}, computed crc = {computed})"


def too_small(pos: int, base_offset: int, size: int, overhead: int) -> Problem:
    """A size below the format's minimum overhead (DefaultRecordBatch / LegacyRecord)."""
    return Problem(
        CheckId.INVALID_BATCH_SIZE,
        pos,
        f"Record batch is corrupt (the size {size + LOG_OVERHEAD} is smaller than the minimum "
        f"allowed overhead {overhead})",
        offset=base_offset,
        details={"size": size},
    )


def already_loaded(start: int, stop: int) -> None:
    """The ``need`` of a buffer that holds the whole file (a memory map, bytes)."""


def is_zero(
    buf: Buffer, start: int, end: int, fd: int | None = None, need: Callable[[int, int], None] = already_loaded
) -> bool:
    """Whether ``buf[start:end]`` is all zero bytes.

    A preallocated segment (``preallocate=true``, or a sparse copy) can be a gigabyte of holes:
    with ``fd`` the holes are skipped with ``lseek(SEEK_DATA/SEEK_HOLE)`` without being read,
    and the data regions are compared a chunk at a time, each chunk's pages dropped from the
    resident set once compared (as :meth:`~kafka_audit.record.file_records.FileRecords._release` does for walked batches).
    """
    view = memoryview(buf)
    chunk = 1 << 20
    zeros = bytes(min(chunk, max(0, end - start)))
    releasable = buf if isinstance(buf, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED") else None
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
            if releasable is not None and same:
                # Only pages of zeros: in a RangeBuffer's anonymous map they read back as zeros.
                _drop_pages(releasable, at, upto)
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


def tail_problem(
    buf: Buffer,
    pos: int,
    end: int,
    message: str,
    *,
    check: str = CheckId.TRUNCATED_BATCH,
    details: dict[str, int] | None = None,
    offset: int | None = None,
    fd: int | None = None,
    need: Callable[[int, int], None] | None = None,
) -> Problem | None:
    """A problem that ends the walk; None for a tail of zeros: preallocated bytes after the last
    batch are not data (FileRecords.open with preallocate, SPEC incomplete_tail)."""
    details = dict(details or {})
    if is_zero(buf, pos, end, fd, need or already_loaded):
        return None
    details["unread_bytes"] = end - pos
    return Problem(check, pos, message, offset=offset, details=details, incomplete=check == CheckId.TRUNCATED_BATCH)


def torn_by_zeros(batch: RecordBatch, end: int) -> Problem:
    """The last batch of a preallocated file, cut off mid-write: it fails its CRC and only zeros
    follow it (SPEC incomplete_tail)."""
    after = batch.position + batch.size
    return Problem(
        CheckId.TRUNCATED_BATCH,
        batch.position,
        f"The batch at offset {batch.base_offset} fails its CRC and only {end - after} zero bytes follow it "
        f"(a write cut off in a preallocated segment)",
        offset=batch.base_offset,
        details={"size": batch.size - LOG_OVERHEAD, "stored_crc": batch.stored_crc, "unread_bytes": end - batch.position},
        incomplete=True,
    )


def unread_problem(pos: int, end: int) -> Problem:
    """The rest of a file after repeated framing problems: not a log."""
    return Problem(
        CheckId.TRUNCATED_BATCH,
        pos,
        f"Stopped after repeated framing errors: {end - pos} bytes at the end of the file are not audited",
        details={"unread_bytes": end - pos},
    )
