"""``.index`` files: ``org.apache.kafka.storage.internals.log.OffsetIndex``.

An entry is ``relativeOffset i32, position i32`` (8 bytes), the offset relative to the segment's
base offset. A broker preallocates the file (``segment.index.bytes``) and trims it on a clean
roll or shutdown, so a copy of an active segment's index ends in zero entries; like
``DumpLogSegments.dumpIndex``, reading stops at the first entry after the first whose relative
offset is 0 (``entry.offset() == index.baseOffset() && i > 0``), whatever its position, and an
index whose first entry is all zero has no entry at all (a broker never indexes position 0).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.sidecar_file import SidecarEntries, parse_index, read_sidecar

_ENTRY = struct.Struct(">ii")


@dataclass(slots=True)
class OffsetPosition:
    """One index entry, the offset made absolute (``OffsetPosition``). Not frozen: a
    frozen dataclass is three times slower to build, and an index holds thousands."""

    offset: int
    position: int


def encode_offset_index(entries: Iterable[tuple[int, int]], base_offset: int) -> bytes:
    """OffsetIndex.append: (absolute offset, position) entries, the offset made relative."""
    return b"".join(_ENTRY.pack(offset - base_offset, position) for offset, position in entries)


def parse_offset_index(
    data: bytes, base_offset: int, name: str = ".index", max_entries: int | None = None
) -> SidecarEntries:
    """The entries of an offset index held in ``data``, and its problems; at most ``max_entries``
    (the number of batches in the segment, when known) are read.

    The preallocated tail starts, as ``DumpLogSegments.dumpIndex`` has it ("since it is a sparse
    file, in the event of a crash there may be many zero entries, stop if we see one"), at an
    entry after the first at the base offset; and a first entry (base offset, position 0) is
    unwritten space too, since LogSegment.append only indexes an append after more than
    index.interval.bytes, so never position 0.
    """
    return parse_index(
        data,
        _ENTRY,
        "Index",
        name,
        max_entries,
        0,
        lambda records: [OffsetPosition(base_offset + relative, position) for relative, position in records],
    )


def read_offset_index(
    path: str, base_offset: int, max_entries: int | None = None, storage: StorageContext | None = None
) -> SidecarEntries:
    """Read and parse an ``.index`` file; an unreadable file is a problem, not an exception."""
    return read_sidecar(path, lambda data: parse_offset_index(data, base_offset, path, max_entries), storage=storage)
