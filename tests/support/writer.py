"""Deterministic writer of Kafka logs, able to produce any fault: the fixture and benchmark generator.

Like ``org.apache.kafka.common.record.MemoryRecordsBuilder`` (batches) and ``LogSegment`` /
``UnifiedLog`` / ``ProducerStateManager`` (segments, indexes, snapshots, checkpoints), but every
field can be set to what a broker would never write, and named :class:`Faults` damage the bytes
after they are built.

Three layers:

- :func:`encode_batch` / :func:`build_batch`: one :class:`BatchSpec` to bytes, through the
  encoders beside the decoders in ``kafka_audit.formats`` (``record_batch.encode_v2_batch``,
  ``default_record.encode_record``, ``legacy_record.encode_message`` / ``encode_wrapper``), the
  faults applied on top. Magic v2 gives one DefaultRecordBatch. Magic v0/v1 gives the
  concatenated lone messages when uncompressed, or one wrapper message whose value is the
  compressed inner message set (v1 inner offsets relative 0..n-1 and the wrapper at the last
  absolute offset; v0 inner offsets absolute).
- :class:`PartitionWriter`: appends batches to a partition folder, assigning offsets, rolling
  segments at ``segment_bytes``, and keeping ``.index``/``.timeindex`` entries exactly as
  ``LogSegment.append`` does, ``.txnindex`` entries for aborted transactions, producer state as
  ``ProducerAppendInfo`` keeps it, and ``.snapshot`` files at segment rolls and at close.
- :class:`LogDirWriter`: a broker log dir of partitions plus its checkpoint files and
  ``meta.properties``. :class:`Producer` makes idempotent and transactional producers easy.

Nothing here is random and no clock is read: timestamps start at :data:`TS_BASE`, so every run
writes the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kafka_audit.log import checkpoints, transaction_index
from kafka_audit.log.checkpoints import EpochEntry, Property, TopicPartitionOffset
from kafka_audit.log.index_files import OFFSET_INDEX, TIME_INDEX
from kafka_audit.log.producer_snapshot import ProducerSnapshotEntry, encode_producer_snapshot
from kafka_audit.record.compression import compress
from kafka_audit.record.control_record import encode_control_key, encode_end_transaction_marker
from kafka_audit.record.default_record import encode_record
from kafka_audit.record.default_record import encode_varint as varint  # noqa: F401 (tests encode with it)
from kafka_audit.record.legacy_record import encode_message, encode_wrapper
from kafka_audit.record.record_batch import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    LEGACY_CRC_OFFSET,
    LEGACY_MAGIC_OFFSET,
    MAGIC_VALUE_V1,
    MAGIC_VALUE_V2,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    SIZE_OFFSET,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    V2_CRC_OFFSET,
    ControlRecordType,
    encode_v2_batch,
    increment_sequence,
)

#: First timestamp of every fixture (2023-11-14T22:13:20Z): no wall clock is ever read.
TS_BASE = 1_700_000_000_000

CREATE_TIME = 0
LOG_APPEND_TIME = 1

# Kafka defaults (LogConfig / ServerLogConfigs).
DEFAULT_SEGMENT_BYTES = 1 << 30
DEFAULT_INDEX_INTERVAL_BYTES = 4096

# What a bad_crc fault XORs into the right CRC.
_CRC_DAMAGE = 0xDEADBEEF


# ---------------------------------------------------------------------------------------------
# Specs
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecordSpec:
    """One record (v2) or one message (v0/v1).

    ``timestamp`` None: the batch's ``base_timestamp`` plus the record's index (v0 has none).
    ``offset_delta`` None: the natural stored offset. Otherwise the stored value: the v2 offset
    delta, the v1 inner relative offset, for v0 wrappers the inner absolute offset minus the
    batch's base offset, for lone v0/v1 messages the message offset minus the base offset.
    ``attributes``: the v2 record attributes byte, or the v0/v1 message attributes (OR-ed with
    what the batch implies; set ``0x08`` for a timestamp-type bit where it does not belong).
    ``magic`` (v0/v1 only): the inner message's magic, for wrapper/inner magic mismatches.
    ``bad_crc`` (v0/v1 only): store a wrong CRC in this message.
    """

    key: bytes | None = None
    value: bytes | None = None
    headers: tuple = ()
    timestamp: int | None = None
    offset_delta: int | None = None
    attributes: int = 0
    magic: int | None = None
    bad_crc: bool = False


@dataclass(frozen=True, slots=True)
class ControlSpec:
    """A control record: key ``version i16, type i16``; for ABORT/COMMIT the EndTransactionMarker
    value ``marker_version i16, coordinator_epoch i32``. ``value`` replaces the value (KRaft types
    carry arbitrary bytes; a marker with a short value is malformed)."""

    type: int
    coordinator_epoch: int = 0
    version: int = 0
    marker_version: int = 0
    value: bytes | None = None


@dataclass(frozen=True, slots=True)
class Faults:
    """Damage applied to the built bytes. Field faults keep a valid CRC (it is recomputed);
    only ``bad_crc`` breaks it.

    - ``bad_crc``: store a wrong CRC (v2 batch; v0/v1 wrapper or every lone message).
    - ``truncate``: cut this many bytes off the end of the batch (a torn write at the tail).
    - ``size``: write this batchLength (v2) / message size (v0/v1) instead of the real one
      (below the minimum, or past the end of the file).
    - ``magic``: write this magic byte (e.g. 7).
    - ``codec_id``: write this codec id in the attribute bits 0-2 (e.g. 6, unknown) while the
      payload stays as compressed with ``codec``.
    - ``payload``: these bytes instead of the compressed records (garbage that does not
      decompress). Needs ``codec`` != 0.
    - ``last_offset_delta``: v2 header lastOffsetDelta (v0/v1: the wrapper offset is base + this).
    - ``record_count``: v2 header record count, disagreeing with the records present.
    - ``zero_tail``: append this many zero bytes after the batch (a preallocated/torn tail).
    """

    bad_crc: bool = False
    truncate: int = 0
    size: int | None = None
    magic: int | None = None
    codec_id: int | None = None
    payload: bytes | None = None
    last_offset_delta: int | None = None
    record_count: int | None = None
    zero_tail: int = 0

    @property
    def breaks_framing(self) -> bool:
        """The reader cannot trust such a batch: it is left out of indexes and producer state."""
        return bool(
            self.bad_crc
            or self.truncate
            or self.size is not None
            or self.magic is not None
            or self.codec_id is not None
            or self.payload is not None
            or self.zero_tail
        )


NO_FAULTS = Faults()


@dataclass(frozen=True, slots=True)
class BatchSpec:
    """One v2 batch, or one v0/v1 append (lone messages, or one compressed wrapper).

    ``base_offset`` None: 0 for :func:`encode_batch`, the partition's next offset for
    :meth:`PartitionWriter.append`. ``base_timestamp`` None: :data:`TS_BASE` /
    the partition's clock. The v2 header's baseTimestamp is the first record's timestamp and
    maxTimestamp the largest (or ``log_append_time`` when ``timestamp_type`` is LOG_APPEND_TIME);
    ``max_timestamp`` overrides it. A control batch (``control`` set, or ``is_control``) with no
    ``records`` gets the one control record built from ``control``; give ``records`` (e.g.
    ``control_record(spec)`` twice, or none with ``is_control=True``) to write malformed ones.
    ``attributes_extra`` is OR-ed into the attributes (e.g. 0x40 delete horizon).
    """

    records: tuple = ()
    base_offset: int | None = None
    magic: int = MAGIC_VALUE_V2
    codec: int = 0
    timestamp_type: int = CREATE_TIME
    base_timestamp: int | None = None
    log_append_time: int | None = None
    max_timestamp: int | None = None
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    transactional: bool = False
    control: ControlSpec | None = None
    is_control: bool | None = None
    partition_leader_epoch: int = 0
    attributes_extra: int = 0
    faults: Faults = NO_FAULTS

    @property
    def control_batch(self) -> bool:
        return self.is_control if self.is_control is not None else self.control is not None


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """What the bytes of a built batch say, as a reader (and a broker) would see them."""

    base_offset: int
    last_offset: int
    size: int
    magic: int
    record_count: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    transactional: bool
    control: bool
    control_type: int | None
    coordinator_epoch: int | None
    first_timestamp: int
    partition_leader_epoch: int
    trusted: bool


@dataclass(frozen=True, slots=True)
class EncodedBatch:
    data: bytes
    info: BatchInfo


def control_record(control: ControlSpec, timestamp: int | None = None) -> RecordSpec:
    """The control record of ``control`` as a plain record spec (key and value bytes)."""
    key = encode_control_key(control.type, control.version)
    if control.value is not None:
        value = control.value
    elif control.type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        value = encode_end_transaction_marker(control.coordinator_epoch, control.marker_version)
    else:
        value = b""
    return RecordSpec(key=key, value=value, timestamp=timestamp)


def records(values: Iterable, keys: Iterable | None = None) -> tuple[RecordSpec, ...]:
    """Shorthand: record specs from values (and keys); str is UTF-8 encoded."""
    values = list(values)
    keys = [None] * len(values) if keys is None else list(keys)
    return tuple(RecordSpec(key=_bytes(k), value=_bytes(v)) for k, v in zip(keys, values))


def _bytes(value) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


# ---------------------------------------------------------------------------------------------
# Batches
# ---------------------------------------------------------------------------------------------


def encode_batch(spec: BatchSpec) -> bytes:
    """The bytes of one batch (v2) or one v0/v1 append, faults applied."""
    return build_batch(spec).data


def build_batch(spec: BatchSpec) -> EncodedBatch:
    """The bytes and the header facts of one batch or v0/v1 append."""
    if spec.magic >= MAGIC_VALUE_V2:
        data, info = _build_v2(spec)
    else:
        data, info = _build_legacy(spec)
    faults = spec.faults
    if faults.truncate:
        data = data[: max(0, len(data) - faults.truncate)]
    if faults.zero_tail:
        data = data + bytes(faults.zero_tail)
    return EncodedBatch(data, info)


def _timestamps(spec: BatchSpec, recs: Sequence[RecordSpec]) -> list[int]:
    base = TS_BASE if spec.base_timestamp is None else spec.base_timestamp
    return [base + i if r.timestamp is None else r.timestamp for i, r in enumerate(recs)]


def _records_of(spec: BatchSpec) -> tuple[RecordSpec, ...]:
    if not spec.records and spec.control is not None:
        return (control_record(spec.control),)
    return tuple(spec.records)


def _build_v2(spec: BatchSpec) -> tuple[bytes, BatchInfo]:
    faults = spec.faults
    recs = _records_of(spec)
    base_offset = spec.base_offset or 0
    stamps = _timestamps(spec, recs)
    if recs:
        first_ts = stamps[0]
        max_ts = max(stamps)
    else:
        first_ts = max_ts = NO_TIMESTAMP if spec.base_timestamp is None else spec.base_timestamp
    if spec.timestamp_type == LOG_APPEND_TIME:
        max_ts = spec.log_append_time if spec.log_append_time is not None else max_ts
    if spec.max_timestamp is not None:
        max_ts = spec.max_timestamp

    body = b"".join(
        [
            encode_record(
                r.attributes,
                stamps[i] - first_ts,
                i if r.offset_delta is None else r.offset_delta,
                _bytes(r.key),
                _bytes(r.value),
                r.headers,
            )
            for i, r in enumerate(recs)
        ]
    )
    if faults.payload is not None:
        payload = faults.payload
    elif spec.codec:
        payload = compress(spec.codec, body, MAGIC_VALUE_V2)
    else:
        payload = body

    codec_bits = spec.codec if faults.codec_id is None else faults.codec_id
    attributes = (codec_bits & COMPRESSION_CODEC_MASK) | spec.attributes_extra
    if spec.timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if spec.transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    if spec.control_batch:
        attributes |= CONTROL_FLAG_MASK
    count = len(recs) if faults.record_count is None else faults.record_count
    if faults.last_offset_delta is not None:
        last_delta = faults.last_offset_delta
    elif recs:
        last_delta = len(recs) - 1 if recs[-1].offset_delta is None else recs[-1].offset_delta
    else:
        last_delta = 0
    data = encode_v2_batch(
        payload,
        base_offset=base_offset,
        partition_leader_epoch=spec.partition_leader_epoch,
        attributes=attributes,
        last_offset_delta=last_delta,
        base_timestamp=first_ts,
        max_timestamp=max_ts,
        producer_id=spec.producer_id,
        producer_epoch=spec.producer_epoch,
        base_sequence=spec.base_sequence,
        record_count=count,
        magic=MAGIC_VALUE_V2 if faults.magic is None else faults.magic,
        size_in_bytes=faults.size,
    )
    if faults.bad_crc:
        data = bytearray(data)
        (crc,) = struct.unpack_from(">I", data, V2_CRC_OFFSET)
        struct.pack_into(">I", data, V2_CRC_OFFSET, crc ^ _CRC_DAMAGE)
        data = bytes(data)

    control_type = coordinator_epoch = None
    if spec.control_batch and spec.control is not None and len(recs) == 1 and not spec.records:
        control_type = spec.control.type
        if spec.control.type in (ControlRecordType.ABORT, ControlRecordType.COMMIT) and spec.control.value is None:
            coordinator_epoch = spec.control.coordinator_epoch
    info = BatchInfo(
        base_offset=base_offset,
        last_offset=base_offset + last_delta,
        size=len(data),
        magic=MAGIC_VALUE_V2,
        record_count=len(recs),
        max_timestamp=max_ts,
        producer_id=spec.producer_id,
        producer_epoch=spec.producer_epoch,
        base_sequence=spec.base_sequence,
        transactional=spec.transactional,
        control=spec.control_batch,
        control_type=control_type,
        coordinator_epoch=coordinator_epoch,
        first_timestamp=first_ts,
        partition_leader_epoch=spec.partition_leader_epoch,
        trusted=not faults.breaks_framing,
    )
    return data, info


def legacy_message(
    offset: int,
    magic: int,
    attributes: int,
    timestamp: int | None,
    key: bytes | None,
    value: bytes | None,
    *,
    bad_crc: bool = False,
    size: int | None = None,
    stored_magic: int | None = None,
) -> bytes:
    """One v0/v1 message (:func:`encode_message`), damaged as asked: ``magic`` picks the layout,
    ``stored_magic`` is the byte written (the CRC covers it), ``size`` the size field written,
    ``bad_crc`` a wrong CRC."""
    data = encode_message(offset, magic, attributes, timestamp, key, value)
    if not bad_crc and size is None and stored_magic is None:
        return data
    return _damage_message(data, bad_crc, size, stored_magic)


def _damage_message(data: bytes, bad_crc: bool, size: int | None, stored_magic: int | None) -> bytes:
    """An encoded v0/v1 message with another magic byte (CRC recomputed over it), a wrong CRC or
    another size field."""
    damaged = bytearray(data)
    if stored_magic is not None:
        damaged[LEGACY_MAGIC_OFFSET] = stored_magic & 0xFF
    crc = zlib.crc32(damaged[LEGACY_MAGIC_OFFSET:])
    struct.pack_into(">I", damaged, LEGACY_CRC_OFFSET, crc ^ _CRC_DAMAGE if bad_crc else crc)
    if size is not None:
        struct.pack_into(">i", damaged, SIZE_OFFSET, size)
    return bytes(damaged)


def _build_legacy(spec: BatchSpec) -> tuple[bytes, BatchInfo]:
    faults = spec.faults
    recs = tuple(spec.records)
    magic = spec.magic
    base_offset = spec.base_offset or 0
    stamps = _timestamps(spec, recs) if magic >= MAGIC_VALUE_V1 else [NO_TIMESTAMP] * len(recs)
    lat = magic >= MAGIC_VALUE_V1 and spec.timestamp_type == LOG_APPEND_TIME
    max_ts = max(stamps) if recs else NO_TIMESTAMP
    if lat and spec.log_append_time is not None:
        max_ts = spec.log_append_time
    if spec.max_timestamp is not None:
        max_ts = spec.max_timestamp
    n = len(recs)

    if spec.codec == 0 and faults.payload is None and faults.codec_id is None:
        out = []
        for i, r in enumerate(recs):
            attrs = r.attributes | (TIMESTAMP_TYPE_MASK if lat else 0)
            out.append(
                legacy_message(
                    base_offset + (i if r.offset_delta is None else r.offset_delta),
                    magic if r.magic is None else r.magic,
                    attrs,
                    max_ts if lat else stamps[i],
                    _bytes(r.key),
                    _bytes(r.value),
                    bad_crc=r.bad_crc or faults.bad_crc,
                    size=faults.size,
                    stored_magic=faults.magic,
                )
            )
        data = b"".join(out)
        last_delta = n - 1 if faults.last_offset_delta is None else faults.last_offset_delta
        if recs and recs[-1].offset_delta is not None and faults.last_offset_delta is None:
            last_delta = recs[-1].offset_delta
    else:
        inner = []
        for i, r in enumerate(recs):
            inner_magic = magic if r.magic is None else r.magic
            if magic >= MAGIC_VALUE_V1:
                stored = i if r.offset_delta is None else r.offset_delta
            else:
                stored = base_offset + (i if r.offset_delta is None else r.offset_delta)
            inner.append(
                legacy_message(
                    stored,
                    inner_magic,
                    r.attributes,
                    stamps[i],
                    _bytes(r.key),
                    _bytes(r.value),
                    bad_crc=r.bad_crc,
                )
            )
        inner_set = b"".join(inner)
        last_delta = n - 1 if faults.last_offset_delta is None else faults.last_offset_delta
        codec_bits = spec.codec if faults.codec_id is None else faults.codec_id
        attrs = (codec_bits & COMPRESSION_CODEC_MASK) | (TIMESTAMP_TYPE_MASK if lat else 0) | spec.attributes_extra
        if faults.payload is not None:
            data = encode_message(base_offset + last_delta, magic, attrs, max_ts, None, faults.payload)
        else:
            data = encode_wrapper(base_offset + last_delta, magic, attrs, max_ts, inner_set, spec.codec)
        if faults.bad_crc or faults.size is not None or faults.magic is not None:
            data = _damage_message(data, faults.bad_crc, faults.size, faults.magic)
    info = BatchInfo(
        base_offset=base_offset,
        last_offset=base_offset + last_delta,
        size=len(data),
        magic=magic,
        record_count=n,
        max_timestamp=max_ts,
        producer_id=NO_PRODUCER_ID,
        producer_epoch=NO_PRODUCER_EPOCH,
        base_sequence=NO_SEQUENCE,
        transactional=False,
        control=False,
        control_type=None,
        coordinator_epoch=None,
        first_timestamp=stamps[0] if recs else NO_TIMESTAMP,
        partition_leader_epoch=-1,
        trusted=not faults.breaks_framing,
    )
    return data, info


# ---------------------------------------------------------------------------------------------
# Producer state (ProducerStateEntry / ProducerAppendInfo with AppendOrigin.REPLICATION)
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class ProducerState:
    """ProducerStateEntry as a snapshot stores it. ``last_sequence``/``last_offset``/``offset_delta``
    are those of the last data batch of the current epoch (-1/-1/0 when none)."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_sequence: int = NO_SEQUENCE
    last_offset: int = -1
    offset_delta: int = 0
    last_timestamp: int = NO_TIMESTAMP
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1

    def copy(self) -> ProducerState:
        return replace(self)


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """A ``.txnindex`` entry (AbortedTxn): version 0, producer id, first/last offset, LSO."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class ProducerStateTracker:
    """The broker's producer state replay (AppendOrigin.REPLICATION: nothing is rejected)."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerState] = {}
        self.ongoing: dict[int, int] = {}  # first offset -> producer id

    def load(self, entries: Iterable[ProducerState]) -> None:
        for entry in entries:
            self.producers[entry.producer_id] = entry.copy()
            if entry.current_txn_first_offset >= 0:
                self.ongoing[entry.current_txn_first_offset] = entry.producer_id

    def append(self, info: BatchInfo, marker_timestamp: int | None = None) -> AbortedTxn | None:
        """Apply one batch; returns the AbortedTxn to index when it ends an aborted transaction."""
        if info.magic < MAGIC_VALUE_V2 or info.producer_id == NO_PRODUCER_ID:
            return None
        entry = self.producers.get(info.producer_id)
        if entry is None:
            entry = self.producers[info.producer_id] = ProducerState(info.producer_id)
        if entry.producer_epoch != info.producer_epoch:
            entry.producer_epoch = info.producer_epoch
            entry.last_sequence, entry.last_offset, entry.offset_delta = NO_SEQUENCE, -1, 0
        if info.control:
            if info.record_count == 0 or info.control_type is None:
                return None
            aborted = None
            if entry.current_txn_first_offset >= 0:
                first = entry.current_txn_first_offset
                self.ongoing.pop(first, None)
                if info.control_type == ControlRecordType.ABORT:
                    others = sorted(f for f, pid in self.ongoing.items() if pid != info.producer_id)
                    lso = others[0] if others else info.base_offset + 1
                    aborted = AbortedTxn(info.producer_id, first, info.base_offset, lso)
            if info.coordinator_epoch is not None:
                entry.coordinator_epoch = info.coordinator_epoch
            entry.current_txn_first_offset = -1
            entry.last_timestamp = info.first_timestamp if marker_timestamp is None else marker_timestamp
            return aborted
        delta = info.last_offset - info.base_offset
        entry.last_sequence = (
            NO_SEQUENCE if info.base_sequence == NO_SEQUENCE else increment_sequence(info.base_sequence, delta)
        )
        entry.last_offset = info.last_offset
        entry.offset_delta = delta
        entry.last_timestamp = info.max_timestamp
        if entry.current_txn_first_offset < 0 and info.transactional:
            entry.current_txn_first_offset = info.base_offset
            self.ongoing[info.base_offset] = info.producer_id
        return None

    def snapshot(self) -> list[ProducerState]:
        return [self.producers[pid].copy() for pid in sorted(self.producers)]


# ---------------------------------------------------------------------------------------------
# Segments and partitions
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class AppendResult:
    base_offset: int
    last_offset: int
    position: int
    size: int
    segment_base_offset: int
    info: BatchInfo | None


@dataclass(slots=True)
class Segment:
    """One segment being written. ``offset_index`` holds (absolute offset, position) and
    ``time_index`` (timestamp, absolute offset); edit them before :meth:`LogDirWriter.close`
    to write wrong entries."""

    base_offset: int
    size: int = 0
    offset_index: list[tuple[int, int]] = field(default_factory=list)
    time_index: list[tuple[int, int]] = field(default_factory=list)
    txn_index: list[AbortedTxn] = field(default_factory=list)
    bytes_since_last_index_entry: int = 0
    max_timestamp_so_far: int = NO_TIMESTAMP
    offset_of_max_timestamp: int = -1
    largest_timestamp: int = NO_TIMESTAMP
    closed: bool = False
    suffix: str = ""
    file: Any = None

    def maybe_append_time_index(self, timestamp: int, offset: int) -> None:
        """TimeIndex.maybeAppend: only a timestamp above the last entry's (initially -1)."""
        last = self.time_index[-1][0] if self.time_index else NO_TIMESTAMP
        if timestamp > last:
            self.time_index.append((timestamp, offset))

    def close(self) -> None:
        """LogSegment.onBecomeInactiveSegment / close: the max timestamp so far is indexed."""
        if not self.closed:
            self.closed = True
            if self.max_timestamp_so_far != NO_TIMESTAMP:
                self.maybe_append_time_index(self.max_timestamp_so_far, self.offset_of_max_timestamp)


class PartitionWriter:
    """One ``<topic>-<partition>`` folder.

    Every :meth:`append` is one ``LogSegment.append`` (a leader appends one batch per produce
    request): the segment rolls first if it is not empty and the batch would take it past
    ``segment_bytes`` (the new segment is named after the batch's base offset, and a producer
    snapshot is taken at that offset); then, when more than ``index_interval_bytes`` were
    appended since the last index entry, an offset index entry (this append's last offset, the
    position where it starts) and a time index entry (max timestamp so far, the last offset of
    the batch that holds it) are added. Closed segments get the time index's closing entry.
    Batches whose framing is damaged (:attr:`Faults.breaks_framing`) are written but neither
    indexed nor replayed into producer state.
    """

    def __init__(
        self,
        root: str | os.PathLike,
        topic: str,
        partition: int,
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
        snapshots: bool = True,
        start_offset: int = 0,
        clock: int = TS_BASE,
        tick_ms: int = 1000,
        leader_epoch: int = 0,
        topic_id: str | None = None,
    ) -> None:
        self.root = Path(root)
        self.topic = topic
        self.partition = partition
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.take_snapshots = snapshots
        self.clock = clock
        self.tick_ms = tick_ms
        self.leader_epoch = leader_epoch
        self.topic_id = topic_id or topic_uuid(topic)
        self.next_offset = start_offset
        self.segments: list[Segment] = [Segment(start_offset)]
        self.state = ProducerStateTracker()
        self.snapshots: dict[int, list[ProducerState]] = {}
        self.log_start_offset = start_offset
        self.leader_epochs: list[tuple[int, int]] = []
        self.results: list[AppendResult] = []
        self.closed = False

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def path(self) -> Path:
        return self.root / self.name

    @property
    def active(self) -> Segment:
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.next_offset

    # -- appending ----------------------------------------------------------------------------

    def append(self, spec: BatchSpec, *, roll: bool = False) -> AppendResult:
        """Append one batch; offsets, timestamps and leader epoch are filled in when None/unset.
        ``roll=True`` starts a new segment first."""
        if spec.base_offset is None:
            spec = replace(spec, base_offset=self.next_offset)
        if spec.base_timestamp is None:
            spec = replace(spec, base_timestamp=self.clock)
            self.clock += self.tick_ms
        if spec.magic >= MAGIC_VALUE_V2 and spec.partition_leader_epoch == 0 and self.leader_epoch:
            spec = replace(spec, partition_leader_epoch=self.leader_epoch)
        built = build_batch(spec)
        return self.append_bytes(built.data, built.info, roll=roll)

    def append_bytes(self, data: bytes, info: BatchInfo | None = None, *, roll: bool = False) -> AppendResult:
        """Append raw bytes. Without ``info`` (garbage, a zero tail) nothing is indexed or replayed."""
        if roll or (self.active.size and self.active.size + len(data) > self.segment_bytes):
            self.roll(info.base_offset if info is not None else self.next_offset)
        segment = self.active
        position = segment.size
        self._write_log(segment, data)
        if info is not None and info.trusted:
            self._index(segment, info, position, len(data))
            aborted = self.state.append(info)
            if aborted is not None:
                # UnifiedLog.append: the segment appended to indexes the aborted transaction.
                segment.txn_index.append(aborted)
        else:
            segment.bytes_since_last_index_entry += len(data)
        if info is not None:
            if info.magic >= MAGIC_VALUE_V2 and info.trusted:
                epoch = info.partition_leader_epoch
                if epoch >= 0 and (not self.leader_epochs or epoch > self.leader_epochs[-1][0]):
                    self.leader_epochs.append((epoch, info.base_offset))
            self.next_offset = max(self.next_offset, info.last_offset + 1)
        result = AppendResult(
            info.base_offset if info else self.next_offset,
            info.last_offset if info else self.next_offset - 1,
            position,
            len(data),
            segment.base_offset,
            info,
        )
        self.results.append(result)
        return result

    def _log_path(self, segment: Segment) -> Path:
        return self.path / f"{segment.base_offset:020d}.log"

    def _write_log(self, segment: Segment, data: bytes) -> None:
        """Segment bytes go straight to disk (a benchmark log does not sit in memory)."""
        if segment.file is None:
            self.path.mkdir(parents=True, exist_ok=True)
            segment.file = open(self._log_path(segment), "wb")  # noqa: SIM115 - closed when the segment rolls
        segment.file.write(data)
        segment.size += len(data)

    def _index(self, segment: Segment, info: BatchInfo, position: int, size: int) -> None:
        # LogSegment.append
        if info.max_timestamp > segment.max_timestamp_so_far:
            segment.max_timestamp_so_far = info.max_timestamp
            segment.offset_of_max_timestamp = info.last_offset
        if segment.bytes_since_last_index_entry > self.index_interval_bytes:
            segment.offset_index.append((info.last_offset, position))
            segment.maybe_append_time_index(segment.max_timestamp_so_far, segment.offset_of_max_timestamp)
            segment.bytes_since_last_index_entry = 0
        segment.bytes_since_last_index_entry += size
        segment.largest_timestamp = max(segment.largest_timestamp, info.max_timestamp)

    def roll(self, new_base_offset: int | None = None) -> Segment:
        """UnifiedLog.roll: close the active segment, snapshot producer state, start a new one."""
        base = self.next_offset if new_base_offset is None else new_base_offset
        if not self.active.size:
            self.active.base_offset = base
            return self.active
        self.active.close()
        if self.take_snapshots:
            self.snapshots[base] = self.state.snapshot()
        segment = Segment(base)
        self.segments.append(segment)
        return segment

    def take_snapshot(self, offset: int | None = None) -> None:
        """ProducerStateManager.takeSnapshot at the log end offset (or a given offset)."""
        self.snapshots[self.next_offset if offset is None else offset] = self.state.snapshot()

    # -- retention and damage -------------------------------------------------------------------

    def delete_segments(self, count: int, *, keep_snapshot_at_log_start: bool = True) -> int:
        """Retention: delete the first ``count`` segments; the log start offset moves to the
        first kept segment's base offset. Snapshots below it are deleted (deleteSnapshotsBefore);
        the one at the log start stays unless ``keep_snapshot_at_log_start`` is False.
        Returns the new log start offset."""
        if count >= len(self.segments):
            raise ValueError("cannot delete the active segment")
        for segment in self.segments[:count]:
            if segment.file is not None:
                segment.file.close()
                self._log_path(segment).unlink()
        self.segments = self.segments[count:]
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        for offset in list(self.snapshots):
            if offset < self.log_start_offset or (
                offset == self.log_start_offset and not keep_snapshot_at_log_start
            ):
                del self.snapshots[offset]
        self.leader_epochs = _truncate_epochs_from_start(self.leader_epochs, self.log_start_offset)
        return self.log_start_offset

    def delete_records(self, offset: int) -> None:
        """DeleteRecords: the log start offset moves to ``offset`` without deleting segments."""
        self.log_start_offset = max(self.log_start_offset, offset)
        self.leader_epochs = _truncate_epochs_from_start(self.leader_epochs, self.log_start_offset)

    def segment_for(self, offset: int) -> Segment:
        found = self.segments[0]
        for segment in self.segments:
            if segment.base_offset <= offset:
                found = segment
        return found

    # -- output ------------------------------------------------------------------------------------

    def close(self) -> None:
        """Clean shutdown: close the active segment, snapshot at the log end, write the folder."""
        if self.closed:
            return
        self.closed = True
        if self.active.size:
            self.active.close()
        if self.take_snapshots and self.next_offset > 0 and self.next_offset not in self.snapshots:
            self.snapshots[self.next_offset] = self.state.snapshot()
        self.write()

    def write(self) -> None:
        enc = _SidecarEncoders
        folder = self.path
        folder.mkdir(parents=True, exist_ok=True)
        for segment in self.segments:
            stem = folder / f"{segment.base_offset:020d}"
            suffix = segment.suffix
            if segment.file is None:
                self._write_log(segment, b"")
            segment.file.close()
            if suffix:
                self._log_path(segment).rename(f"{stem}.log{suffix}")
            _write(Path(f"{stem}.index{suffix}"), enc.offset_index(segment.offset_index, segment.base_offset))
            _write(Path(f"{stem}.timeindex{suffix}"), enc.time_index(segment.time_index, segment.base_offset))
            if segment.txn_index:
                _write(Path(f"{stem}.txnindex{suffix}"), enc.transaction_index(segment.txn_index))
        for offset, entries in sorted(self.snapshots.items()):
            _write(folder / f"{offset:020d}.snapshot", enc.producer_snapshot(entries))
        epochs = self.leader_epochs or []
        _write(folder / "leader-epoch-checkpoint", enc.leader_epoch_checkpoint(epochs))
        _write(folder / "partition.metadata", f"version: 0\ntopic_id: {self.topic_id}\n".encode())
        mtime_ms = max((s.largest_timestamp for s in self.segments), default=TS_BASE)
        mtime_ns = max(mtime_ms, TS_BASE) * 1_000_000
        for path in folder.iterdir():
            os.utime(path, ns=(mtime_ns, mtime_ns))


def _truncate_epochs_from_start(epochs: list[tuple[int, int]], start: int) -> list[tuple[int, int]]:
    """LeaderEpochFileCache.truncateFromStart: the entries covering ``start`` begin there."""
    kept = [(e, o) for e, o in epochs if o > start]
    before = [(e, o) for e, o in epochs if o <= start]
    if before:
        kept.insert(0, (before[-1][0], start))
    return kept


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def topic_uuid(topic: str) -> str:
    """A deterministic topic id (Uuid base64url, 22 chars) from the topic name."""
    raw = hashlib.sha256(b"kafka-audit-topic:" + topic.encode("utf-8", "surrogateescape")).digest()[:16]
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


class LogDirWriter:
    """A broker log dir: partition folders plus ``meta.properties`` and the offset checkpoints.

    On :meth:`close` every partition is closed (clean shutdown) and the checkpoints written:
    ``recovery-point-offset-checkpoint`` and ``replication-offset-checkpoint`` (high watermark)
    at each log end offset, and ``log-start-offset-checkpoint`` with Kafka's rule (only a log
    start offset above the first segment's base offset, as after DeleteRecords; on load a broker
    takes the larger of the two) or, with ``checkpoint_all_log_starts``, every log start above 0.
    """

    def __init__(
        self,
        root: str | os.PathLike,
        *,
        node_id: int = 1,
        cluster_id: str = "a3Jhd2xlZC1maXh0dXJl",
        directory_id: str | None = None,
        checkpoint_all_log_starts: bool = False,
        **partition_defaults,
    ) -> None:
        self.root = Path(root)
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.directory_id = directory_id or topic_uuid(f"directory:{cluster_id}:{node_id}")
        self.checkpoint_all_log_starts = checkpoint_all_log_starts
        self.partition_defaults = partition_defaults
        self.partitions: dict[tuple[str, int], PartitionWriter] = {}

    def partition(self, topic: str, partition: int = 0, **options) -> PartitionWriter:
        key = (topic, partition)
        if key not in self.partitions:
            self.partitions[key] = PartitionWriter(self.root, topic, partition, **{**self.partition_defaults, **options})
        return self.partitions[key]

    def close(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        for writer in self.partitions.values():
            writer.close()
        enc = _SidecarEncoders
        ordered = sorted(self.partitions.values(), key=lambda w: (w.topic, w.partition))
        ends = [(w.topic, w.partition, w.log_end_offset) for w in ordered]
        starts = [
            (w.topic, w.partition, w.log_start_offset)
            for w in ordered
            if w.log_start_offset > w.segments[0].base_offset
            or (self.checkpoint_all_log_starts and w.log_start_offset > 0)
        ]
        _write(self.root / "recovery-point-offset-checkpoint", enc.offset_checkpoint(ends))
        _write(self.root / "replication-offset-checkpoint", enc.offset_checkpoint(ends))
        _write(self.root / "log-start-offset-checkpoint", enc.offset_checkpoint(starts))
        _write(
            self.root / "meta.properties",
            enc.meta_properties(
                {
                    "cluster.id": self.cluster_id,
                    "directory.id": self.directory_id,
                    "node.id": str(self.node_id),
                    "version": "1",
                }
            ),
        )

    def __enter__(self) -> LogDirWriter:
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            self.close()


class Producer:
    """An idempotent (and optionally transactional) producer: tracks epoch and the next
    sequence per partition, and writes transaction markers as a coordinator would.

    >>> p = Producer(1000, epoch=0, transactional=True)
    >>> p.begin(); p.send(w, records(["a", "b"])); p.commit(coordinator_epoch=3)
    """

    def __init__(
        self,
        producer_id: int,
        epoch: int = 0,
        *,
        transactional: bool = False,
        coordinator_epoch: int = 0,
        codec: int = 0,
        transaction_version: int = 0,
    ) -> None:
        self.producer_id = producer_id
        self.epoch = epoch
        self.transactional = transactional
        # 2: transactions v2 (KIP-890, Kafka 4): the coordinator bumps the epoch before every end
        # marker (TransactionMetadata.prepareAbortOrCommit) and the producer goes on with it.
        self.transaction_version = transaction_version
        self.coordinator_epoch = coordinator_epoch
        self.codec = codec
        self.sequences: dict[int, int] = {}
        self.in_transaction = False
        self.txn_partitions: list[PartitionWriter] = []

    def next_sequence(self, writer: PartitionWriter) -> int:
        return self.sequences.get(id(writer), 0)

    def spec(
        self,
        writer: PartitionWriter,
        recs: Sequence[RecordSpec],
        *,
        sequence: int | None = None,
        epoch: int | None = None,
        transactional: bool | None = None,
        **fields,
    ) -> BatchSpec:
        """The BatchSpec of the next batch (nothing is appended or advanced)."""
        txn = self.in_transaction if transactional is None else transactional
        fields.setdefault("codec", self.codec)
        return BatchSpec(
            records=tuple(recs),
            producer_id=self.producer_id,
            producer_epoch=self.epoch if epoch is None else epoch,
            base_sequence=self.next_sequence(writer) if sequence is None else sequence,
            transactional=txn,
            **fields,
        )

    def send(
        self,
        writer: PartitionWriter,
        recs: Sequence[RecordSpec],
        *,
        advance: bool = True,
        **options,
    ) -> AppendResult:
        """Append the next batch; the partition's next sequence moves past it (``advance``)."""
        spec = self.spec(writer, recs, **options)
        result = writer.append(spec)
        if advance:
            self.sequences[id(writer)] = increment_sequence(spec.base_sequence, len(spec.records))
        if spec.transactional and writer not in self.txn_partitions:
            self.txn_partitions.append(writer)
        return result

    def begin(self) -> None:
        if not self.transactional:
            raise ValueError("begin() needs a transactional producer")
        self.in_transaction = True
        self.txn_partitions = []

    def marker(self, control_type: int, *, coordinator_epoch: int | None = None, epoch: int | None = None, **fields) -> BatchSpec:
        """A COMMIT/ABORT marker batch as the coordinator writes it (sequence -1, transactional)."""
        return BatchSpec(
            control=ControlSpec(
                control_type, self.coordinator_epoch if coordinator_epoch is None else coordinator_epoch
            ),
            producer_id=self.producer_id,
            producer_epoch=self.epoch if epoch is None else epoch,
            base_sequence=NO_SEQUENCE,
            transactional=True,
            **fields,
        )

    def _end(self, control_type: int, writers, coordinator_epoch, epoch) -> list[AppendResult]:
        targets = list(self.txn_partitions if writers is None else writers)
        tv2 = self.transaction_version >= 2
        if tv2 and epoch is None:
            epoch = self.epoch + 1
        results = [
            w.append(self.marker(control_type, coordinator_epoch=coordinator_epoch, epoch=epoch)) for w in targets
        ]
        self.in_transaction = False
        self.txn_partitions = []
        if tv2:
            # The EndTxn answer carries the bumped epoch: the next transaction runs under it,
            # every partition's sequence from 0 (KIP-890; ProducerStateManagerTest.testControlRecordBumpsProducerEpoch).
            self.bump_epoch(epoch)
        return results

    def commit(self, writers=None, *, coordinator_epoch: int | None = None, epoch: int | None = None):
        return self._end(ControlRecordType.COMMIT, writers, coordinator_epoch, epoch)

    def abort(self, writers=None, *, coordinator_epoch: int | None = None, epoch: int | None = None):
        return self._end(ControlRecordType.ABORT, writers, coordinator_epoch, epoch)

    def init_producer_id(self, *, coordinator_epoch: int | None = None) -> list[AppendResult]:
        """A new instance's InitProducerId (TransactionCoordinator.handleInitProducerId): an open
        transaction is aborted at epoch + 1 (TransactionMetadata.prepareFenceProducerEpoch), and the
        new instance gets one more, so +2 over an open transaction, +1 otherwise. Returns the ABORT
        markers. Keep a copy of this producer first to write as the fenced zombie."""
        results: list[AppendResult] = []
        if self.in_transaction:
            fence = self.epoch + 1
            results = self.abort(coordinator_epoch=coordinator_epoch, epoch=fence)
            if self.transaction_version < 2:
                self.bump_epoch(fence)
        self.bump_epoch()
        return results

    def bump_epoch(self, epoch: int | None = None) -> int:
        """A new producer instance (InitProducerId): the epoch rises and sequences restart at 0."""
        self.epoch = self.epoch + 1 if epoch is None else epoch
        self.sequences.clear()
        return self.epoch


# ---------------------------------------------------------------------------------------------
# __transaction_state records, as the transaction coordinator writes them
# ---------------------------------------------------------------------------------------------

# TransactionState ids (TransactionState.java, transaction-coordinator module).
TXN_STATES = {"Empty": 0, "Ongoing": 1, "PrepareCommit": 2, "PrepareAbort": 3, "CompleteCommit": 4, "CompleteAbort": 5}


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def transaction_log_record(
    transactional_id: str,
    producer_id: int,
    epoch: int,
    state: str,
    *,
    timeout_ms: int = 60000,
    partitions: Sequence[tuple[str, int]] = (),
    start: int = -1,
    last_update: int = 0,
    client_transaction_version: int | None = 2,
    previous_producer_id: int = -1,
    next_producer_id: int = -1,
) -> RecordSpec:
    """A ``__transaction_state`` record: TransactionLogKey v0 and TransactionLogValue v1 (flexible,
    tagged PreviousProducerId 0, NextProducerId 1, ClientTransactionVersion 2 written only when
    they differ from their defaults, as the generated serializer does)."""
    raw = transactional_id.encode()
    key = struct.pack(">hh", 0, len(raw)) + raw
    value = struct.pack(">hqhib", 1, producer_id, epoch, timeout_ms, TXN_STATES[state])
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    value += _uvarint(len(by_topic) + 1)
    for topic, ids in by_topic.items():
        value += _uvarint(len(topic) + 1) + topic.encode() + _uvarint(len(ids) + 1)
        value += b"".join(struct.pack(">i", i) for i in ids) + _uvarint(0)
    value += struct.pack(">qq", last_update, start)
    tags = []
    if previous_producer_id >= 0:
        tags.append((0, struct.pack(">q", previous_producer_id)))
    if next_producer_id >= 0:
        tags.append((1, struct.pack(">q", next_producer_id)))
    if client_transaction_version:
        tags.append((2, struct.pack(">h", client_transaction_version)))
    value += _uvarint(len(tags)) + b"".join(_uvarint(t) + _uvarint(len(v)) + v for t, v in tags)
    return RecordSpec(key=key, value=value, timestamp=last_update)


# ---------------------------------------------------------------------------------------------
# Sidecar files: the simulator's state handed to the encoders beside the readers in formats/
# ---------------------------------------------------------------------------------------------


class _SidecarEncoders:
    """The writer's entries (tuples, :class:`AbortedTxn`, :class:`ProducerState`, dicts) in the
    types of ``kafka_audit.formats`` and through its encoders."""

    offset_index = staticmethod(OFFSET_INDEX.encode)
    time_index = staticmethod(TIME_INDEX.encode)

    @staticmethod
    def transaction_index(entries: list[AbortedTxn]) -> bytes:
        return transaction_index.encode_transaction_index(
            transaction_index.AbortedTxn(
                transaction_index.CURRENT_VERSION, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset
            )
            for e in entries
        )

    @staticmethod
    def producer_snapshot(entries: list[ProducerState]) -> bytes:
        return encode_producer_snapshot(
            ProducerSnapshotEntry(
                e.producer_id,
                e.producer_epoch,
                e.last_sequence,
                e.last_offset,
                e.offset_delta,
                e.last_timestamp,
                e.coordinator_epoch,
                e.current_txn_first_offset,
            )
            for e in entries
        )

    @staticmethod
    def offset_checkpoint(entries: list[tuple[str, int, int]]) -> bytes:
        return checkpoints.encode_offset_checkpoint(TopicPartitionOffset(*e) for e in entries)

    @staticmethod
    def leader_epoch_checkpoint(entries: list[tuple[int, int]]) -> bytes:
        return checkpoints.encode_leader_epoch_checkpoint(EpochEntry(*e) for e in entries)

    @staticmethod
    def meta_properties(props: dict[str, str]) -> bytes:
        return checkpoints.encode_properties(
            (Property(k, v) for k, v in props.items()), comments=("", "Tue Nov 14 22:13:20 UTC 2023")
        )


# -- replica sets (SPEC section 6) --------------------------------------------------------------------

# LeaderEpochFileCache's file left out: ReplicaSpec.leader_epochs=NO_CHECKPOINT.
NO_CHECKPOINT: list[tuple[int, int]] = []


@dataclass
class ReplicaSpec:
    """One broker's copy of a partition for :func:`write_replica_sets`: one single-record batch per
    entry of ``log`` (leader epoch, value) at offsets ``start``, ``start + 1``, ...; the same entry
    at the same offset gives the same bytes on every broker. ``removed``: offsets not written (a
    cleaner removed them); ``roll_every``: a segment per that many batches; ``delete_segments``:
    retention deleted the first ones; ``high_watermark`` (default the log end), ``leader_epochs``
    (default what the appends assigned; :data:`NO_CHECKPOINT`: no file) and ``cleaner_offset``
    (``cleaner-offset-checkpoint``) replace what the broker would have checkpointed."""

    node_id: int
    log: list[tuple[int, str]]
    start: int = 0
    removed: frozenset[int] = frozenset()
    roll_every: int = 0
    delete_segments: int = 0
    high_watermark: int | None = None
    leader_epochs: list[tuple[int, int]] | None = None
    cleaner_offset: int | None = None
    # An idempotent producer's id for every batch (epoch 0, sequence = offset - start); -1: none.
    producer_id: int = NO_PRODUCER_ID


def write_replica_sets(root: str | os.PathLike, sets: dict[str, list[ReplicaSpec]],
                       cluster_id: str = "cmVwbGljYS1zZXRzLWZpeA") -> list[Path]:
    """Brokers' log dirs ``broker-<node id>`` under ``root`` holding partition 0 of each topic of
    ``sets`` as its replicas say (meta.properties, replication-offset-checkpoint,
    leader-epoch-checkpoint, cleaner-offset-checkpoint); returns the log dirs, by node id."""
    by_node: dict[int, list[tuple[str, ReplicaSpec]]] = {}
    for topic, replicas in sets.items():
        for spec in replicas:
            by_node.setdefault(spec.node_id, []).append((topic, spec))
    dirs = []
    for node, held in sorted(by_node.items()):
        log_dir = Path(root) / f"broker-{node}"
        with LogDirWriter(log_dir, node_id=node, cluster_id=cluster_id) as writer:
            for topic, spec in held:
                _write_replica(writer.partition(topic), spec)
        marks, cleaned = [], []
        for topic, spec in held:
            writer_part = writer.partition(topic)
            marks.append((topic, 0, writer_part.log_end_offset if spec.high_watermark is None else spec.high_watermark))
            if spec.cleaner_offset is not None:
                cleaned.append((topic, 0, spec.cleaner_offset))
            epochs = log_dir / f"{topic}-0" / "leader-epoch-checkpoint"
            if spec.leader_epochs is NO_CHECKPOINT:
                epochs.unlink()
            elif spec.leader_epochs is not None:
                _write(epochs, _SidecarEncoders.leader_epoch_checkpoint(spec.leader_epochs))
        _write(log_dir / "replication-offset-checkpoint", _SidecarEncoders.offset_checkpoint(marks))
        if cleaned:
            _write(log_dir / "cleaner-offset-checkpoint", _SidecarEncoders.offset_checkpoint(cleaned))
        dirs.append(log_dir)
    return dirs


def _write_replica(partition: PartitionWriter, spec: ReplicaSpec) -> None:
    partition.next_offset = spec.start
    partition.segments[0].base_offset = partition.log_start_offset = spec.start
    for index, (epoch, value) in enumerate(spec.log):
        offset = spec.start + index
        if offset in spec.removed:
            continue
        producer = {} if spec.producer_id < 0 else {"producer_id": spec.producer_id, "producer_epoch": 0, "base_sequence": index}
        batch = BatchSpec(records=records([value], keys=[f"k{offset % 4}"]), base_offset=offset,
                          base_timestamp=TS_BASE + offset * 1000, partition_leader_epoch=epoch, **producer)
        partition.append(batch, roll=bool(spec.roll_every) and index > 0 and index % spec.roll_every == 0)
    if spec.delete_segments:
        partition.delete_segments(spec.delete_segments)
