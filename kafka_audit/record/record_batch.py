"""The batch and record model shared by the v0/v1 and v2 decoders.

Follows ``org.apache.kafka.common.record.RecordBatch`` / ``Record``: for magic v2 a
:class:`RecordBatch` is one DefaultRecordBatch; for magic v0/v1 it is one top-level
legacy message (a compressed wrapper, or a lone uncompressed message), the unit that
``AbstractLegacyRecordBatch`` presents as a batch. The v2 header layout (``V2_*_OFFSET``) and its
encoder (:func:`encode_v2_batch`) live here too, for the reader, the encoder and ``bench/`` alike.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

import crc32c

# org.apache.kafka.common.record.RecordBatch
MAGIC_VALUE_V0 = 0
MAGIC_VALUE_V1 = 1
MAGIC_VALUE_V2 = 2
NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

# org.apache.kafka.common.record.Records: offset i64 + size i32 before every batch/message, the
# magic byte at the same place in every format.
OFFSET_OFFSET = 0
OFFSET_LENGTH = 8
SIZE_OFFSET = OFFSET_OFFSET + OFFSET_LENGTH
SIZE_LENGTH = 4
LOG_OVERHEAD = SIZE_OFFSET + SIZE_LENGTH
MAGIC_OFFSET = 16
MAGIC_LENGTH = 1
# Records.HEADER_SIZE_UP_TO_MAGIC: offset, size, and (v2: partitionLeaderEpoch / v0,v1: crc) + magic.
HEADER_SIZE_UP_TO_MAGIC = MAGIC_OFFSET + MAGIC_LENGTH

# LegacyRecord after the log overhead: crc u32 (CRC-32 of magic..end), magic i8, attributes i8.
LEGACY_CRC_OFFSET = LOG_OVERHEAD
LEGACY_CRC_LENGTH = 4
LEGACY_MAGIC_OFFSET = LEGACY_CRC_OFFSET + LEGACY_CRC_LENGTH
LEGACY_ATTRIBUTES_OFFSET = LEGACY_MAGIC_OFFSET + MAGIC_LENGTH

# DefaultRecordBatch header layout (SPEC section 4), in the order of DefaultRecordBatch's *_OFFSET
# chain: baseOffset q, batchLength i, partitionLeaderEpoch i, magic b, crc I (unsigned),
# attributes h, lastOffsetDelta i, baseTimestamp q, maxTimestamp q, producerId q,
# producerEpoch h, baseSequence i, recordsCount i. The reader, the encoder below and bench/ all
# take their positions from here.
V2_HEADER = struct.Struct(">qiibIhiqqqhii")
# Each field's offset: the size of the fields before it (V2_HEADER.format[0] is the byte order).
(
    V2_LENGTH_OFFSET,
    V2_PARTITION_LEADER_EPOCH_OFFSET,
    V2_MAGIC_OFFSET,
    V2_CRC_OFFSET,
    V2_ATTRIBUTES_OFFSET,
    V2_LAST_OFFSET_DELTA_OFFSET,
    V2_BASE_TIMESTAMP_OFFSET,
    V2_MAX_TIMESTAMP_OFFSET,
    V2_PRODUCER_ID_OFFSET,
    V2_PRODUCER_EPOCH_OFFSET,
    V2_BASE_SEQUENCE_OFFSET,
    V2_RECORDS_COUNT_OFFSET,
) = (struct.calcsize(V2_HEADER.format[:end]) for end in range(2, 14))
V2_RECORDS_OFFSET = V2_HEADER.size
V2_RECORD_BATCH_OVERHEAD = V2_RECORDS_OFFSET
# batchLength counts the bytes after the length field.
V2_BATCH_LENGTH_OVERHEAD = V2_RECORD_BATCH_OVERHEAD - V2_PARTITION_LEADER_EPOCH_OFFSET
assert V2_MAGIC_OFFSET == MAGIC_OFFSET

# LegacyRecord layout: crc u32, magic i8, attributes i8, [timestamp i64], key len i32, value len i32.
LEGACY_RECORD_OVERHEAD_V0 = 14
LEGACY_RECORD_OVERHEAD_V1 = 22

# Attribute bits (DefaultRecordBatch / LegacyRecord).
COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40


class CompressionType(IntEnum):
    """org.apache.kafka.common.record.CompressionType ids."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def label(self) -> str:
        return self.name.lower()


class TimestampType(IntEnum):
    """org.apache.kafka.common.record.TimestampType (NO_TIMESTAMP_TYPE is -1 for v0)."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlRecordType(IntEnum):
    """org.apache.kafka.common.record.ControlRecordType (the KRaft ones live in __cluster_metadata)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


# Label per defined codec id: codec_label runs for every batch, and a dict lookup costs a
# fraction of an enum construction.
_CODEC_LABELS = {codec.value: codec.label for codec in CompressionType}


def codec_label(codec_id: int) -> str:
    """Name of a compression codec id, or ``unknown(N)`` for ids Kafka does not define."""
    label = _CODEC_LABELS.get(codec_id)
    return label if label is not None else f"unknown({codec_id})"


@dataclass(slots=True)
class Header:
    key: str
    value: bytes | None


@dataclass(slots=True)
class Record:
    """One decoded record.

    ``offset`` is absolute. ``index`` is the record's index inside its batch (KIP-467).
    ``stored_offset`` is what the bytes say: the v2 offset delta, the v1 inner relative
    offset, or the v0 inner absolute offset. ``key_size``/``value_size`` are -1 for null.
    ``key``, ``value`` and ``headers`` are only filled when decoding ``with_data`` (dump);
    the audit reads sizes only. For v0/v1 inner messages ``magic``, ``attributes`` and
    ``crc_valid`` are the inner message's own; for v2 ``attributes`` is the record's.
    """

    index: int
    offset: int
    stored_offset: int
    timestamp: int
    key_size: int
    value_size: int
    key: bytes | None = None
    value: bytes | None = None
    headers: tuple[Header, ...] = ()
    header_count: int = 0
    magic: int = MAGIC_VALUE_V2
    attributes: int = 0
    crc_valid: bool | None = None


@dataclass(slots=True)
class RecordBatch:
    """Header of one v2 batch or one top-level v0/v1 message, with its byte position.

    ``size`` is the whole entry on disk including the 12-byte log overhead.
    ``record_count`` is the header's count for v2; for v0/v1 it is 1 for a lone
    message and None for a compressed wrapper until its inner set is decoded.
    ``last_offset`` is ``base_offset + last_offset_delta`` for v2; for v0/v1 it is the
    wrapper's (or lone message's) own offset, which Kafka sets to the last inner offset.
    For v0/v1 ``base_offset`` equals ``last_offset`` until the inner set is decoded.
    """

    position: int
    base_offset: int
    last_offset: int
    magic: int
    size: int
    stored_crc: int
    crc_valid: bool
    attributes: int
    record_count: int | None
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    last_offset_delta: int = 0
    base_timestamp: int = NO_TIMESTAMP
    max_timestamp: int = NO_TIMESTAMP
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE

    @property
    def codec(self) -> int:
        return self.attributes & COMPRESSION_CODEC_MASK

    @property
    def compression(self) -> str:
        return codec_label(self.codec)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == MAGIC_VALUE_V0:
            return TimestampType.NO_TIMESTAMP_TYPE
        return TimestampType.LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return self.magic >= MAGIC_VALUE_V2 and bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return self.magic >= MAGIC_VALUE_V2 and bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.magic >= MAGIC_VALUE_V2 and self.producer_id != NO_PRODUCER_ID

    @property
    def last_sequence(self) -> int:
        """DefaultRecordBatch.lastSequence: base sequence + last offset delta, wrapping at 2^31-1."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


def increment_sequence(sequence: int, increment: int) -> int:
    """DefaultRecordBatch.incrementSequence: sequences wrap from 2^31-1 back to 0."""
    if sequence > 0x7FFFFFFF - increment:
        return increment - (0x7FFFFFFF - sequence) - 1
    return sequence + increment


def encode_v2_batch(
    records: bytes,
    *,
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    record_count: int,
    magic: int = MAGIC_VALUE_V2,
    size_in_bytes: int | None = None,
) -> bytes:
    """DefaultRecordBatch.writeHeader: the 61-byte header before ``records`` (the encoded, possibly
    compressed, records), with the CRC-32C over attributes..end. ``size_in_bytes`` is the
    batchLength field (by default the bytes after it); ``magic`` the byte written (writeHeader
    takes both as given)."""
    length = V2_BATCH_LENGTH_OVERHEAD + len(records) if size_in_bytes is None else size_in_bytes
    header = bytearray(
        V2_HEADER.pack(
            base_offset,
            length,
            partition_leader_epoch,
            magic,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            record_count,
        )
    )
    crc = crc32c.crc32c(records, crc32c.crc32c(bytes(header[V2_ATTRIBUTES_OFFSET:])))
    struct.pack_into(">I", header, V2_CRC_OFFSET, crc)
    return bytes(header) + records
