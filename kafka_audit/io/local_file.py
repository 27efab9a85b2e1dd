"""A local file read as a scan of a live broker must read it (SPEC section 1).

- **One consistent view.** A file is read up to the size the scan listed (``FileRecords.slice``
  reads a segment up to the size it is given, never past it), with ``pread``: a file that a
  broker truncates or deletes mid-read gives a short read (an ``OSError`` naming what changed),
  where a memory map would kill the process with SIGBUS. :meth:`LocalFile.changed` says whether
  the file grew, shrank, vanished or was swapped (another inode at its path: the log cleaner's
  ``.swap`` renamed into place) since the listing.
- **The broker's page cache is left as it was** (:mod:`.page_cache`): reads run at idle I/O
  priority, and the pages a read brought into the cache are dropped after it, those that were
  resident before (a consumer's hot pages) are kept.
- **A read rate cap** (``--max-read-rate``, MB/s): reads wait so that this reader never reads
  faster than the cap.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time

from kafka_audit.errors import KafkaAuditError
from kafka_audit.io import page_cache

# Shown for each way a file can change under a scan (SPEC segment_changed's ``reason``).
GREW, SHRANK, VANISHED, SWAPPED = "grew", "shrank", "vanished", "swapped"


class FileChanged(KafkaAuditError, OSError):
    """A read met a file that is no longer what the scan listed (``reason``: :data:`SHRANK`,
    :data:`VANISHED` or :data:`SWAPPED`)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(errno.ESTALE, message)
        self.reason = reason


def unchanged(path: str, listed_size: int | None, listed_id: int = 0) -> bool:
    """Whether a local file is still the one listed: there, at least ``listed_size`` bytes, the
    same inode (0: not compared). A file in a store, or one never listed, counts as unchanged."""
    if listed_size is None or "://" in path:
        return True
    try:
        now = os.stat(path)
    except OSError:
        return False
    return now.st_size >= listed_size and (not listed_id or now.st_ino == listed_id)


class RateCap:
    """Waits so that the bytes counted never come faster than ``mb_per_s`` (None: no cap)."""

    def __init__(self, mb_per_s: float | None) -> None:
        self.bytes_per_s = mb_per_s * 1e6 if mb_per_s else None
        self._started = time.monotonic()
        self._bytes = 0
        self._lock = threading.Lock()

    def take(self, count: int) -> None:
        """Count ``count`` bytes about to be read; sleep first while over the cap."""
        if self.bytes_per_s is None:
            return
        with self._lock:
            self._bytes += count
            due = self._started + self._bytes / self.bytes_per_s
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)


class LocalFile:
    """Byte ranges of one local file, up to ``listed_size`` (its size when the scan listed it;
    None: its size now), read with ``pread`` at idle I/O priority. ``listed_id`` is the inode the
    listing saw (0: unknown). Use :meth:`close` (or a ``with`` block) to release the handle."""

    def __init__(
        self,
        path: str,
        listed_size: int | None = None,
        listed_id: int = 0,
        max_read_rate: float | None = None,
    ) -> None:
        self.path = path
        self.listed_id = listed_id
        try:
            self._handle = open(path, "rb", buffering=0)  # noqa: SIM115 - held open until close()
        except FileNotFoundError:
            if listed_size is not None:
                raise FileChanged(VANISHED, "the file was deleted after the scan listed it") from None
            raise
        self._fd = self._handle.fileno()
        try:
            info = os.fstat(self._fd)
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError(errno.EISDIR, "Is a directory")
            if listed_id and info.st_ino != listed_id:
                raise FileChanged(SWAPPED, "another file was put at its path after the scan listed it")
        except OSError:
            self._handle.close()
            raise
        self.size = info.st_size if listed_size is None else listed_size
        self._rate = RateCap(max_read_rate)
        self._cache = page_cache.PageCacheGuard(self._fd)

    def __enter__(self) -> LocalFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._handle.close()

    def fileno(self) -> int:
        return self._fd

    def read(self, start: int, stop: int) -> bytes:
        """``[start, stop)`` within the listed size (:meth:`read_into`)."""
        buffer = bytearray(max(0, min(stop, self.size) - start))
        self.read_into(memoryview(buffer), start)
        return bytes(buffer)

    def read_into(self, target: memoryview, start: int) -> None:
        """Fill ``target`` with the file's bytes from ``start``; :class:`FileChanged` when the file
        ends before (it shrank or vanished since the listing)."""
        page_cache.idle_io_priority()
        self._rate.take(len(target))
        resident = self._cache.before(start, len(target))
        done = 0
        while done < len(target):
            count = os.preadv(self._fd, [target[done:]], start + done)
            if count <= 0:
                break
            done += count
        self._cache.after(start, len(target), resident)
        if done < len(target):
            raise self.shortfall(start, done, len(target))

    def changed(self) -> str | None:
        """How the file differs now from the listing: :data:`GREW`, :data:`SHRANK`,
        :data:`VANISHED`, :data:`SWAPPED`, or None (the same size, the same inode, still there)."""
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            return VANISHED
        except OSError:
            return None
        if self.listed_id and now.st_ino != self.listed_id:
            return SWAPPED
        if now.st_size > self.size:
            return GREW
        if now.st_size < self.size:
            return SHRANK
        return None

    def shortfall(self, start: int, read: int, wanted: int) -> FileChanged:
        """The error of a read of ``wanted`` bytes at ``start`` that gave only ``read``."""
        reason = self.changed() or SHRANK
        return FileChanged(
            reason if reason != GREW else SHRANK,
            f"the file {reason} after the scan listed it: {read} of {wanted} bytes read at position {start}",
        )
