"""One request's storage: its settings and what it owns while it reads (SPEC sections 1, 3 and 5).

A :class:`StorageContext` is made once per request (by the front door, or by an executor's task
from the :class:`~kafka_audit.io.storage.StorageSettings` the task carries) and passed down to
every reader. It owns what the request's reads share: the count of requests sent to object stores
and the bytes they returned (the summary's ``requests`` and ``bytes_fetched``, SPEC section 3),
the read-ahead of small objects (a thread pool made on first use; :meth:`~StorageContext.close`
ends it), the tiered-storage plugin's manifests read so far (``rsm_objects``) and the memory pages
its segment reads pass on to each other (``page_pool``). It stays in its
process: the settings travel, never the context.
"""

from __future__ import annotations

import errno
import os
import threading
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import Any

from kafka_audit.io.page_pool import PagePool
from kafka_audit.io.storage import (
    INDEX_REF_MARK,
    StorageSettings,
    check_scheme,
    is_remote,
    local_path,
    open_filesystem,
    os_error,
    scheme,
)

# Reads asked for ahead: at most this many are held, taken or not, so reading ahead never runs
# further ahead of the reader than that.
PREFETCH_DEPTH = 16
# The schemes read through s3fs, whose client tells each request it sends.
_S3 = frozenset({"s3", "s3a"})


class StorageContext:
    """The settings of one request and the parts its reads share (see the module's docstring)."""

    def __init__(self, settings: StorageSettings | None = None) -> None:
        self.settings = settings if settings is not None else StorageSettings()
        self._lock = threading.Lock()
        self._sent = [0, 0]
        # (path, start, stop) -> Future of the bytes: reads started ahead of their reader.
        self._prefetched: dict[tuple[str, int, int], Future[bytes]] = {}
        self._to_prefetch: deque[tuple[str, int, int]] = deque()
        self._pool: ThreadPoolExecutor | None = None
        # Remote objects a listing showed empty (:meth:`prefetching`): read as no bytes, with no
        # request (a ranged GET of an empty object is refused, 416, and then asked about).
        self._empty: frozenset[str] = frozenset()
        # The tiered-storage plugin's manifests by segment stem, oldest first (rsm_objects).
        self.manifests: OrderedDict[str, Any] = OrderedDict()
        self.manifests_lock = threading.Lock()
        # Pages the segment reads release, taken by the next read (record.range_buffer).
        self.page_pool = PagePool()

    def __repr__(self) -> str:
        return f"StorageContext({self.settings!r})"

    def __reduce__(self) -> Any:
        raise TypeError("a StorageContext stays in its process: send its settings (StorageSettings)")

    def __enter__(self) -> StorageContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the read-ahead: reads not started are dropped, those under way are waited for."""
        pool, self._pool = self._pool, None
        for pending in self._prefetched.values():
            pending.cancel()
        self._prefetched.clear()
        self._to_prefetch.clear()
        self.page_pool.clear()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    @property
    def max_read_rate(self) -> float | None:
        """The ``--max-read-rate`` cap (MB/s) of local reads, or None (no cap)."""
        return self.settings.max_read_rate

    @property
    def rsm_key(self) -> Any:
        """The ``--rsm-key-file`` key (an ``RsmKey``), or None."""
        return self.settings.rsm_key

    def redact_secrets(self, text: str) -> str:
        """``text`` without URI credentials and secret option values (SPEC section 1)."""
        return self.settings.redact_secrets(text)

    def os_error(self, uri: str, exc: BaseException) -> OSError:
        """One OSError for a failed remote call on ``uri``, its secrets redacted."""
        return os_error(uri, exc, self.settings)

    # -- requests and bytes fetched ------------------------------------------------------------

    def count_request(self, fetched: int = 0, requests: int = 1) -> None:
        """Count ``requests`` sent to a store that returned ``fetched`` bytes of object data."""
        with self._lock:
            self._sent[0] += requests
            self._sent[1] += fetched

    def count_on(self, fs: Any, fetched: int = 0, requests: int = 1) -> None:
        """Count a call on ``fs`` (``requests`` as the library is expected to send them) that
        returned ``fetched`` bytes; on a filesystem whose client counts its own requests (s3fs:
        each HTTP request botocore sends, retries included, none for what its listing cache
        answers) only the bytes are counted here."""
        self.count_request(fetched, 0 if getattr(fs, "_kafka_audit_counted", False) else requests)

    def requests_sent(self) -> tuple[int, int]:
        """(requests, bytes fetched) so far: a step counts what it sent with :meth:`fetched_since`
        a reading taken as it started."""
        with self._lock:
            return self._sent[0], self._sent[1]

    def fetched_since(self, reading: tuple[int, int]) -> tuple[int, int]:
        """(requests, bytes fetched) since ``reading`` (a :meth:`requests_sent`)."""
        now = self.requests_sent()
        return now[0] - reading[0], now[1] - reading[1]

    # -- filesystems and reads -----------------------------------------------------------------

    def filesystem(self, uri: str) -> tuple[Any, str, str]:
        """``(fsspec filesystem, path inside it, prefix that turns such a path back into a URI)``,
        its requests counted by this context."""
        fs, key, prefix = open_filesystem(uri, self.settings)
        if scheme(uri) in _S3:
            _count_sends(fs, self)
        return fs, key, prefix

    def read_bytes(self, path: str, limit: int) -> bytes:
        """At most ``limit`` bytes from the start of a small file (a sidecar), local or remote;
        one request for a remote one (answered by the read-ahead when it asked for it first)."""
        if path in self._empty:
            return b""
        if not is_remote(path):
            with open(local_path(path), "rb") as handle:
                # read(limit) allocates the whole limit (256 MiB for a sidecar) before reading;
                # the file's size + 1 is enough to see all of it and whether it passes the limit.
                return handle.read(min(limit, os.fstat(handle.fileno()).st_size + 1))
        data = self.take_prefetched(path, 0, limit)
        return self._read_range(path, 0, limit) if data is None else data

    def range_reader(self, uri: str, size: int | None = None) -> RangeReader:
        """A ranged reader of the object ``uri`` (``size`` when the listing told it)."""
        return RangeReader(self, uri, size)

    def open_ranges(self, path: str) -> RangeReader | LocalRanges:
        """A ranged reader of ``path``, local or remote (its size asked now)."""
        return RangeReader(self, path) if is_remote(path) else LocalRanges(path)

    def check_path(self, path: str) -> None:
        """Raise an OSError naming why ``path`` (a URI) cannot be scanned: unsupported scheme,
        missing library, unreachable store, missing object or prefix."""
        check_scheme(path)
        if not is_remote(path):
            return
        fs, key, _ = self.filesystem(path)
        try:
            self.count_on(fs)
            fs.info(key)
        except Exception as exc:  # noqa: BLE001
            raise self.os_error(path, exc) from None

    def _read_range(self, path: str, start: int, stop: int) -> bytes:
        fs, key, _ = self.filesystem(path)
        try:
            data = fs.cat_file(key, start=start, end=stop)
        except Exception as exc:  # noqa: BLE001
            self.count_on(fs)
            if start == 0 and isinstance(exc, OSError) and exc.errno == errno.EINVAL:  # an empty object
                try:
                    self.count_on(fs)
                    if int(fs.info(key).get("size") or 0) == 0:
                        return b""
                except Exception:  # noqa: BLE001 - the first failure is the one to tell
                    pass
            raise self.os_error(path, exc) from None
        self.count_on(fs, len(data))
        return data

    # -- read-ahead ----------------------------------------------------------------------------

    @contextmanager
    def prefetching(self, paths: Iterable[str | None], limit: int, empty: frozenset[str] = frozenset()) -> Iterator[None]:
        """Within the block, the first ``limit`` bytes of these small remote files are read a few
        at a time ahead of :meth:`read_bytes` asking for them, so that the requests of a
        partition's sidecars overlap instead of following one another, and those in ``empty``
        (listed with no bytes) are not requested at all. Local paths are left alone; reads
        nobody took are dropped at the end."""
        items = [(p, 0, limit) for p in paths if p and is_remote(p) and INDEX_REF_MARK not in p and p not in empty]
        self._empty = empty
        for item in items:
            self.prefetch_range(*item)
        try:
            yield
        finally:
            self._empty = frozenset()
            self.discard_prefetched(items)

    def prefetch_range(self, path: str, start: int, stop: int) -> None:
        """Start reading ``[start, stop)`` of a remote object; :meth:`take_prefetched` (the range
        reader) or :meth:`read_bytes` takes the answer."""
        item = (path, start, stop)
        if item not in self._prefetched and item not in self._to_prefetch:
            self._to_prefetch.append(item)
        self._prefetch_more()

    def take_prefetched(self, path: str, start: int, stop: int) -> bytes | None:
        """The bytes of a read :meth:`prefetch_range` started, or None when none was started."""
        pending = self._prefetched.pop((path, start, stop), None)
        self._prefetch_more()
        return None if pending is None else pending.result()

    def discard_prefetched(self, items: Iterable[tuple[str, int, int]]) -> None:
        """Forget reads asked for ahead that nobody will take."""
        for item in items:
            pending = self._prefetched.pop(item, None)
            if pending is not None:
                pending.cancel()  # not started yet: never sent
            if item in self._to_prefetch:
                self._to_prefetch.remove(item)
        self._prefetch_more()

    def _prefetch_more(self) -> None:
        while self._to_prefetch and len(self._prefetched) < PREFETCH_DEPTH:
            item = self._to_prefetch.popleft()
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=PREFETCH_DEPTH, thread_name_prefix="prefetch")
            self._prefetched[item] = self._pool.submit(self._read_range, *item)


def _count_sends(fs: Any, storage: StorageContext) -> None:
    """s3fs: count every HTTP request its botocore client sends (``before-send`` event) in the
    context that uses the filesystem now. fsspec shares one instance per thread and arguments,
    and a process runs one request (or one task) at a time: the last context to ask is the one."""
    fs._kafka_audit_context = storage
    if getattr(fs, "_kafka_audit_counted", False):
        return
    try:
        events = fs.s3.meta.events
    except Exception:  # noqa: BLE001 - no client yet or not s3fs: calls are counted instead
        return
    events.register("before-send.s3", partial(_on_send, fs))
    fs._kafka_audit_counted = True


def _on_send(fs: Any, **_: Any) -> None:
    fs._kafka_audit_context.count_request()


class RangeReader:
    """Byte ranges of one remote object (one request per :meth:`read`). ``size``, when the
    listing already told it, saves asking the store again."""

    def __init__(self, storage: StorageContext, uri: str, size: int | None = None) -> None:
        self.uri = uri
        self.storage = storage
        self.fs, self.key, _ = storage.filesystem(uri)
        if size is not None:
            self.size = size
            return
        try:
            self.fs.invalidate_cache(self.key)  # the object as it is now, not as listed
            storage.count_on(self.fs)
            info = self.fs.info(self.key)
        except Exception as exc:  # noqa: BLE001
            raise storage.os_error(uri, exc) from None
        if info.get("type") == "directory":
            raise IsADirectoryError(errno.EISDIR, "Is a directory")
        self.size = int(info.get("size") or 0)

    def read(self, start: int, stop: int) -> bytes:
        """``[start, stop)`` of the object; fewer bytes only if the object is shorter."""
        data = self.storage.take_prefetched(self.uri, start, stop)
        if data is not None:
            return data
        try:
            data = self.fs.cat_file(self.key, start=start, end=stop)
        except Exception as exc:  # noqa: BLE001
            self.storage.count_on(self.fs)
            raise self.storage.os_error(self.uri, exc) from None
        self.storage.count_on(self.fs, len(data))
        return data


class LocalRanges:
    """Byte ranges of one local file, as :class:`RangeReader` reads those of an object."""

    def __init__(self, path: str) -> None:
        self.path = local_path(path)
        if os.path.isdir(self.path):
            raise IsADirectoryError(errno.EISDIR, "Is a directory")
        self.size = os.stat(self.path).st_size

    def read(self, start: int, stop: int) -> bytes:
        with open(self.path, "rb") as handle:
            handle.seek(start)
            return handle.read(max(0, stop - start))
