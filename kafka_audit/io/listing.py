"""Discovery's view of a filesystem, with the names of ``os``/``os.path`` it uses: the local one
(:class:`LocalTree`) or one remote root listed once (:class:`RemoteTree`); :func:`tree` picks.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from dataclasses import dataclass

from kafka_audit.io import s3_listing
from kafka_audit.io.storage import is_remote
from kafka_audit.io.storage_context import StorageContext

# Keys per page of a store's listing (S3's ListObjectsV2, GCS's objects.list): requests counted.
LIST_PAGE_KEYS = 1000


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

    def __enter__(self) -> _Listing:
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
    library; on S3 as several page chains at once, :mod:`.s3_listing`) on first use and answered
    from memory after that, so that looking for a
    segment's sidecars costs no request. Names starting with ``_`` or ``.`` are kept
    (``__consumer_offsets``, ``__transaction_state``): Spark's file sources drop them, so they
    are never used for listing."""

    def __init__(self, root: str, storage: StorageContext) -> None:
        self.storage = storage
        self.fs, self.root_key, self.prefix = storage.filesystem(root)
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
                if s3_listing.can_list(self.fs):
                    found = s3_listing.find(self.fs, self.root_key)
                else:
                    found = self.fs.find(self.root_key, withdirs=True, detail=True)
            except FileNotFoundError:
                found = {}
            except Exception as exc:  # noqa: BLE001
                self.storage.count_on(self.fs)
                raise self.storage.os_error(self.uri_root, exc) from None
            self.storage.count_on(self.fs, requests=max(1, -(-len(found) // LIST_PAGE_KEYS)))
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
            self.storage.count_on(self.fs)
            return self.fs.info(key)
        except Exception as exc:  # noqa: BLE001
            raise self.storage.os_error(self._uri(key), exc) from None

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
            self.storage.count_on(self.fs)
            found = self.fs.ls(key, detail=True)
        except Exception as exc:  # noqa: BLE001
            raise self.storage.os_error(self._uri(key), exc) from None
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


# Either view: what discovery holds while it walks a PATH.
Tree = LocalTree | RemoteTree


def tree(root: str, storage: StorageContext) -> Tree:
    """Discovery's view of the filesystem that holds ``root`` (a store's read under ``storage``)."""
    return RemoteTree(root, storage) if is_remote(root) else LocalTree()

