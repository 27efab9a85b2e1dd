"""``.timeindex`` files: ``org.apache.kafka.storage.internals.log.TimeIndex``.

An entry is ``timestamp i64, relativeOffset i32`` (12 bytes). Like the offset index it is
preallocated; reading stops at the first entry after the first whose relative offset is 0,
whatever its timestamp (``DumpLogSegments.dumpTimeIndex``: ``entry.offset() ==
timeIndex.baseOffset() && i > 0``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafka_audit.formats.sidecar_file import SidecarEntries, read_sidecar, too_many_entries, whole_entries

ENTRY_SIZE = 12
_ENTRY = struct.Struct(">qi")


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    """One time index entry, the offset made absolute (``TimestampOffset``)."""

    timestamp: int
    offset: int


def parse_time_index(
    data: bytes, base_offset: int, name: str = ".timeindex", max_entries: int | None = None
) -> SidecarEntries:
    """The entries of a time index held in ``data``, and its problems; at most ``max_entries``
    are read."""
    result = SidecarEntries([], [])
    usable = whole_entries(data, ENTRY_SIZE, "Time index", name, result)
    for number, (timestamp, relative) in enumerate(_ENTRY.iter_unpack(data[:usable])):
        # DumpLogSegments.dumpTimeIndex: stop at an entry after the first at the base offset.
        # An all-zero first entry is unwritten space too (no broker indexes timestamp 0).
        if relative == 0 and (number > 0 or timestamp == 0):
            result.preallocated_bytes = usable - number * ENTRY_SIZE
            break
        if max_entries is not None and number >= max_entries:
            too_many_entries(result, number * ENTRY_SIZE, max_entries, "Time index", name)
            break
        result.entries.append(TimestampOffset(timestamp, base_offset + relative))
    return result


def read_time_index(path: str, base_offset: int, max_entries: int | None = None) -> SidecarEntries:
    return read_sidecar(path, lambda data: parse_time_index(data, base_offset, path, max_entries))
