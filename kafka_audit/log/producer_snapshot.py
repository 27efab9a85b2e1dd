"""``.snapshot`` files: ``ProducerStateManager.writeSnapshot`` / ``readSnapshot``.

Layout (snapshot version 1, the only one brokers have written since 0.11): ``version i16,
crc u32`` (CRC-32C of everything after the crc field), then an array (``count i32``) of entries
``producerId i64, epoch i16, lastSequence i32, lastOffset i64, offsetDelta i32, timestamp i64,
coordinatorEpoch i32, currentTxnFirstOffset i64`` (-1: no open transaction). The file name is
the offset after the state it captures.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import astuple, dataclass

import crc32c

from kafka_audit.check_ids import CheckId
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.sidecar_file import SidecarEntries, read_sidecar
from kafka_audit.record.problem import Problem

SNAPSHOT_VERSION = 1
_HEADER = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")
_CHECK = CheckId.SNAPSHOT_MISMATCH


@dataclass(frozen=True, slots=True)
class ProducerSnapshotEntry:
    """One producer of a snapshot (``ProducerStateManager``'s ``ProducerSnapshotEntry`` schema, version 1)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


@dataclass(slots=True)
class ProducerSnapshot:
    """A parsed snapshot. ``valid`` is False when a broker would refuse to load it
    (CorruptSnapshotException): then ``entries`` may be partial and must not seed any state."""

    path: str
    offset: int | None
    entries: list[ProducerSnapshotEntry]
    problems: list[Problem]
    valid: bool


def encode_producer_snapshot(entries: Iterable[ProducerSnapshotEntry]) -> bytes:
    """ProducerStateManager.writeSnapshot: version 1, the CRC-32C of the rest, then the entries."""
    entries = list(entries)
    # The entry's fields in file order, as parse_producer_snapshot reads them back.
    body = _COUNT.pack(len(entries)) + b"".join(_ENTRY.pack(*astuple(e)) for e in entries)
    return _HEADER.pack(SNAPSHOT_VERSION, crc32c.crc32c(body)) + body


def parse_producer_snapshot(data: bytes, name: str = ".snapshot") -> SidecarEntries:
    """ProducerStateManager.readSnapshot: version, CRC, then the entries."""
    result = SidecarEntries([], [])
    if len(data) < _HEADER.size + _COUNT.size:
        result.add_problem(_CHECK, 0, f"Snapshot {name} is truncated: {len(data)} bytes")
        return result
    version, stored_crc = _HEADER.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        result.add_problem(_CHECK, 0, f"Snapshot {name} contained an unknown file version {version}", {"version": version})
        return result
    computed = crc32c.crc32c(data[_HEADER.size :])
    if computed != stored_crc:
        result.add_problem(
            _CHECK,
            2,
            f"Snapshot {name} is corrupt (CRC is no longer valid). Stored crc: {stored_crc}. Computed crc: {computed}",
            {"stored_crc": stored_crc, "computed_crc": computed},
        )
    (count,) = _COUNT.unpack_from(data, _HEADER.size)
    start = _HEADER.size + _COUNT.size
    if count < 0 or start + count * _ENTRY.size != len(data):
        result.add_problem(
            _CHECK,
            _HEADER.size,
            f"Snapshot {name} declares {count} producer entries but holds {len(data) - start} bytes of entries",
            {"count": count},
        )
        count = max(0, min(count, (len(data) - start) // _ENTRY.size))
    result.entries = [ProducerSnapshotEntry(*fields) for fields in _ENTRY.iter_unpack(data[start : start + count * _ENTRY.size])]
    return result


def snapshot_offset_of(path: str) -> int | None:
    """The offset in a snapshot's file name (``00000000000000000042.snapshot`` -> 42)."""
    stem = os.path.basename(path).split(".", 1)[0]
    # isdecimal, not isdigit: "²" is a digit that int() refuses.
    return int(stem) if stem.isdecimal() else None


def read_producer_snapshot(path: str, storage: StorageContext | None = None) -> ProducerSnapshot:
    parsed = read_sidecar(path, lambda data: parse_producer_snapshot(data, path), check=_CHECK, storage=storage)
    return ProducerSnapshot(
        path=path,
        offset=snapshot_offset_of(path),
        entries=parsed.entries,
        problems=parsed.problems,
        valid=not parsed.problems,
    )
