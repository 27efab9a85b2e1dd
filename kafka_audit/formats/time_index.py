"""``.timeindex`` files: ``org.apache.kafka.storage.internals.log.TimeIndex``.

An entry is ``timestamp i64, relativeOffset i32`` (12 bytes). Like the offset index it is
preallocated; reading stops at the first all-zero entry after the first
(``DumpLogSegments.dumpTimeIndex``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafka_audit.formats.sidecar_file import SidecarEntries, read_sidecar, whole_entries

ENTRY_SIZE = 12
_ENTRY = struct.Struct(">qi")


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    """One time index entry, the offset made absolute (``TimestampOffset``)."""

    timestamp: int
    offset: int


def parse_time_index(data: bytes, base_offset: int, name: str = ".timeindex") -> SidecarEntries:
    result = SidecarEntries([], [])
    usable = whole_entries(data, ENTRY_SIZE, "Time index", name, result)
    for number, (timestamp, relative) in enumerate(_ENTRY.iter_unpack(data[:usable])):
        if number > 0 and timestamp == 0 and relative == 0:
            result.preallocated_bytes = usable - number * ENTRY_SIZE
            break
        result.entries.append(TimestampOffset(timestamp, base_offset + relative))
    return result


def read_time_index(path: str, base_offset: int) -> SidecarEntries:
    return read_sidecar(path, lambda data: parse_time_index(data, base_offset, path))
