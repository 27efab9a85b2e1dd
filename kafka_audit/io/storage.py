"""Where the bytes come from: local paths and URIs (SPEC sections 1 and 5).

One home for "URI -> filesystem, listing, ranged reads". A PATH with a scheme (``s3://``,
``s3a://``, ``gs://``, ``abfs://``, ``abfss://``, ``hdfs://``) is read through fsspec (s3fs, gcsfs,
adlfs; HDFS through fsspec's wrapper of ``pyarrow.fs.HadoopFileSystem``), each an optional extra
(``pip install 'kafka-audit[s3]'``). ``file://`` URIs and plain paths stay local: they keep
:class:`~kafka_audit.record.file_records.FileRecords`' ``pread`` reads (:mod:`.local_file`).

Credentials and endpoints come from the libraries' usual environment (``AWS_*`` and
``AWS_ENDPOINT_URL`` for s3fs, ``GOOGLE_APPLICATION_CREDENTIALS`` for gcsfs, ``AZURE_STORAGE_*`` for
adlfs, ``HADOOP_HOME``/``CLASSPATH`` for libhdfs) and from ``--storage-option KEY=VALUE``, which
:func:`configure` installs in the process that reads (the driver, and every executor task: the
options travel with the tasks). Every failure of a remote call is an ``OSError`` whose text is one
line naming the cause, so the readers' existing handling (a note, a finding, an exit-2 line)
applies unchanged.
"""

from __future__ import annotations

import errno
import json
import os
import re
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote, urlparse

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# URI scheme -> (fsspec protocol, kafka-audit extra that installs its library).
_REMOTE = {
    "s3": ("s3", "s3"),
    "s3a": ("s3", "s3"),
    "gs": ("gs", "gcs"),
    "gcs": ("gs", "gcs"),
    "abfs": ("abfs", "azure"),
    "abfss": ("abfs", "azure"),
    "az": ("abfs", "azure"),
    "hdfs": ("hdfs", "hdfs"),
}
# The --storage-option settings of this process (configure()).
_options: dict[str, Any] = {}
# The option under which ``--rsm-key-file``'s key travels with the tasks (SPEC section 5). It is
# taken out of the options before any filesystem library sees them, and its value never prints
# (``rsm_objects.RsmKey``).
RSM_KEY_OPTION = "rsm_key"
_rsm_key: Any = None
# The option under which ``--max-read-rate`` (MB/s) travels with the tasks to every process that
# reads local files (io.local_file); no filesystem library sees it.
READ_RATE_OPTION = "max_read_rate"
_read_rate: list[float | None] = [None]
_generation = 0
# Marks the sidecar path of an index inside a tiered-storage ``.indexes`` object (rsm_objects).
INDEX_REF_MARK = ".indexes#"
# Requests this process sent to object stores and the bytes they returned (the summary's
# ``requests`` and ``bytes_fetched``, SPEC section 3); the read-ahead threads count too.
_sent = [0, 0]
_sent_lock = threading.Lock()


def count_request(fetched: int = 0, requests: int = 1) -> None:
    """Count ``requests`` sent to a store that returned ``fetched`` bytes of object data."""
    with _sent_lock:
        _sent[0] += requests
        _sent[1] += fetched


def count_on(fs, fetched: int = 0, requests: int = 1) -> None:
    """Count a call on ``fs`` (``requests`` as the library is expected to send them) that returned
    ``fetched`` bytes; on a filesystem whose client counts its own requests (s3fs: each HTTP
    request botocore sends, retries included, none for what its listing cache answers) only the
    bytes are counted here."""
    count_request(fetched, 0 if getattr(fs, "_kafka_audit_counted", False) else requests)


def _count_sends(fs) -> None:
    """s3fs: count every HTTP request its botocore client sends (``before-send`` event)."""
    if getattr(fs, "_kafka_audit_counted", False):
        return
    try:
        events = fs.s3.meta.events
    except Exception:  # noqa: BLE001 - no client yet or not s3fs: calls are counted instead
        return
    events.register("before-send.s3", _on_send)
    fs._kafka_audit_counted = True


def _on_send(**_: Any) -> None:
    count_request()


def requests_sent() -> tuple[int, int]:
    """(requests, bytes fetched) by this process so far: a step counts what it sent with
    :func:`fetched_since` a reading taken as it started."""
    with _sent_lock:
        return _sent[0], _sent[1]


def fetched_since(reading: tuple[int, int]) -> tuple[int, int]:
    """(requests, bytes fetched) since ``reading`` (a :func:`requests_sent`)."""
    now = requests_sent()
    return now[0] - reading[0], now[1] - reading[1]


def scheme(path: str) -> str | None:
    """The URI scheme of ``path`` (lower case), or None for a plain path."""
    match = _SCHEME.match(path)
    return match.group(1).lower() if match else None


def is_remote(path: str) -> bool:
    """Whether ``path`` is read through a remote filesystem library (not ``file://``)."""
    return scheme(path) in _REMOTE


def local_path(path: str) -> str:
    """A plain path for ``path``: ``file:///x`` becomes ``/x``; other paths are returned as given."""
    if scheme(path) == "file":
        parsed = urlparse(path)
        return unquote(parsed.path) or "/"
    return path


def check_scheme(path: str) -> None:
    """Raise an OSError for a URI whose scheme no reader supports."""
    found = scheme(path)
    if found is not None and found != "file" and found not in _REMOTE:
        supported = ", ".join(f"{s}://" for s in ["file", *_REMOTE])
        raise OSError(errno.EINVAL, f"unsupported URI scheme {found}:// (supported: {supported})")


def parse_option_value(text: str) -> Any:
    """``true``/``false`` become booleans and ``{...}``/``[...]`` JSON (``client_kwargs``); the rest
    stays text (an access key of digits must not turn into a number)."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if text.strip().startswith(("{", "[")):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def configure(options: Mapping[str, Any] | Iterable[tuple[str, Any]] | None) -> None:
    """Install the ``--storage-option`` settings for the remote filesystems of this process (and
    the ``--rsm-key-file`` key, which no filesystem library is given)."""
    global _options, _rsm_key, _generation
    _options = dict(options or {})
    _rsm_key = _options.pop(RSM_KEY_OPTION, None)
    _read_rate[0] = _options.pop(READ_RATE_OPTION, None)
    _generation += 1


def max_read_rate() -> float | None:
    """The ``--max-read-rate`` cap (MB/s) installed by :func:`configure`, or None (no cap)."""
    return _read_rate[0]


def generation() -> int:
    """How many times :func:`configure` ran in this process: what was read under other settings
    (another task, another scan) is read again (``rsm_objects``' manifest cache)."""
    return _generation


def rsm_key() -> Any:
    """The ``--rsm-key-file`` key installed by :func:`configure` (an ``RsmKey``), or None."""
    return _rsm_key


def options_tuple(options: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    """Options as a hashable, picklable tuple that travels with the tasks."""
    return tuple(sorted((options or {}).items()))


def filesystem(uri: str):
    """``(fsspec filesystem, path inside it, prefix that turns such a path back into a URI)``."""
    found = scheme(uri)
    protocol, extra = _REMOTE[found or ""]
    try:
        import fsspec

        cls = fsspec.get_filesystem_class(protocol)
    except ImportError as exc:
        raise OSError(
            errno.ENOSYS, f"{found}:// needs an optional package ({exc}): pip install 'kafka-audit[{extra}]'"
        ) from None
    try:
        kwargs = {**cls._get_kwargs_from_urls(uri), **_options}
        fs = cls(**kwargs)
    except Exception as exc:  # noqa: BLE001 - the library's own failure, told in one line
        raise OSError(errno.EIO, _one_line(f"cannot open {found}:// filesystem", exc)) from None
    if protocol == "s3":
        _count_sends(fs)
    key = cls._strip_protocol(uri).rstrip("/") or "/"
    bare = uri.rstrip("/")
    prefix = bare[: len(bare) - len(key)] if bare.endswith(key) else f"{found}://"
    return fs, key, prefix


# The user information of a URI (``s3://key:secret@bucket``): the part before ``@`` in its authority.
# A URI's user:password (``s3://key:secret@bucket``). A userinfo without a colon is a name, not a
# credential: abfs's ``container@account`` stays, as the error must say which container.
_URI_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s:]*:[^/?#@\s]*@")
# Option values shorter than this are not looked for in messages (``true``, ``us``).
_SHORTEST_SECRET = 4
# Options that say where and how to connect, not who: their values stay in error lines, which
# name the endpoint that did not answer (fsspec's s3fs/gcsfs/adlfs/HDFS option names).
_PUBLIC_OPTIONS = frozenset({"endpoint_url", "endpoint", "region", "region_name", "anon", "use_ssl", "host",
                             "port", "project", "account_name", "requester_pays", "config_kwargs"})


def redact_secrets(text: str) -> str:
    """``text`` (an error line) with URI credentials and the values of ``--storage-option``
    (but those of :data:`_PUBLIC_OPTIONS`) replaced by ``***`` (SPEC section 1)."""
    text = _URI_USERINFO.sub(r"\1***@", text)
    for key, value in _options.items():
        if key not in _PUBLIC_OPTIONS and isinstance(value, str) and len(value) >= _SHORTEST_SECRET:
            text = text.replace(value, "***")
    return text


def _one_line(what: str | None, exc: BaseException) -> str:
    """The library's exception as one line: its type, its first line, and what to do for HDFS."""
    text = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    hint = ""
    if "libjvm" in text or "libhdfs" in text:
        hint = " (HDFS is read through libhdfs: set JAVA_HOME, HADOOP_HOME and CLASSPATH=$(hadoop classpath --glob))"
    cause = f"{type(exc).__name__}: {redact_secrets(text)[:300]}{hint}"
    return f"{what}: {cause}" if what else cause


def os_error(uri: str, exc: BaseException) -> OSError:
    """One OSError for any failure of a remote call on ``uri`` (a missing object keeps ENOENT);
    its text names the cause, the caller names the path."""
    if isinstance(exc, FileNotFoundError):
        return FileNotFoundError(errno.ENOENT, "No such file or directory")
    if isinstance(exc, PermissionError):
        return PermissionError(errno.EACCES, "Permission denied")
    return OSError(errno.EIO, _one_line(None, exc))


def read_bytes(path: str, limit: int) -> bytes:
    """At most ``limit`` bytes from the start of a small file (a sidecar), local or remote; one
    request for a remote one (answered by :func:`prefetch` when it asked for it first)."""
    if path in _empty:
        return b""
    if not is_remote(path):
        with open(local_path(path), "rb") as handle:
            # read(limit) allocates the whole limit (256 MiB for a sidecar) before reading; the
            # file's size + 1 is enough to see all of it and whether it passes the limit.
            return handle.read(min(limit, os.fstat(handle.fileno()).st_size + 1))
    data = take_prefetched(path, 0, limit)
    return _read_range(path, 0, limit) if data is None else data


# Reads asked for ahead: (path, start, stop) -> Future of the bytes. At most _PREFETCH_DEPTH are
# held, taken or not, so reading ahead never runs further ahead of the reader than that.
_PREFETCH_DEPTH = 16
_prefetched: dict[tuple[str, int, int], Future] = {}
_to_prefetch: deque[tuple[str, int, int]] = deque()
_pool: ThreadPoolExecutor | None = None
# Remote objects a listing showed empty (:func:`prefetching`): read as no bytes, with no request
# (a ranged GET of an empty object is refused, 416, and then asked about: two requests).
_empty: frozenset[str] = frozenset()


@contextmanager
def prefetching(paths: Iterable[str | None], limit: int, empty: frozenset[str] = frozenset()) -> Iterator[None]:
    """Within the block, the first ``limit`` bytes of these small remote files are read a few at
    a time ahead of :func:`read_bytes` asking for them, so that the requests of a partition's
    sidecars overlap instead of following one another, and those in ``empty`` (listed with no
    bytes) are not requested at all. Local paths are left alone; reads nobody took are dropped at
    the end."""
    global _empty
    items = [(p, 0, limit) for p in paths if p and is_remote(p) and INDEX_REF_MARK not in p and p not in empty]
    _empty = empty
    for item in items:
        prefetch_range(*item)
    try:
        yield
    finally:
        _empty = frozenset()
        discard_prefetched(items)


def prefetch_range(path: str, start: int, stop: int) -> None:
    """Start reading ``[start, stop)`` of a remote object; :func:`take_prefetched` (the range
    reader) or :func:`read_bytes` takes the answer."""
    item = (path, start, stop)
    if item not in _prefetched and item not in _to_prefetch:
        _to_prefetch.append(item)
    _prefetch_more()


def take_prefetched(path: str, start: int, stop: int) -> bytes | None:
    """The bytes of a read :func:`prefetch_range` started, or None when none was started."""
    pending = _prefetched.pop((path, start, stop), None)
    _prefetch_more()
    return None if pending is None else pending.result()


def discard_prefetched(items: Iterable[tuple[str, int, int]]) -> None:
    """Forget reads asked for ahead that nobody will take."""
    for item in items:
        pending = _prefetched.pop(item, None)
        if pending is not None:
            pending.cancel()  # not started yet: never sent
        if item in _to_prefetch:
            _to_prefetch.remove(item)
    _prefetch_more()


def _prefetch_more() -> None:
    global _pool
    while _to_prefetch and len(_prefetched) < _PREFETCH_DEPTH:
        item = _to_prefetch.popleft()
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_PREFETCH_DEPTH, thread_name_prefix="prefetch")
        _prefetched[item] = _pool.submit(_read_range, *item)


def _read_range(path: str, start: int, stop: int) -> bytes:
    fs, key, _ = filesystem(path)
    try:
        data = fs.cat_file(key, start=start, end=stop)
    except Exception as exc:  # noqa: BLE001
        count_on(fs)
        if start == 0 and isinstance(exc, OSError) and exc.errno == errno.EINVAL:  # an empty object
            try:
                count_on(fs)
                if int(fs.info(key).get("size") or 0) == 0:
                    return b""
            except Exception:  # noqa: BLE001 - the first failure is the one to tell
                pass
        raise os_error(path, exc) from None
    count_on(fs, len(data))
    return data


class RangeReader:
    """Byte ranges of one remote object (one request per :meth:`read`). ``size``, when the
    listing already told it, saves asking the store again."""

    def __init__(self, uri: str, size: int | None = None) -> None:
        self.uri = uri
        self.fs, self.key, _ = filesystem(uri)
        if size is not None:
            self.size = size
            return
        try:
            self.fs.invalidate_cache(self.key)  # the object as it is now, not as listed
            count_on(self.fs)
            info = self.fs.info(self.key)
        except Exception as exc:  # noqa: BLE001
            raise os_error(uri, exc) from None
        if info.get("type") == "directory":
            raise IsADirectoryError(errno.EISDIR, "Is a directory")
        self.size = int(info.get("size") or 0)

    def read(self, start: int, stop: int) -> bytes:
        """``[start, stop)`` of the object; fewer bytes only if the object is shorter."""
        data = take_prefetched(self.uri, start, stop)
        if data is not None:
            return data
        try:
            data = self.fs.cat_file(self.key, start=start, end=stop)
        except Exception as exc:  # noqa: BLE001
            count_on(self.fs)
            raise os_error(self.uri, exc) from None
        count_on(self.fs, len(data))
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


def open_ranges(path: str) -> RangeReader | LocalRanges:
    """A ranged reader of ``path``, local or remote (its size asked now)."""
    return RangeReader(path) if is_remote(path) else LocalRanges(path)


def check_path(path: str) -> None:
    """Raise an OSError naming why ``path`` (a URI) cannot be scanned: unsupported scheme,
    missing library, unreachable store, missing object or prefix."""
    check_scheme(path)
    if not is_remote(path):
        return
    fs, key, _ = filesystem(path)
    try:
        count_on(fs)
        fs.info(key)
    except Exception as exc:  # noqa: BLE001
        raise os_error(path, exc) from None
