"""What every sidecar reader returns: entries, problems, and a bounded, never-raising file read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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
    extra: dict[str, Any] = field(default_factory=dict)

    def add_problem(self, check: str, position: int | None, message: str, details: dict | None = None) -> None:
        self.problems.append(Problem(check, position if position is not None else 0, message, details=details or {}))


def whole_entries(data: bytes, entry_size: int, kind: str, name: str, result: SidecarEntries) -> int:
    """The length of ``data`` in whole entries; a partial last entry is a problem
    (OffsetIndex/TimeIndex.sanityCheck: "... is corrupt, ... not a multiple of ...")."""
    usable = len(data) - len(data) % entry_size
    if usable != len(data):
        result.add_problem(
            "index_mismatch",
            usable,
            f"{kind} file {name} is corrupt, found {len(data)} bytes which is not a multiple of {entry_size}",
            {"size": len(data)},
        )
    return usable


def too_many_entries(result: SidecarEntries, position: int, limit: int, kind: str, name: str) -> None:
    """The problem of an index holding more entries than its segment has batches: each entry
    names a batch of its own, so the rest cannot agree with the log and are not read (a garbage
    file of hundreds of MiB would otherwise become millions of entries in memory)."""
    result.add_problem(
        "index_mismatch",
        position,
        f"{kind} file {name} holds more entries than its segment has batches ({limit}); "
        f"the entries from byte {position} on are not read",
        {"max_entries": limit},
    )


def read_sidecar(path: str, parse: Callable[[bytes], SidecarEntries], check: str = "index_mismatch") -> SidecarEntries:
    """Read ``path`` (at most :data:`MAX_SIDECAR_BYTES`) and parse it; an OSError becomes a problem."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_SIDECAR_BYTES + 1)
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
