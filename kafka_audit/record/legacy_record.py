"""Message formats v0 and v1: ``org.apache.kafka.common.record.LegacyRecord`` and
``AbstractLegacyRecordBatch``.

A legacy message is ``offset i64, size i32, crc u32, magic i8, attributes i8, [timestamp i64
(v1)], keyLength i32, key, valueLength i32, value`` with the CRC-32 over ``magic..end``. A
compressed wrapper message carries, as its value, a compressed message set of inner messages.
v1 inner offsets are relative (0..n-1) and the wrapper's offset is the absolute offset of the
last inner message; v0 inner offsets are absolute (AbstractLegacyRecordBatch.DeepRecordsIterator).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field, replace

from kafka_audit.check_ids import CheckId
from kafka_audit.record.byte_stream import Buffer
from kafka_audit.record.compression import DecompressionError, TooLarge, compress, decompress
from kafka_audit.record.problem import Problem
from kafka_audit.record.record_batch import (
    COMPRESSION_CODEC_MASK,
    LEGACY_RECORD_OVERHEAD_V0,
    LEGACY_RECORD_OVERHEAD_V1,
    LOG_OVERHEAD,
    MAGIC_VALUE_V0,
    MAGIC_VALUE_V1,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    CompressionType,
    Record,
    RecordBatch,
)

# The v0/v1 message layout (LegacyRecord): offset and size, crc, magic and attributes, the v1
# timestamp, a key or value length; the streamed walker (stream_legacy) reads by the same.
OFFSET_SIZE = struct.Struct(">qi")
CRC_MAGIC_ATTRIBUTES = struct.Struct(">IbB")
TIMESTAMP = struct.Struct(">q")
LENGTH = struct.Struct(">i")
_CRC = struct.Struct(">I")
_NULL_LENGTH = LENGTH.pack(-1)


def record_overhead(magic: int) -> int:
    """LegacyRecord.recordOverhead: crc, magic, attributes, [timestamp], key and value lengths."""
    return LEGACY_RECORD_OVERHEAD_V0 if magic == MAGIC_VALUE_V0 else LEGACY_RECORD_OVERHEAD_V1


@dataclass(slots=True)
class LegacyMessage:
    """The fields of one v0/v1 message, with key/value as (start, end) spans into its buffer."""

    offset: int
    size: int
    crc: int
    crc_valid: bool
    magic: int
    attributes: int
    timestamp: int
    key_span: tuple[int, int] | None
    value_span: tuple[int, int] | None


def message_header(buf: Buffer, at: int, size: int) -> tuple[int, int, int, int, int] | str:
    """LegacyRecord's crc, magic, attributes and (v1) timestamp at ``at`` (after the log
    overhead), and the bytes they take; or the sentence for a ``size`` below the record overhead
    (LegacyRecord.recordOverhead)."""
    crc, magic, attributes = CRC_MAGIC_ATTRIBUTES.unpack_from(buf, at)
    overhead = record_overhead(magic)
    if size < overhead:
        return f"Message size {size} is less than the minimum record overhead ({overhead})"
    if magic != MAGIC_VALUE_V1:
        return crc, magic, attributes, NO_TIMESTAMP, 6
    (timestamp,) = TIMESTAMP.unpack_from(buf, at + 6)
    return crc, magic, attributes, timestamp, 6 + 8


def parse_message(buf: Buffer, pos: int, end: int) -> LegacyMessage | str:
    """Parse the message starting at ``pos`` (its offset field) in ``buf[:end]``.

    Returns the message, or a sentence saying why its framing is unreadable. The caller has
    checked that 12 bytes of log overhead fit and that ``size`` does not run past ``end``.
    """
    offset, size = OFFSET_SIZE.unpack_from(buf, pos)
    body = pos + LOG_OVERHEAD
    body_end = body + size
    if body + 6 > end:
        return f"Message at position {pos} is truncated inside its header"
    header = message_header(buf, body, size)
    if isinstance(header, str):
        return header
    crc, magic, attributes, timestamp, header_size = header
    cursor = body + header_size
    key_span, cursor = _read_bytes(buf, cursor, body_end)
    if isinstance(key_span, str):
        return "key " + key_span
    value_span, cursor = _read_bytes(buf, cursor, body_end)
    if isinstance(value_span, str):
        return "value " + value_span
    if cursor != body_end:
        return f"Message size {size} does not match its key and value lengths ({cursor - body} bytes)"
    crc_valid = zlib.crc32(buf[body + 4 : body_end]) == crc
    return LegacyMessage(offset, size, crc, crc_valid, magic, attributes, timestamp, key_span, value_span)


def _read_bytes(buf: Buffer, cursor: int, limit: int) -> tuple[tuple[int, int] | None | str, int]:
    """A length-prefixed (i32, -1 = null) byte field within ``limit``; a str says what is wrong."""
    if cursor + 4 > limit:
        return "length runs past the end of the message", cursor
    (length,) = LENGTH.unpack_from(buf, cursor)
    cursor += 4
    if length == -1:
        return None, cursor
    if length < 0 or cursor + length > limit:
        return f"length {length} runs past the end of the message", cursor
    return (cursor, cursor + length), cursor + length


def batch_from_message(message: LegacyMessage, position: int) -> RecordBatch:
    """The batch view of a top-level message (AbstractLegacyRecordBatch)."""
    compressed = message.attributes & COMPRESSION_CODEC_MASK != 0
    return RecordBatch(
        position=position,
        base_offset=message.offset,
        last_offset=message.offset,
        magic=message.magic,
        size=message.size + LOG_OVERHEAD,
        stored_crc=message.crc,
        crc_valid=message.crc_valid,
        attributes=message.attributes,
        record_count=None if compressed else 1,
        base_timestamp=message.timestamp,
        max_timestamp=message.timestamp,
    )


@dataclass(slots=True)
class LegacyRecords:
    """The inner records of one top-level message, and the problems met decoding them.

    ``batch`` is the message's batch view as its inner set describes it: for a decoded wrapper
    its base offset is the first inner offset and its record count the inner count
    (AbstractLegacyRecordBatch.baseOffset / countOrNull); otherwise the batch as given.
    """

    records: list[Record]
    problems: list[Problem] = field(default_factory=list)
    batch: RecordBatch | None = None


def decode_legacy_batch(
    buf: Buffer, batch: RecordBatch, with_data: bool, max_decompressed: int, bound: int | None = None
) -> LegacyRecords:
    """Decode the records of a top-level v0/v1 message.

    A lone message is its own single record. A wrapper's value is decompressed (at most
    ``max_decompressed`` bytes) and its inner messages read; absolute offsets follow
    AbstractLegacyRecordBatch: v1 ``wrapperOffset - lastInnerRelativeOffset + innerOffset``,
    v0 the stored offsets. ``batch`` is left as it is; the result's ``batch`` is a copy with
    the base offset and record count of the inner set. Inner messages under a LOG_APPEND_TIME
    v1 wrapper take the wrapper's timestamp. A payload that inflates past ``bound`` (below the
    cap) raises :class:`TooLarge`: the caller reads it as a stream.
    """
    position = batch.position
    message = parse_message(buf, position, position + batch.size)
    assert not isinstance(message, str), "decode_legacy_batch needs a batch from the reader"
    if batch.codec == CompressionType.NONE:
        return LegacyRecords([_record(buf, message, 0, message.offset, with_data)], batch=batch)

    problems: list[Problem] = []
    if message.value_span is None:
        problems.append(
            Problem(CheckId.DECOMPRESSION_FAILED, position, "Found invalid compressed record set with null value")
        )
        return LegacyRecords([], problems, batch)
    start, stop = message.value_span
    limit = max_decompressed if bound is None else min(bound, max_decompressed)
    try:
        inner = decompress(batch.codec, buf[start:stop], batch.magic, limit)
    except DecompressionError as exc:
        if isinstance(exc, TooLarge) and limit < max_decompressed:
            raise
        problems.append(Problem(CheckId.DECOMPRESSION_FAILED, position, str(exc), details={"codec": batch.compression}))
        return LegacyRecords([], problems, batch)

    inner_messages = _inner_messages(inner, position, problems)
    if not inner_messages:
        if not problems:
            problems.append(Problem(CheckId.DECOMPRESSION_FAILED, position, "Compressed message set holds no message"))
        return LegacyRecords([], problems, batch)
    records = _inner_records(inner, inner_messages, message, batch, with_data, problems)
    return LegacyRecords(records, problems, replace(batch, base_offset=records[0].offset, record_count=len(records)))


def _inner_messages(inner: bytes, position: int, problems: list[Problem]) -> list[LegacyMessage]:
    """A wrapper's inner message set (decompressed), read up to the first message whose framing
    breaks (its problem added to ``problems``), as AbstractLegacyRecordBatch's iterator stops."""
    inner_messages: list[LegacyMessage] = []
    pos = 0
    end = len(inner)
    while pos < end:
        index = len(inner_messages)
        if end - pos < LOG_OVERHEAD:
            problems.append(_inner_truncated(position, index, end - pos))
            break
        _, size = OFFSET_SIZE.unpack_from(inner, pos)
        if size < LEGACY_RECORD_OVERHEAD_V0 or pos + LOG_OVERHEAD + size > end:
            problems.append(_inner_truncated(position, index, end - pos))
            break
        parsed = parse_message(inner, pos, pos + LOG_OVERHEAD + size)
        if isinstance(parsed, str):
            problems.append(
                Problem(CheckId.TRUNCATED_BATCH, position, f"Inner message {index}: {parsed}", record_index=index)
            )
            break
        inner_messages.append(parsed)
        pos += LOG_OVERHEAD + size
    return inner_messages


def _inner_records(
    inner: bytes,
    inner_messages: list[LegacyMessage],
    wrapper: LegacyMessage,
    batch: RecordBatch,
    with_data: bool,
    problems: list[Problem],
) -> list[Record]:
    """The records of a wrapper's inner messages at their absolute offsets (v1: ``wrapperOffset -
    lastInnerRelativeOffset + innerOffset``, v0: as stored), a LOG_APPEND_TIME v1 wrapper's
    timestamp on each; an inner message with a bad CRC adds its ``crc_mismatch`` to ``problems``."""
    absolute_base = wrapper.offset - inner_messages[-1].offset if batch.magic == MAGIC_VALUE_V1 else 0
    log_append_time = batch.magic == MAGIC_VALUE_V1 and bool(batch.attributes & TIMESTAMP_TYPE_MASK)
    records = []
    for index, inner_message in enumerate(inner_messages):
        offset = absolute_base + inner_message.offset
        record = _record(inner, inner_message, index, offset, with_data)
        if log_append_time:
            record.timestamp = wrapper.timestamp
        records.append(record)
        if not inner_message.crc_valid:
            problems.append(
                Problem(
                    CheckId.CRC_MISMATCH,
                    batch.position,
                    f"Record is corrupt (stored crc = {inner_message.crc}) in inner message {index}",
                    record_index=index,
                    offset=offset,
                )
            )
    return records


def _record(buf: Buffer, message: LegacyMessage, index: int, offset: int, with_data: bool) -> Record:
    key_size = -1 if message.key_span is None else message.key_span[1] - message.key_span[0]
    value_size = -1 if message.value_span is None else message.value_span[1] - message.value_span[0]
    key = value = None
    if with_data:
        if message.key_span is not None:
            key = bytes(buf[message.key_span[0] : message.key_span[1]])
        if message.value_span is not None:
            value = bytes(buf[message.value_span[0] : message.value_span[1]])
    return Record(
        index=index,
        offset=offset,
        stored_offset=message.offset,
        timestamp=message.timestamp,
        key_size=key_size,
        value_size=value_size,
        key=key,
        value=value,
        magic=message.magic,
        attributes=message.attributes,
        crc_valid=message.crc_valid,
    )


def encode_message(
    offset: int, magic: int, attributes: int, timestamp: int | None, key: bytes | None, value: bytes | None
) -> bytes:
    """LegacyRecord.write after the log overhead: offset, size, crc (CRC-32 of magic..end), magic,
    attributes, [timestamp (v1; None is NO_TIMESTAMP)], key, value (length -1 for null)."""
    parts = [bytes((magic & 0xFF, attributes & 0xFF))]
    if magic >= MAGIC_VALUE_V1:
        parts.append(TIMESTAMP.pack(NO_TIMESTAMP if timestamp is None else timestamp))
    for data in (key, value):
        parts.append(_NULL_LENGTH if data is None else LENGTH.pack(len(data)) + data)
    body = b"".join(parts)
    return OFFSET_SIZE.pack(offset, 4 + len(body)) + _CRC.pack(zlib.crc32(body)) + body


def encode_wrapper(offset: int, magic: int, attributes: int, timestamp: int | None, inner: bytes, codec: int) -> bytes:
    """A compressed wrapper message: ``inner`` (a message set) compressed with ``codec`` as the
    value of one keyless message at ``offset`` (v1: the last inner offset; AbstractLegacyRecordBatch).
    ``attributes`` carries the codec bits as they are to be written."""
    return encode_message(offset, magic, attributes, timestamp, None, compress(codec, inner, magic))


def _inner_truncated(position: int, index: int, remaining: int) -> Problem:
    return Problem(
        CheckId.TRUNCATED_BATCH,
        position,
        f"Compressed message set ends inside inner message {index} ({remaining} bytes left)",
        record_index=index,
    )
