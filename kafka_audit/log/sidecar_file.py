"""What every sidecar reader returns: entries, problems, and a bounded, never-raising file read."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka_audit.check_ids import CheckId
from kafka_audit.io import rsm_objects
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.record.problem import Problem

# Index files are preallocated to segment.index.bytes (10 MiB by default); anything far larger
# is not a Kafka sidecar and is not read whole.
MAX_SIDECAR_BYTES = 256 * 1024 * 1024


@dataclass(slots=True)
class SidecarEntries:
    """The entries of one sidecar file, in file order, and the problems met reading it.

    ``preallocated_bytes`` counts the zero-filled tail of an index copied from an active segment.
    """

    entries: list[Any]
    problems: list[Problem]
    preallocated_bytes: int = 0
    path: str | None = None

    def add_problem(self, check: str, position: int | None, message: str, details: dict[str, Any] | None = None) -> None:
        """A problem at a byte ``position`` of the file; None (the file could not be read) is 0."""
        self.problems.append(Problem(check, position if position is not None else 0, message, details=details or {}))

    def add_line_problem(self, check: str, line: int | None, message: str) -> None:
        """A problem of a text file: no byte position, the 1-based ``line`` (if any) in the details."""
        self.problems.append(Problem(check, None, message, details={} if line is None else {"line": line}))


def parse_index(
    data: bytes,
    entry: struct.Struct,
    kind: str,
    name: str,
    max_entries: int | None,
    relative_offset_field: int,
    make: Callable[[list[tuple[int, ...]]], list[Any]],
) -> SidecarEntries:
    """The entries of an ``.index`` / ``.timeindex`` file (``AbstractIndex``): fixed-size
    ``entry`` records, read until the preallocated tail begins, and at most ``max_entries`` of
    them; ``make`` turns the kept records (tuples of ``entry``'s fields) into entries.

    The tail begins (``DumpLogSegments``' stop rule: ``entry.offset() == index.baseOffset() &&
    i > 0``) at the first record after the first whose field ``relative_offset_field`` (the
    offset relative to the segment's base offset) is 0; an all-zero first record is unwritten
    space too (no broker indexes position 0 or timestamp 0 at the base offset).

    Problems: a length that is not a whole number of entries (``AbstractIndex.sanityCheck``: "...
    is corrupt, found N bytes which is not a multiple of ..."; the whole entries before it are
    kept), and more entries than ``max_entries`` (each entry names a batch of its own, so the
    rest cannot agree with the log; a garbage file is not turned into millions of entries).
    """
    result = SidecarEntries([], [])
    size = entry.size
    usable = len(data) - len(data) % size
    if usable != len(data):
        result.add_problem(
            CheckId.INDEX_MISMATCH,
            usable,
            f"{kind} file {name} is corrupt, found {len(data)} bytes which is not a multiple of {size}",
            {"size": len(data)},
        )
    records = list(entry.iter_unpack(data[:usable]))
    if not records:
        return result
    if not any(records[0]):
        written = 0
    else:
        relative = [fields[relative_offset_field] for fields in records]
        try:
            written = relative.index(0, 1)
        except ValueError:
            written = len(records)
    if max_entries is not None and written > max(max_entries, 0):
        written = max(max_entries, 0)
        result.add_problem(
            CheckId.INDEX_MISMATCH,
            written * size,
            f"{kind} file {name} holds more entries than its segment has batches ({max_entries}); "
            f"the entries from byte {written * size} on are not read",
            {"max_entries": max_entries},
        )
    elif written < len(records):
        result.preallocated_bytes = usable - written * size
    result.entries = make(records[:written] if written < len(records) else records)
    return result


def read_sidecar(
    path: str,
    parse: Callable[[bytes], SidecarEntries],
    check: str = CheckId.INDEX_MISMATCH,
    storage: StorageContext | None = None,
) -> SidecarEntries:
    """Read ``path`` (a local path or URI, at most :data:`MAX_SIDECAR_BYTES`, under the request's
    ``storage``) and parse it; an OSError becomes a problem."""
    storage = storage if storage is not None else StorageContext()
    try:
        if rsm_objects.INDEX_REF.match(path):  # an index inside a tiered-storage .indexes object
            data = rsm_objects.read_index(path, storage)[: MAX_SIDECAR_BYTES + 1]
        else:
            data = storage.read_bytes(path, MAX_SIDECAR_BYTES + 1)
    except OSError as exc:
        result = SidecarEntries([], [], path=path)
        result.add_problem(check, None, f"Cannot read {path}: {exc.strerror or exc}", {"unreadable": True})
        return result
    if len(data) > MAX_SIDECAR_BYTES:
        result = SidecarEntries([], [], path=path)
        result.add_problem(check, None, f"{path} is larger than {MAX_SIDECAR_BYTES} bytes: not a Kafka sidecar file")
        return result
    result = parse(data)
    result.path = path
    return result
