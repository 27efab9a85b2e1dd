"""Reading a live broker's files without hurting it (SPEC section 1, issue 30).

A broker serves consumers from the page cache; a scan that reads ``log.dirs`` in full would
evict their hot pages and compete with the broker's own I/O. So, on Linux, best effort (any
failure leaves the read as it was):

- reads run at the idle I/O priority class (``ioprio_set(IOPRIO_WHO_PROCESS, 0,
  IOPRIO_CLASS_IDLE)``, what ``ionice -c3`` does: Yelp's kafka-corruption-check ran Kafka's dump
  tool under ``ionice`` on live brokers for the same reason);
- before a range is read, ``mincore`` over a map of it says which of its pages are already in the
  cache; after the read, ``posix_fadvise(POSIX_FADV_DONTNEED)`` drops only the pages that were
  not: the scan's own. DONTNEED over the whole file would evict the consumers' pages too.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import mmap
import os
import platform
import sys

# linux/ioprio.h: IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT, for IOPRIO_WHO_PROCESS (0: this thread).
_IOPRIO_IDLE = 3 << 13
_IOPRIO_WHO_PROCESS = 1
# The ioprio_set syscall number by machine (asm/unistd.h); other machines read at normal priority.
_IOPRIO_SET = {"x86_64": 251, "amd64": 251, "aarch64": 30, "arm64": 30}
_PROT_READ, _MAP_SHARED = 0x1, 0x01
_MAP_FAILED = ctypes.c_void_p(-1).value
PAGE = mmap.PAGESIZE
# mincore's byte per page to 1 (bit 0 set: in the page cache) or 0.
_RESIDENT = bytes(value & 1 for value in range(256))


@functools.cache
def libc() -> ctypes.CDLL | None:
    """The C library with the signatures used here, or None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        libc.mremap.restype = ctypes.c_void_p
        libc.mremap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
        return libc
    except (OSError, AttributeError):
        return None


def idle_io_priority() -> bool:
    """Put the calling thread in the idle I/O class; whether the kernel accepted it."""
    c = libc()
    number = _IOPRIO_SET.get(platform.machine().lower())
    if c is None or number is None:
        return False
    return bool(c.syscall(number, _IOPRIO_WHO_PROCESS, 0, _IOPRIO_IDLE) == 0)


def resident_pages(fd: int, start: int, length: int) -> bytes | None:
    """One byte per page of ``[start, start + length)`` (from the page holding ``start``), bit 0
    set where the page is in the page cache (``mincore``); None when it cannot be told. Mapping
    a file and asking ``mincore`` touches no page, so a file shrunk meanwhile costs no SIGBUS."""
    c = libc()
    if c is None or length <= 0:
        return None
    first = start // PAGE * PAGE
    span = start + length - first
    pages = -(-span // PAGE)
    address = c.mmap(None, span, _PROT_READ, _MAP_SHARED, fd, first)
    if address is None or address == _MAP_FAILED:
        return None
    try:
        vector = (ctypes.c_ubyte * pages)()
        if c.mincore(address, span, vector) != 0:
            return None
        return bytes(vector)
    finally:
        c.munmap(address, span)


def drop_pages(fd: int, start: int, length: int, resident: bytes) -> None:
    """``POSIX_FADV_DONTNEED`` each run of pages of ``[start, start + length)`` that
    :func:`resident_pages` found out of the cache; the pages found in it stay."""
    if not hasattr(os, "posix_fadvise"):
        return
    first = start // PAGE
    flags = resident.translate(_RESIDENT)  # 1 where the page was in the cache, else 0
    cold = flags.find(0)
    while cold != -1:
        warm = flags.find(1, cold)
        end = len(flags) if warm == -1 else warm
        try:
            os.posix_fadvise(fd, (first + cold) * PAGE, (end - cold) * PAGE, os.POSIX_FADV_DONTNEED)
        except OSError:
            return
        cold = -1 if warm == -1 else flags.find(0, warm)


class PageCacheGuard:
    """Around each read of one file: :meth:`before` notes which pages are resident, :meth:`after`
    drops the ones the read brought in."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        # No read-ahead on this handle: the kernel would fill pages past the range checked by
        # mincore, which this guard would then not drop. The reads are large (a chunk) anyway.
        if hasattr(os, "posix_fadvise"):
            with contextlib.suppress(OSError):
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)

    def before(self, start: int, length: int) -> bytes | None:
        return resident_pages(self.fd, start, length)

    def after(self, start: int, length: int, resident: bytes | None) -> None:
        if resident is not None:
            drop_pages(self.fd, start, length, resident)
