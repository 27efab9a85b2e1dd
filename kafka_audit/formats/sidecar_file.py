"""What every sidecar reader returns: entries, problems, and a bounded, never-raising file read."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka_audit.formats import storage
from kafka_audit.formats.problem import Problem

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

    def add_problem(self, check: str, position: int | None, message: str, details: dict | None = None) -> None:
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
    unwritten: Callable[[int, tuple], bool],
    make: Callable[[tuple], Any],
) -> SidecarEntries:
    """The entries of an ``.index`` / ``.timeindex`` file (``AbstractIndex``): fixed-size
    ``entry`` records, read until ``unwritten(number, fields)`` says the preallocated tail has
    begun (``DumpLogSegments``' stop rule), and at most ``max_entries`` of them.

    Problems: a length that is not a whole number of entries (``AbstractIndex.sanityCheck``: "...
    is corrupt, found N bytes which is not a multiple of ..."; the whole entries before it are
    kept), and more entries than ``max_entries`` (each entry names a batch of its own, so the
    rest cannot agree with the log; a garbage file is not turned into millions of entries).
    """
    result = SidecarEntries([], [])
    usable = len(data) - len(data) % entry.size
    if usable != len(data):
        result.add_problem(
            "index_mismatch",
            usable,
            f"{kind} file {name} is corrupt, found {len(data)} bytes which is not a multiple of {entry.size}",
            {"size": len(data)},
        )
    for number, fields in enumerate(entry.iter_unpack(data[:usable])):
        if unwritten(number, fields):
            result.preallocated_bytes = usable - number * entry.size
            break
        if max_entries is not None and number >= max_entries:
            result.add_problem(
                "index_mismatch",
                number * entry.size,
                f"{kind} file {name} holds more entries than its segment has batches ({max_entries}); "
                f"the entries from byte {number * entry.size} on are not read",
                {"max_entries": max_entries},
            )
            break
        result.entries.append(make(fields))
    return result


def read_sidecar(path: str, parse: Callable[[bytes], SidecarEntries], check: str = "index_mismatch") -> SidecarEntries:
    """Read ``path`` (a local path or URI, at most :data:`MAX_SIDECAR_BYTES`) and parse it; an
    OSError becomes a problem."""
    try:
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
