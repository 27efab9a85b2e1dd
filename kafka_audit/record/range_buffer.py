"""A remote segment as a buffer: ranged reads ahead of the walk, released behind it.

The segment reader (:func:`~kafka_audit.record.file_records.iter_batches`) reads a buffer at
the file's own byte positions, as it reads a memory-mapped local file. For an object in a
store, :class:`RangeBuffer` is an anonymous memory map the size of the object: its pages cost
nothing until written, ranged reads of :data:`CHUNK_BYTES` fill it ahead of the walk (up to
:data:`READ_AHEAD` chunks in flight on threads while the walk parses), and
:meth:`RangeBuffer.release` behind the walk frees the pages again. The resident set stays at a
few chunks whatever the object's size; the object is never read whole into memory. With a :class:`~kafka_audit.io.page_pool.PagePool`
(the request's), the pages released are passed on to the next read, of this map or the next
task's, instead of freed: a read into them costs no page fault.
"""

from __future__ import annotations

import bisect
import mmap
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from kafka_audit.io.page_cache import PAGE
from kafka_audit.io.page_pool import PagePool, map_address
from kafka_audit.record.record_batch import V2_RECORD_BATCH_OVERHEAD

# Bytes per ranged read: large enough that a request's latency is small beside its transfer.
CHUNK_BYTES = 16 * 1024 * 1024
# Chunks read ahead of the walk.
READ_AHEAD = 2
# Cuts of one map into separate mappings at most (each piece of pages moved in or out makes one):
# past this many its reads fault their pages in and its walk frees them, as without a pool, so
# that no file, however it makes the walk read, runs the process out of mappings (vm.max_map_count).
_MAX_CUTS = 512
# Pages of a map moved into the pool at least this many bytes at a time.
_MIN_PIECE = 64 * 1024
# A read past the range a task walks (its last batch runs over its end) fetches at least this.
_MIN_READ = 256 * 1024


def _read_end(high: int, needed: int, limit: int, size: int, chunk: int) -> int:
    """Where a read that must reach ``needed`` ends: a chunk within the walk's range, at least
    :data:`_MIN_READ` past it."""
    if high < limit:
        return max(needed, min(limit, high + chunk))
    return min(size, max(needed, high + _MIN_READ))


def first_read(size: int, start: int, stop: int | None, chunk: int = CHUNK_BYTES) -> tuple[int, int]:
    """The range the first read of a walk of ``[start, stop)`` asks for (a task's first batch
    header and what follows it), so that it can be started ahead of the walk."""
    limit = size if stop is None else min(size, stop)
    return start, _read_end(start, min(size, start + V2_RECORD_BATCH_OVERHEAD), limit, size, chunk)


class Ranges(Protocol):
    """Where the bytes come from (:class:`kafka_audit.io.storage_context.RangeReader`)."""

    size: int

    def read(self, start: int, stop: int) -> bytes: ...


class RangeBuffer:
    """``buffer`` holds the object's bytes at their own positions wherever :meth:`need` was
    called; :meth:`walk` sets the range a walk will cover, which is read ahead. ``pages``: where
    released pages go and reads take theirs from (none: freed, and faulted in anew)."""

    def __init__(
        self, ranges: Ranges, chunk: int = CHUNK_BYTES, read_ahead: int = READ_AHEAD, pages: PagePool | None = None
    ) -> None:
        self.ranges = ranges
        self.size = ranges.size
        self.chunk = chunk
        self.read_ahead = read_ahead
        # Private: madvise(MADV_DONTNEED) frees a private anonymous page (a shared one would keep it).
        private = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
        self.buffer: mmap.mmap | bytearray = mmap.mmap(-1, self.size, flags=private) if self.size else bytearray()
        self._pool: ThreadPoolExecutor | None = None
        self._queue: deque[tuple[int, int, Future[None]]] = deque()
        self._low = self._high = 0  # [low, high) is loaded
        self._limit = self.size  # read ahead no further than this
        self._pages = pages
        self._address = map_address(self.buffer) if pages is not None and isinstance(self.buffer, mmap.mmap) else None
        # Where the map may be cut into separate mappings (pages moved in or out there): the pages
        # of a range are moved mapping by mapping.
        self._cuts: list[int] = []
        self._cuts_lock = threading.Lock()  # reads ahead lend pages on their threads

    def walk(self, start: int, stop: int | None) -> None:
        """A walk of the batches starting in ``[start, stop)`` begins: read ahead from ``start``."""
        self._restart(start)
        self._limit = self.size if stop is None else min(self.size, stop)

    def need(self, start: int, stop: int) -> None:
        """Make ``buffer[start:stop]`` hold the object's bytes. Bytes more than a chunk apart
        from those read (or being read ahead) are not read to join them: a hop over a batch
        whose length field claims 2 GiB (``split_points``) reads from where it lands, not the
        2 GiB before it."""
        if self._low <= start and stop <= self._high:  # most calls: already read
            return
        stop = min(stop, self.size)
        ahead = self._queue[-1][1] if self._queue else self._high
        if start > ahead + self.chunk or stop < self._low - self.chunk:
            self._restart(start)
        if start < self._low:
            self._fill(start, self._low)
            self._low = start
        while self._high < stop:
            if self._queue:
                _, end, future = self._queue.popleft()
                future.result()  # the read's OSError surfaces here, in the walk
                self._high = end
                continue
            end = _read_end(self._high, stop, self._limit, self.size, self.chunk)
            self._fill(self._high, end)
            self._high = end
        self._read_ahead()

    def loaded_to(self, start: int) -> int:
        """How far ``buffer`` holds the object's bytes from ``start`` on (``start``: none)."""
        return self._high if self._low <= start < self._high else start

    def skip(self, upto: int) -> None:
        """The walk passed over ``[high, upto)`` without the buffer (a batch read by ranges): read
        on from ``upto``, not the bytes before it."""
        if upto > self._high:
            self._restart(upto)

    def _restart(self, start: int) -> None:
        """Read on from ``start``, forgetting the bytes read so far (reads in flight are waited for)."""
        self._drain()
        self._low = self._high = start

    def release(self, start: int, stop: int) -> None:
        """Free the pages of ``[start, stop)`` (page-aligned; the walk passed them): into the page
        pool, the rest ``madvise(MADV_DONTNEED)``. They read as zeros now."""
        if not isinstance(self.buffer, mmap.mmap) or stop <= start:
            return
        if self._keep(start, stop) < stop - start and hasattr(mmap, "MADV_DONTNEED"):
            self.buffer.madvise(mmap.MADV_DONTNEED, start, stop - start)  # the pages moved are gone already
        if stop > self._low:
            self._low = min(stop, self._high)

    def close(self) -> None:
        self._drain()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if isinstance(self.buffer, mmap.mmap):
            # The pages read last go to the next read; the map's are freed with it.
            self._keep(self._low // PAGE * PAGE, min(-(-self._high // PAGE) * PAGE, -(-self.size // PAGE) * PAGE))
            self.buffer.close()

    def _keep(self, start: int, stop: int) -> int:
        """Move the pages of ``[start, stop)`` (page-aligned) into the page pool, mapping by
        mapping (a piece under :data:`_MIN_PIECE` is left: not worth a mapping of the pool's);
        the bytes moved."""
        if self._pages is None or self._address is None or stop <= start or len(self._cuts) >= _MAX_CUTS:
            return 0
        kept = 0
        with self._cuts_lock:
            cuts = self._cuts
            inner = cuts[bisect.bisect_right(cuts, start) : bisect.bisect_left(cuts, stop)]
            for piece_start, piece_stop in zip([start, *inner], [*inner, stop], strict=True):
                if piece_stop - piece_start < _MIN_PIECE:
                    continue
                moved = self._pages.keep(self._address + piece_start, piece_stop - piece_start)
                if moved:
                    self._cut(piece_start)
                    self._cut(piece_start + moved)
                kept += moved
                if moved < piece_stop - piece_start:
                    break  # the pool is full
        return kept

    def _lend(self, start: int, stop: int) -> None:
        """Put pooled pages under the whole pages of ``[start, stop)``, about to be read."""
        if self._pages is None or self._address is None or len(self._cuts) >= _MAX_CUTS:
            return
        at, last = -(-start // PAGE) * PAGE, stop // PAGE * PAGE
        if last <= at:
            return
        with self._cuts_lock:
            for length in self._pages.lend(self._address + at, last - at):
                self._cut(at)
                at += length
                self._cut(at)

    def _cut(self, position: int) -> None:
        index = bisect.bisect_left(self._cuts, position)
        if index == len(self._cuts) or self._cuts[index] != position:
            self._cuts.insert(index, position)

    def _read_ahead(self) -> None:
        if self.read_ahead <= 0:
            return
        next_start = self._queue[-1][1] if self._queue else self._high
        while len(self._queue) < self.read_ahead and next_start < self._limit:
            end = min(self._limit, next_start + self.chunk)
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.read_ahead, thread_name_prefix="range-read")
            self._queue.append((next_start, end, self._pool.submit(self._fill, next_start, end)))
            next_start = end

    def _fill(self, start: int, stop: int) -> None:
        self._lend(start, stop)
        read_into = getattr(self.ranges, "read_into", None)
        if read_into is not None and stop > start:
            # A local file (io.local_file.LocalFile): pread straight into the buffer's pages.
            view = memoryview(self.buffer)[start:stop]
            try:
                read_into(view, start)
            finally:
                view.release()
            return
        data = self.ranges.read(start, stop)
        if len(data) != stop - start:
            raise OSError(f"the object ended after {start + len(data)} bytes, not {stop} (changed while read?)")
        self.buffer[start:stop] = data

    def _drain(self) -> None:
        """Wait for reads in flight (their pages may be written still) and forget them."""
        while self._queue:
            _, _, future = self._queue.popleft()
            future.exception()
