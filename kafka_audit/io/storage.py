"""Where the bytes come from: local paths and URIs (SPEC sections 1 and 5).

One home for "URI -> filesystem, listing, ranged reads". A PATH with a scheme (``s3://``,
``s3a://``, ``gs://``, ``abfs://``, ``abfss://``, ``hdfs://``) is read through fsspec (s3fs, gcsfs,
adlfs; HDFS through fsspec's wrapper of ``pyarrow.fs.HadoopFileSystem``), each an optional extra
(``pip install 'kafka-audit[s3]'``). ``file://`` URIs and plain paths stay local: they keep
:class:`~kafka_audit.record.file_records.FileRecords`' ``pread`` reads (:mod:`.local_file`).

Credentials and endpoints come from the libraries' usual environment (``AWS_*`` and
``AWS_ENDPOINT_URL`` for s3fs, ``GOOGLE_APPLICATION_CREDENTIALS`` for gcsfs, ``AZURE_STORAGE_*`` for
adlfs, ``HADOOP_HOME``/``CLASSPATH`` for libhdfs) and from ``--storage-option KEY=VALUE``, which
a request's :class:`StorageSettings` hold: they travel with the tasks, and each process that
reads builds its :class:`~kafka_audit.io.storage_context.StorageContext` of them. Every failure
of a remote call is an ``OSError`` whose text is one line naming the cause, so the readers'
existing handling (a note, a finding, an exit-2 line) applies unchanged.
"""

from __future__ import annotations

import errno
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
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
# The option under which ``--rsm-key-file``'s key travels with the tasks (SPEC section 5). It is
# taken out of the options before any filesystem library sees them, and its value never prints
# (``rsm_objects.RsmKey``).
RSM_KEY_OPTION = "rsm_key"
# The option under which ``--max-read-rate`` (MB/s) travels with the tasks to every process that
# reads local files (io.local_file); no filesystem library sees it.
READ_RATE_OPTION = "max_read_rate"
# Marks the sidecar path of an index inside a tiered-storage ``.indexes`` object (rsm_objects).
INDEX_REF_MARK = ".indexes#"


@dataclass(frozen=True)
class StorageSettings:
    """One request's storage settings: the ``--storage-option`` pairs its filesystem libraries
    are given, the ``--rsm-key-file`` key (an ``RsmKey``, never given to a library) and the
    ``--max-read-rate`` cap (MB/s, None: none). Plain values that pickle: they travel with the
    tasks. Neither the options nor the key show in a repr (they may hold credentials)."""

    options: tuple[tuple[str, Any], ...] = field(default=(), repr=False)
    rsm_key: Any = field(default=None, repr=False)
    max_read_rate: float | None = None

    @classmethod
    def of(cls, options: Mapping[str, Any] | Iterable[tuple[str, Any]] | None) -> StorageSettings:
        """The settings of ``options`` as the front door builds them: the ``--storage-option``
        pairs, with the key under :data:`RSM_KEY_OPTION` and the cap under :data:`READ_RATE_OPTION`."""
        given = dict(options or {})
        key = given.pop(RSM_KEY_OPTION, None)
        rate = given.pop(READ_RATE_OPTION, None)
        return cls(tuple(sorted(given.items())), key, rate)

    def redact_secrets(self, text: str) -> str:
        """``text`` (an error line) with URI credentials and the values of these options (but
        those of ``_PUBLIC_OPTIONS``) replaced by ``***`` (SPEC section 1)."""
        text = redact_uri_credentials(text)
        for key, value in self.options:
            if key not in _PUBLIC_OPTIONS and isinstance(value, str) and len(value) >= _SHORTEST_SECRET:
                text = text.replace(value, "***")
        return text


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


# A URI's user:password (``s3://key:secret@bucket``). A userinfo without a colon is a name, not a
# credential: abfs's ``container@account`` stays, as the error must say which container.
_URI_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s:]*:[^/?#@\s]*@")
# Option values shorter than this are not looked for in messages (``true``, ``us``).
_SHORTEST_SECRET = 4
# Options that say where and how to connect, not who: their values stay in error lines, which
# name the endpoint that did not answer (fsspec's s3fs/gcsfs/adlfs/HDFS option names).
_PUBLIC_OPTIONS = frozenset({"endpoint_url", "endpoint", "region", "region_name", "anon", "use_ssl", "host",
                             "port", "project", "account_name", "requester_pays", "config_kwargs"})


def redact_uri_credentials(text: str) -> str:
    """``text`` with the credentials of the URIs in it (``s3://key:secret@bucket``) replaced by
    ``***`` (SPEC section 1)."""
    return _URI_USERINFO.sub(r"\1***@", text)


def one_line(what: str | None, exc: BaseException, settings: StorageSettings) -> str:
    """The library's exception as one line, secrets redacted: its type, its first line, and what
    to do for HDFS."""
    text = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    hint = ""
    if "libjvm" in text or "libhdfs" in text:
        hint = " (HDFS is read through libhdfs: set JAVA_HOME, HADOOP_HOME and CLASSPATH=$(hadoop classpath --glob))"
    cause = f"{type(exc).__name__}: {settings.redact_secrets(text)[:300]}{hint}"
    return f"{what}: {cause}" if what else cause


def os_error(uri: str, exc: BaseException, settings: StorageSettings) -> OSError:
    """One OSError for any failure of a remote call on ``uri`` (a missing object keeps ENOENT);
    its text names the cause, the caller names the path."""
    if isinstance(exc, FileNotFoundError):
        return FileNotFoundError(errno.ENOENT, "No such file or directory")
    if isinstance(exc, PermissionError):
        return PermissionError(errno.EACCES, "Permission denied")
    return OSError(errno.EIO, one_line(None, exc, settings))


def open_filesystem(uri: str, settings: StorageSettings):
    """``(fsspec filesystem, path inside it, prefix that turns such a path back into a URI)`` of
    ``uri``, the library given the ``--storage-option`` settings. fsspec hands out one cached
    instance per set of arguments."""
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
        kwargs = {**cls._get_kwargs_from_urls(uri), **dict(settings.options)}
        fs = cls(**kwargs)
    except Exception as exc:  # noqa: BLE001 - the library's own failure, told in one line
        raise OSError(errno.EIO, one_line(f"cannot open {found}:// filesystem", exc, settings)) from None
    key = cls._strip_protocol(uri).rstrip("/") or "/"
    bare = uri.rstrip("/")
    prefix = bare[: len(bare) - len(key)] if bare.endswith(key) else f"{found}://"
    return fs, key, prefix
