"""``.index`` and ``.timeindex`` files: ``org.apache.kafka.storage.internals.log.AbstractIndex``
and its two kinds, ``OffsetIndex`` and ``TimeIndex``, each one :class:`IndexFile` layout.

An ``.index`` entry is ``relativeOffset i32, position i32`` (8 bytes); a ``.timeindex`` entry
``timestamp i64, relativeOffset i32`` (12 bytes); the offset is relative to the segment's base
offset. A broker preallocates both files (``segment.index.bytes``) and trims them on a clean roll
or shutdown, so a copy of an active segment's index ends in zero entries. Like
``DumpLogSegments.dumpIndex`` / ``dumpTimeIndex``, reading stops at the first entry after the
first whose relative offset is 0 (``entry.offset() == index.baseOffset() && i > 0``), whatever its
position or timestamp, and an index whose first entry is all zero has no entry at all: a broker
never indexes position 0 (LogSegment.append only indexes an append after more than
index.interval.bytes) nor timestamp 0.

The entries are slots dataclasses, not frozen: a frozen dataclass is three times slower to build,
and an index holds thousands.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.sidecar_file import SidecarEntries, parse_index, read_sidecar

Entry = TypeVar("Entry")


@dataclass(slots=True)
class OffsetPosition:
    """One ``.index`` entry, the offset made absolute (``OffsetPosition``)."""

    offset: int
    position: int


@dataclass(slots=True)
class TimestampOffset:
    """One ``.timeindex`` entry, the offset made absolute (``TimestampOffset``)."""

    timestamp: int
    offset: int


@dataclass(frozen=True, slots=True)
class IndexFile(Generic[Entry]):
    """One kind of ``AbstractIndex`` file: fixed-size ``entry`` records of two fields (Kafka's
    ``IndexEntry``), of which field ``relative_offset_field`` is the offset relative to the
    segment's base offset; ``make`` builds an entry from the two fields in file order, that offset
    made absolute. ``kind`` names the file in its problems, ``default_name`` when no path does."""

    kind: str
    default_name: str
    entry: struct.Struct
    relative_offset_field: int
    make: Callable[[int, int], Entry]

    def encode(self, entries: Iterable[tuple[int, int]], base_offset: int) -> bytes:
        """``OffsetIndex.append`` / ``TimeIndex.maybeAppend``: each entry's two fields in file
        order, its offset absolute (made relative here)."""
        pack = self.entry.pack
        if self.relative_offset_field == 0:
            return b"".join(pack(offset - base_offset, value) for offset, value in entries)
        return b"".join(pack(value, offset - base_offset) for value, offset in entries)

    def parse(
        self, data: bytes, base_offset: int, name: str | None = None, max_entries: int | None = None
    ) -> SidecarEntries:
        """The entries of such a file held in ``data``, and its problems; at most ``max_entries``
        (the number of batches in the segment, when known) are read (:func:`parse_index`)."""
        make = self.make
        if self.relative_offset_field == 0:

            def absolute(records: list[tuple[int, ...]]) -> list[Entry]:
                return [make(base_offset + relative, value) for relative, value in records]

        else:

            def absolute(records: list[tuple[int, ...]]) -> list[Entry]:
                return [make(value, base_offset + relative) for value, relative in records]

        name = self.default_name if name is None else name
        return parse_index(data, self.entry, self.kind, name, max_entries, self.relative_offset_field, absolute)

    def read(
        self, path: str, base_offset: int, max_entries: int | None = None, storage: StorageContext | None = None
    ) -> SidecarEntries:
        """Read and parse such a file; an unreadable file is a problem, not an exception."""
        return read_sidecar(path, lambda data: self.parse(data, base_offset, path, max_entries), storage=storage)


OFFSET_INDEX = IndexFile("Index", ".index", struct.Struct(">ii"), 0, OffsetPosition)
TIME_INDEX = IndexFile("Time index", ".timeindex", struct.Struct(">qi"), 1, TimestampOffset)
