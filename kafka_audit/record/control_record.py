"""Control records: ``ControlRecordType`` keys and ``EndTransactionMarker`` values.

A control batch holds exactly one control record. Its key is ``version i16, type i16``
(version 0; types 0 ABORT, 1 COMMIT, 2-6 KRaft). An ABORT/COMMIT marker's value is
``version i16, coordinatorEpoch i32`` (EndTransactionMarker; version 0, later versions may
append fields, which Kafka ignores).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import lru_cache

from kafka_audit.record.record_batch import ControlRecordType, Record

_KEY = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")
CURRENT_CONTROL_KEY_VERSION = 0


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """The decoded control record, or ``error`` saying why it is not a well-formed one."""

    version: int | None = None
    type: int | None = None
    coordinator_epoch: int | None = None
    error: str | None = None

    @property
    def is_transaction_marker(self) -> bool:
        return self.error is None and self.type in (ControlRecordType.ABORT, ControlRecordType.COMMIT)


def encode_control_key(type_id: int, version: int = CURRENT_CONTROL_KEY_VERSION) -> bytes:
    """ControlRecordType.recordKey: ``version i16, type i16``."""
    return _KEY.pack(version, type_id)


def encode_end_transaction_marker(coordinator_epoch: int, version: int = 0) -> bytes:
    """EndTransactionMarker's value: ``version i16, coordinatorEpoch i32``."""
    return _MARKER.pack(version, coordinator_epoch)


def parse_control_record(record: Record) -> ControlRecord:
    """ControlRecordType.parse and EndTransactionMarker.deserialize, without raising."""
    return _parse(record.key, record.key_size, record.value, record.value_size)


@lru_cache(maxsize=1024)
def parse_control_key_value(key: bytes | None, value: bytes | None) -> ControlRecord:
    """:func:`parse_control_record` of a record with this key and value (None: null). Cached: the
    markers of a partition repeat the same few keys and values (a ControlRecord is frozen)."""
    return _parse(key, -1 if key is None else len(key), value, -1 if value is None else len(value))


def _parse(key: bytes | None, key_size: int, value: bytes | None, value_size: int) -> ControlRecord:
    if key is None or len(key) < _KEY.size:
        return ControlRecord(error=f"Invalid control record key of {key_size} bytes")
    version, type_id = _KEY.unpack_from(key)
    if version != CURRENT_CONTROL_KEY_VERSION:
        return ControlRecord(version, type_id, error=f"Unknown control record key version {version}")
    if type_id not in ControlRecordType._value2member_map_:
        return ControlRecord(version, type_id, error=f"Unknown control record type {type_id}")
    if type_id not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        return ControlRecord(version, type_id)
    if value is None or len(value) < _MARKER.size:
        return ControlRecord(version, type_id, error=f"Invalid transaction marker value of {value_size} bytes")
    marker_version, coordinator_epoch = _MARKER.unpack_from(value)
    if marker_version < 0:
        return ControlRecord(version, type_id, error=f"Invalid transaction marker version {marker_version}")
    return ControlRecord(version, type_id, coordinator_epoch)
