"""``.txnindex`` files: ``org.apache.kafka.storage.internals.log.TransactionIndex`` / ``AbortedTxn``.

An entry is ``version i16 (0), producerId i64, firstOffset i64, lastOffset i64,
lastStableOffset i64`` (34 bytes): one aborted transaction whose ABORT marker is in the segment.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import astuple, dataclass

from kafka_audit.check_ids import CheckId
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.sidecar_file import SidecarEntries, read_sidecar

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
CURRENT_VERSION = 0
_CHECK = CheckId.TXN_INDEX_MISMATCH


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One entry of a ``.txnindex`` (``AbortedTxn``): an aborted transaction's offsets and the LSO when it ended."""

    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def encode_transaction_index(entries: Iterable[AbortedTxn]) -> bytes:
    """TransactionIndex.append: one 34-byte entry per aborted transaction, in order."""
    # The entry's fields in file order, as parse_transaction_index reads them back.
    return b"".join(_ENTRY.pack(*astuple(e)) for e in entries)


def parse_transaction_index(data: bytes, name: str = ".txnindex") -> SidecarEntries:
    """Entries in file order. TransactionIndex's iterator fails on a partial entry ("Expected to
    read 34 bytes...") and on an unknown version; sanityCheck on lastOffset < firstOffset. The
    entries before such a problem are kept, and reading stops at it."""
    result = SidecarEntries([], [])
    for position in range(0, len(data), ENTRY_SIZE):
        if position + ENTRY_SIZE > len(data):
            result.add_problem(
                _CHECK,
                position,
                f"Transaction index {name} is corrupt: expected to read {ENTRY_SIZE} bytes at position "
                f"{position}, found {len(data) - position}",
            )
            break
        entry = AbortedTxn(*_ENTRY.unpack_from(data, position))
        if entry.version != CURRENT_VERSION:
            result.add_problem(
                _CHECK,
                position,
                f"Unexpected aborted transaction version {entry.version} in transaction index {name}, "
                f"current version is {CURRENT_VERSION}",
                {"version": entry.version},
            )
            break
        if entry.last_offset < entry.first_offset:
            result.add_problem(
                _CHECK,
                position,
                f"Last offset {entry.last_offset} of aborted transaction entry at position {position} in "
                f"{name} is below its first offset {entry.first_offset}",
                {"first_offset": entry.first_offset, "last_offset": entry.last_offset},
            )
        result.entries.append(entry)
    return result


def read_transaction_index(path: str, storage: StorageContext | None = None) -> SidecarEntries:
    return read_sidecar(path, lambda data: parse_transaction_index(data, path), check=_CHECK, storage=storage)
