"""``.timeindex`` files: ``org.apache.kafka.storage.internals.log.TimeIndex``.

An entry is ``timestamp i64, relativeOffset i32`` (12 bytes). Like the offset index it is
preallocated; reading stops at the first entry after the first whose relative offset is 0,
whatever its timestamp (``DumpLogSegments.dumpTimeIndex``: ``entry.offset() ==
timeIndex.baseOffset() && i > 0``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.sidecar_file import SidecarEntries, parse_index, read_sidecar

_ENTRY = struct.Struct(">qi")


@dataclass(slots=True)
class TimestampOffset:
    """One time index entry, the offset made absolute (``TimestampOffset``). Not frozen: a
    frozen dataclass is three times slower to build, and an index holds thousands."""

    timestamp: int
    offset: int


def encode_time_index(entries: Iterable[tuple[int, int]], base_offset: int) -> bytes:
    """TimeIndex.maybeAppend: (timestamp, absolute offset) entries, the offset made relative."""
    return b"".join(_ENTRY.pack(timestamp, offset - base_offset) for timestamp, offset in entries)


def parse_time_index(
    data: bytes, base_offset: int, name: str = ".timeindex", max_entries: int | None = None
) -> SidecarEntries:
    """The entries of a time index held in ``data``, and its problems; at most ``max_entries``
    are read. The preallocated tail starts at an entry after the first at the base offset
    (``DumpLogSegments.dumpTimeIndex``); an all-zero first entry is unwritten space too (no broker
    indexes timestamp 0)."""
    return parse_index(
        data,
        _ENTRY,
        "Time index",
        name,
        max_entries,
        1,
        lambda records: [TimestampOffset(timestamp, base_offset + relative) for timestamp, relative in records],
    )


def read_time_index(
    path: str, base_offset: int, max_entries: int | None = None, storage: StorageContext | None = None
) -> SidecarEntries:
    return read_sidecar(path, lambda data: parse_time_index(data, base_offset, path, max_entries), storage=storage)
