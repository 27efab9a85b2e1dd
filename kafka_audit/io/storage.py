"""Where the bytes come from: local paths and URIs (SPEC sections 1 and 5).

One home for "URI -> filesystem, listing, ranged reads". A PATH with a scheme (``s3://``,
``s3a://``, ``gs://``, ``abfs://``, ``abfss://``, ``hdfs://``) is read through fsspec (s3fs, gcsfs,
adlfs; HDFS through fsspec's wrapper of ``pyarrow.fs.HadoopFileSystem``), each an optional extra
(``pip install 'kafka-audit[s3]'``). ``file://`` URIs and plain paths stay local: they keep
:class:`~kafka_audit.record.file_records.FileRecords`' memory map.

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
import posixpath
import re
import stat
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
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
    """Install the ``--storage-option`` settings for the remote filesystems of this process."""
    global _options
    _options = dict(options or {})


def options_tuple(options: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    """Options as a hashable, picklable tuple that travels with the tasks."""
    return tuple(sorted((options or {}).items()))


def _filesystem(uri: str):
    """``(fsspec filesystem, path inside it, prefix that turns such a path back into a URI)``."""
    found = scheme(uri)
    protocol, extra = _REMOTE[found]
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
    key = cls._strip_protocol(uri).rstrip("/") or "/"
    bare = uri.rstrip("/")
    prefix = bare[: len(bare) - len(key)] if bare.endswith(key) else f"{found}://"
    return fs, key, prefix


def _one_line(what: str | None, exc: BaseException) -> str:
    """The library's exception as one line: its type, its first line, and what to do for HDFS."""
    text = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    hint = ""
    if "libjvm" in text or "libhdfs" in text:
        hint = " (HDFS is read through libhdfs: set JAVA_HOME, HADOOP_HOME and CLASSPATH=$(hadoop classpath --glob))"
    cause = f"{type(exc).__name__}: {text[:300]}{hint}"
    return f"{what}: {cause}" if what else cause


def _os_error(uri: str, exc: BaseException) -> OSError:
    """One OSError for any failure of a remote call on ``uri`` (a missing object keeps ENOENT);
    its text names the cause, the caller names the path."""
    if isinstance(exc, FileNotFoundError):
        return FileNotFoundError(errno.ENOENT, "No such file or directory")
    if isinstance(exc, PermissionError):
        return PermissionError(errno.EACCES, "Permission denied")
    return OSError(errno.EIO, _one_line(None, exc))


@dataclass(frozen=True, slots=True)
class RemoteStat:
    """The part of ``os.stat_result`` discovery reads; ``st_ino`` is the object's key."""

    st_mode: int
    st_size: int
    st_mtime_ns: int | None
    st_dev: int = 0
    st_ino: str = ""


@dataclass(frozen=True, slots=True)
class RemoteEntry:
    """The part of ``os.DirEntry`` discovery reads."""

    name: str
    path: str
    directory: bool

    def is_dir(self, follow_symlinks: bool = True) -> bool:
        return self.directory

    def is_file(self, follow_symlinks: bool = True) -> bool:
        return not self.directory

    def is_symlink(self) -> bool:
        return False


class _Listing(list):
    """A list that is its own context manager, as ``os.scandir`` is."""

    def __enter__(self) -> "_Listing":
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class LocalTree:
    """Discovery's view of the local filesystem: ``os`` and ``os.path``, looked up at each call."""

    def stat(self, path: str) -> os.stat_result:
        return os.stat(path)

    def scandir(self, path: str):
        return os.scandir(path)

    def realpath(self, path: str) -> str:
        return os.path.realpath(path)

    def isfile(self, path: str) -> bool:
        return os.path.isfile(path)

    def isdir(self, path: str) -> bool:
        return os.path.isdir(path)

    def islink(self, path: str) -> bool:
        return os.path.islink(path)

    def join(self, *parts: str) -> str:
        return os.path.join(*parts)

    def dirname(self, path: str) -> str:
        return os.path.dirname(path)

    def basename(self, path: str) -> str:
        return os.path.basename(path)

    def relpath(self, path: str, root: str) -> str:
        return os.path.relpath(path, root)


class RemoteTree:
    """Discovery's view of one remote root, with the names of ``os``/``os.path`` it uses.

    The root's whole subtree is listed in one recursive listing (``find``, paginated by the
    library) on first use and answered from memory after that, so that looking for a
    segment's sidecars costs no request. Names starting with ``_`` or ``.`` are kept
    (``__consumer_offsets``, ``__transaction_state``): Spark's file sources drop them, so they
    are never used for listing."""

    def __init__(self, root: str) -> None:
        self.fs, self.root_key, self.prefix = _filesystem(root)
        self.uri_root = self.prefix + self.root_key
        self._infos: dict[str, dict] | None = None
        self._children: dict[str, list[str]] = {}

    def _key(self, path: str) -> str:
        path = path.rstrip("/")
        return path[len(self.prefix):] if path.startswith(self.prefix) else path

    def _uri(self, key: str) -> str:
        return self.prefix + key

    def _listing(self) -> dict[str, dict]:
        if self._infos is None:
            try:
                found = self.fs.find(self.root_key, withdirs=True, detail=True)
            except FileNotFoundError:
                found = {}
            except Exception as exc:  # noqa: BLE001
                raise _os_error(self.uri_root, exc) from None
            infos = {key.rstrip("/"): info for key, info in found.items()}
            for key in list(infos):  # folders that only exist as key prefixes
                parent = posixpath.dirname(key)
                while len(parent) > len(self.root_key) and parent not in infos:
                    infos[parent] = {"type": "directory", "size": 0}
                    parent = posixpath.dirname(parent)
            children: dict[str, list[str]] = {}
            for key in infos:
                if key != self.root_key:
                    children.setdefault(posixpath.dirname(key), []).append(key)
            self._infos, self._children = infos, children
        return self._infos

    def _in_tree(self, key: str) -> bool:
        return key == self.root_key or key.startswith(self.root_key.rstrip("/") + "/")

    def _info(self, key: str) -> dict:
        """The object's listing entry: from the root's listing inside it, one request outside it."""
        if self._in_tree(key):
            infos = self._listing()
            if key in infos:
                return infos[key]
            if key == self.root_key and self._children.get(key):
                return {"type": "directory", "size": 0}
            raise FileNotFoundError(errno.ENOENT, "No such file or directory")
        try:
            return self.fs.info(key)
        except Exception as exc:  # noqa: BLE001
            raise _os_error(self._uri(key), exc) from None

    def stat(self, path: str) -> RemoteStat:
        key = self._key(path)
        info = self._info(key)
        directory = info.get("type") == "directory"
        return RemoteStat(
            stat.S_IFDIR if directory else stat.S_IFREG,
            0 if directory else int(info.get("size") or 0),
            # No modification time: a store's object time is when it was uploaded, not a broker's
            # clock, so it is never taken as the reference time (audit.reference_time_problem).
            None,
            st_ino=key,
        )

    def _children_of(self, key: str) -> list[str]:
        self._listing()
        return self._children.get(key, [])

    def scandir(self, path: str) -> _Listing:
        """The folder's entries: from the root's listing inside it, one listing request outside
        it (the folder of a segment given as the PATH)."""
        key = self._key(path)
        if not self._in_tree(key):
            return self._scandir_outside(key)
        infos = self._listing()
        return _Listing(
            RemoteEntry(posixpath.basename(child), self._uri(child), infos[child].get("type") == "directory")
            for child in sorted(self._children_of(key))
        )

    def _scandir_outside(self, key: str) -> _Listing:
        try:
            found = self.fs.ls(key, detail=True)
        except Exception as exc:  # noqa: BLE001
            raise _os_error(self._uri(key), exc) from None
        entries = []
        for info in found:
            child = str(info["name"]).rstrip("/")
            if child != key:
                entries.append(RemoteEntry(posixpath.basename(child), self._uri(child), info.get("type") == "directory"))
        return _Listing(sorted(entries, key=lambda entry: entry.name))

    def realpath(self, path: str) -> str:
        return self._uri(self._key(path))

    def isfile(self, path: str) -> bool:
        try:
            return stat.S_ISREG(self.stat(path).st_mode)
        except OSError:
            return False

    def isdir(self, path: str) -> bool:
        try:
            return stat.S_ISDIR(self.stat(path).st_mode)
        except OSError:
            return False

    def islink(self, path: str) -> bool:
        return False

    def join(self, *parts: str) -> str:
        return posixpath.join(*parts)

    def dirname(self, path: str) -> str:
        """The folder holding ``path``; a bucket (``s3://bucket``) is its own top."""
        key = self._key(path)
        parent = posixpath.dirname(key)
        return self._uri(parent if parent else key)

    def basename(self, path: str) -> str:
        return posixpath.basename(path.rstrip("/"))

    def relpath(self, path: str, root: str) -> str:
        key, base = self._key(path), self._key(root)
        if key == base:
            return "."
        return key[len(base) + 1:] if key.startswith(base + "/") else path


def tree(root: str) -> LocalTree | RemoteTree:
    """Discovery's view of the filesystem that holds ``root``."""
    return RemoteTree(root) if is_remote(root) else LocalTree()


def read_bytes(path: str, limit: int) -> bytes:
    """At most ``limit`` bytes from the start of a small file (a sidecar), local or remote; one
    request for a remote one (answered by :func:`prefetch` when it asked for it first)."""
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


@contextmanager
def prefetching(paths: Iterable[str | None], limit: int) -> Iterator[None]:
    """Within the block, the first ``limit`` bytes of these small remote files are read a few at
    a time ahead of :func:`read_bytes` asking for them, so that the requests of a partition's
    sidecars overlap instead of following one another. Local paths are left alone; reads nobody
    took are dropped at the end."""
    items = [(p, 0, limit) for p in paths if p and is_remote(p)]
    for item in items:
        prefetch_range(*item)
    try:
        yield
    finally:
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
    fs, key, _ = _filesystem(path)
    try:
        return fs.cat_file(key, start=start, end=stop)
    except Exception as exc:  # noqa: BLE001
        if start == 0 and isinstance(exc, OSError) and exc.errno == errno.EINVAL:  # an empty object
            try:
                if int(fs.info(key).get("size") or 0) == 0:
                    return b""
            except Exception:  # noqa: BLE001 - the first failure is the one to tell
                pass
        raise _os_error(path, exc) from None


class RangeReader:
    """Byte ranges of one remote object (one request per :meth:`read`). ``size``, when the
    listing already told it, saves asking the store again."""

    def __init__(self, uri: str, size: int | None = None) -> None:
        self.uri = uri
        self.fs, self.key, _ = _filesystem(uri)
        if size is not None:
            self.size = size
            return
        try:
            self.fs.invalidate_cache(self.key)  # the object as it is now, not as listed
            info = self.fs.info(self.key)
        except Exception as exc:  # noqa: BLE001
            raise _os_error(uri, exc) from None
        if info.get("type") == "directory":
            raise IsADirectoryError(errno.EISDIR, "Is a directory")
        self.size = int(info.get("size") or 0)

    def read(self, start: int, stop: int) -> bytes:
        """``[start, stop)`` of the object; fewer bytes only if the object is shorter."""
        data = take_prefetched(self.uri, start, stop)
        if data is not None:
            return data
        try:
            return self.fs.cat_file(self.key, start=start, end=stop)
        except Exception as exc:  # noqa: BLE001
            raise _os_error(self.uri, exc) from None


def check_path(path: str) -> None:
    """Raise an OSError naming why ``path`` (a URI) cannot be scanned: unsupported scheme,
    missing library, unreachable store, missing object or prefix."""
    check_scheme(path)
    if not is_remote(path):
        return
    fs, key, _ = _filesystem(path)
    try:
        fs.info(key)
    except Exception as exc:  # noqa: BLE001
        raise _os_error(path, exc) from None
