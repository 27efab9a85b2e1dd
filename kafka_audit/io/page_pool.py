"""Memory pages passed on from one segment read to the next, instead of freed and faulted anew.

A segment is read into an anonymous map the size of the file, at the file's own positions
(:class:`~kafka_audit.record.range_buffer.RangeBuffer`), and the walk releases the pages behind
it so that the resident set stays bounded. Released with ``madvise(MADV_DONTNEED)``, a page is
freed, and the next read into a fresh page costs a page fault and a zeroed page: one fault per
4 KiB read, most of the segment step's system time. A :class:`PagePool` keeps released pages
instead, up to ``capacity`` bytes, and moves them under the next read: ``mremap`` moves a
range's page table entries to another address, so the pages arrive present and are written
without a fault. The walk's addressing does not change (the map is still the file's size, each
byte at its own position); only which physical pages back the map does.

Taking pages out of a map uses ``MREMAP_DONTUNMAP`` (Linux 5.7 and later, for a private
anonymous map): the range stays mapped and reads as zeros afterwards, exactly as after
``MADV_DONTNEED``, so nothing that reads the map can meet a hole. Wherever a call fails (another
kernel, another system, a map the kernel will not move) the pool does nothing and the caller
frees the pages with ``MADV_DONTNEED`` as before. One pool per request (its
:class:`~kafka_audit.io.storage_context.StorageContext`); :meth:`clear` frees what it holds.
"""

from __future__ import annotations

import ctypes
import mmap
import threading
import weakref

from kafka_audit.io.page_cache import PAGE, libc

# Bytes of pages a pool holds at most: what the walk releases at once (file_records'
# release interval) and a read ahead of the walk, so that a long walk recycles all its pages.
CAPACITY_BYTES = 48 * 1024 * 1024
# Regions a pool holds at most (each one a mapping of the process's).
_MAX_REGIONS = 64
# linux/mman.h
_MREMAP_MAYMOVE, _MREMAP_FIXED, _MREMAP_DONTUNMAP = 1, 2, 4
_MAP_FAILED = ctypes.c_void_p(-1).value


def map_address(buffer: mmap.mmap) -> int | None:
    """The address of a writable memory map's first byte; None when it cannot be told."""
    try:
        anchor = ctypes.c_char.from_buffer(buffer)
    except (TypeError, ValueError, BufferError):
        return None
    address = ctypes.addressof(anchor)
    del anchor  # releases the export at once: the map can be closed
    return address


def _unmap_all(regions: list[tuple[int, int]]) -> None:
    c = libc()
    while regions:
        address, length = regions.pop()
        if c is not None:
            c.munmap(address, length)


class PagePool:
    """Pages released by one map's walk, lent to the next read of the same or another map."""

    def __init__(self, capacity: int = CAPACITY_BYTES) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._regions: list[tuple[int, int]] = []  # (address, length), page-aligned, newest last
        self._held = 0
        self._finalizer = weakref.finalize(self, _unmap_all, self._regions)

    @property
    def held(self) -> int:
        """Bytes of pages held (not all necessarily resident)."""
        return self._held

    def lend(self, address: int, length: int) -> list[int]:
        """Move held pages to ``[address, address + length)`` (page-aligned, inside a private
        anonymous map, about to be overwritten whole), from its start on; the lengths of the
        pieces moved, in order (each one a mapping of its own now)."""
        c = libc()
        moved = 0
        pieces: list[int] = []
        with self._lock:
            while c is not None and moved < length and self._regions:
                source, size = self._regions.pop()
                count = min(size, length - moved)
                result = c.mremap(source, count, count, _MREMAP_MAYMOVE | _MREMAP_FIXED, address + moved)
                if result is None or result == _MAP_FAILED:
                    self._regions.append((source, size))
                    break
                if count < size:
                    self._regions.append((source + count, size - count))
                self._held -= count
                moved += count
                pieces.append(count)
        return pieces

    def keep(self, address: int, length: int) -> int:
        """Take the pages of ``[address, address + length)`` (page-aligned, within one mapping:
        ``mremap`` moves no more) into the pool, from its start on, as far as its capacity
        allows; the range reads as zeros after. The bytes taken: the caller frees the rest
        (``MADV_DONTNEED``)."""
        c = libc()
        with self._lock:
            count = min(length, self.capacity - self._held) // PAGE * PAGE
            if c is None or count <= 0 or len(self._regions) >= _MAX_REGIONS:
                return 0
            result = c.mremap(address, count, count, _MREMAP_MAYMOVE | _MREMAP_DONTUNMAP, None)
            if result is None or result == _MAP_FAILED:
                return 0
            self._regions.append((result, count))
            self._held += count
        return count

    def clear(self) -> None:
        """Free the pages held."""
        with self._lock:
            _unmap_all(self._regions)
            self._held = 0
