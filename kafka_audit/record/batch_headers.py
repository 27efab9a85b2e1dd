"""A batch's header read where the segment walk finds it (``DefaultRecordBatch`` /
``LegacyRecord``, as ``FileLogInputStream.nextBatch`` reads them): a v2 batch's header and CRC-32C
in one buffer, or by ranged reads for a batch too large for one, and a v0/v1 message likewise."""

from __future__ import annotations

import zlib

import crc32c

from kafka_audit.record.byte_stream import Buffer, ReadRange, stream_checksum
from kafka_audit.record.legacy_record import LegacyMessage
from kafka_audit.record.record_batch import (
    LOG_OVERHEAD,
    V2_ATTRIBUTES_OFFSET,
    V2_HEADER,
    V2_RECORD_BATCH_OVERHEAD,
    RecordBatch,
)
from kafka_audit.record.stream_legacy import read_message_header


def large_batch(buf: Buffer, pos: int, size: int, read_range: ReadRange | None) -> RecordBatch:
    """:func:`v2_batch` of a batch too large for one buffer: its header from ``buf``, its CRC
    by ranged reads (``read_range``: given, as the walk's ``large`` says), never the whole batch
    in memory."""
    assert read_range is not None
    header = bytes(memoryview(buf)[pos : pos + V2_RECORD_BATCH_OVERHEAD])
    batch = v2_batch(header, 0, V2_RECORD_BATCH_OVERHEAD - LOG_OVERHEAD)
    batch.position, batch.size = pos, LOG_OVERHEAD + size
    crc = stream_checksum(read_range, pos + V2_ATTRIBUTES_OFFSET, pos + LOG_OVERHEAD + size, crc32c.crc32c)
    batch.crc_valid = crc == batch.stored_crc
    return batch


def large_message(read_range: ReadRange | None, pos: int, entry_size: int) -> LegacyMessage | str:
    """parse_message of a v0/v1 message too large for one buffer: its fields by ranged reads
    (``read_range``: given, as the walk's ``large`` says), its CRC-32 (magic..end) as a stream."""
    assert read_range is not None
    message = read_message_header(read_range, pos, pos + entry_size)
    if not isinstance(message, str):
        crc = stream_checksum(read_range, pos + LOG_OVERHEAD + 4, pos + entry_size, zlib.crc32)
        message.crc_valid = crc == message.crc
    return message


def v2_batch(buf: Buffer, pos: int, size: int) -> RecordBatch:
    (
        base_offset,
        _,
        leader_epoch,
        magic,
        crc,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    ) = V2_HEADER.unpack_from(buf, pos)
    end = pos + LOG_OVERHEAD + size
    crc_valid = crc32c.crc32c(memoryview(buf)[pos + V2_ATTRIBUTES_OFFSET : end]) == crc
    # Positional, in RecordBatch's field order: keyword arguments made this call a sixth of the
    # batch walk's time (tests/test_file_records.py checks the order).
    return RecordBatch(
        pos,  # position
        base_offset,
        base_offset + last_offset_delta,  # last_offset
        magic,
        LOG_OVERHEAD + size,  # size
        crc,  # stored_crc
        crc_valid,
        attributes & 0xFFFF,  # attributes
        record_count,
        leader_epoch,  # partition_leader_epoch
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
    )
