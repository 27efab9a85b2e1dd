"""Magic v2 records: the zig-zag varint layout of ``org.apache.kafka.common.record.DefaultRecord``.

A record is ``length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
keyLength varint, key, valueLength varint, value, headerCount varint, headers`` where each
header is ``keyLength varint, key (UTF-8), valueLength varint, value``. A length of -1 is null.

Decoding is the hot path of an audit, so the loop below inlines the one-byte varint case and
only copies keys, values and headers when asked to (``with_data``). Malformed input never
raises: decoding stops at the first record that cannot be read and says why, with the
record's index (KIP-467), in DefaultRecord's own wording.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kafka_audit.errors import KafkaAuditError
from kafka_audit.record.record_batch import MAGIC_VALUE_V2, Header, Record

# The record grammar's varint widths, here for the decoder and the encoder, and compiled into
# the C screen (setup.py reads them from this file): ByteUtils.readVarint reads
# at most 5 bytes, readVarlong at most 10.
MAX_VARINT_BYTES = 5
MAX_VARLONG_BYTES = 10
# The fewest bytes a header takes (a key length and a value length of one byte each): a bound
# that stops an absurd header count at once.
MIN_HEADER_BYTES = 2
# A varint of one or two bytes carries 7 or 14 payload bits: the values the tables below hold.
TWO_BYTE_VARINT_VALUES = 1 << 14

# ByteUtils.writeVarlong of the zig-zag values of one and two bytes, built once: an encoder
# writes such lengths and deltas for almost every field.
def _raw_varint(raw: int) -> bytes:
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


_VARINT_BYTES = tuple(_raw_varint(raw) for raw in range(TWO_BYTE_VARINT_VALUES))
_MASK64 = (1 << 64) - 1


def encode_varint(value: int) -> bytes:
    """ByteUtils.writeVarlong: the zig-zag varint of ``value`` (a varint field writes the same bytes)."""
    raw = ((value << 1) ^ (value >> 63)) & _MASK64
    if raw < TWO_BYTE_VARINT_VALUES:
        return _VARINT_BYTES[raw]
    return _raw_varint(raw)


def _encode_bytes(data: bytes | None) -> bytes:
    """A varint length and the bytes, or the length -1 for null."""
    return b"\x01" if data is None else encode_varint(len(data)) + data


def encode_record(
    attributes: int,
    timestamp_delta: int,
    offset_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Iterable[tuple[str | bytes, bytes | None]] = (),
) -> bytes:
    """DefaultRecord.writeTo: one record, length first; header keys given as str are UTF-8."""
    headers = tuple(headers)
    parts = [
        bytes((attributes & 0xFF,)),
        encode_varint(timestamp_delta),
        encode_varint(offset_delta),
        _encode_bytes(key),
        _encode_bytes(value),
        encode_varint(len(headers)),
    ]
    for header_key, header_value in headers:
        parts.append(_encode_bytes(header_key.encode() if isinstance(header_key, str) else header_key))
        parts.append(_encode_bytes(header_value))
    body = b"".join(parts)
    return encode_varint(len(body)) + body


class MalformedRecord(KafkaAuditError):
    """Internal signal that the bytes of one record cannot be decoded; never leaves this package."""


def read_varint(data: bytes | memoryview, pos: int, max_bytes: int = MAX_VARLONG_BYTES) -> tuple[int, int]:
    """ByteUtils.readVarlong: a zig-zag varint at ``pos``; returns (value, next position).

    At most ``max_bytes`` bytes are read, so a varint that never ends cannot hang the reader.
    """
    raw = 0
    shift = 0
    # ByteUtils shifts the last byte into a Java int (readVarint, 5 bytes) or long (readVarlong,
    # 10 bytes): its bits past 32 / 64 are lost, so the value always fits the field's type.
    mask = 0xFFFFFFFF if max_bytes <= MAX_VARINT_BYTES else 0xFFFFFFFFFFFFFFFF
    for at in range(pos, min(len(data), pos + max_bytes)):
        b = data[at]
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            raw &= mask
            return (raw >> 1) ^ -(raw & 1), at + 1
        shift += 7
    if shift >= 7 * max_bytes:
        raise MalformedRecord(f"Varint is too long, the most significant bit in byte {max_bytes} is set")
    raise MalformedRecord("Varint runs past the end of the record data")


@dataclass(slots=True)
class DecodedRecords:
    """The records decoded from one batch, and why decoding stopped early (if it did).

    ``error`` is a DefaultRecord/DefaultRecordBatch sentence; ``error_index`` is the index of
    the record that could not be read, or of the first surplus one.
    """

    records: list[Record]
    error: str | None = None
    error_index: int | None = None


# Over 60 lines on purpose: the hot decoding loop with DefaultRecord's fields and one-byte varints
# inline (a call per field would double its cost; bench/run.py measures it).
def decode_records(
    data: bytes,
    base_offset: int,
    base_timestamp: int,
    record_count: int,
    log_append_time: int | None,
    with_data: bool = True,
) -> DecodedRecords:
    """Decode ``record_count`` v2 records from ``data`` (the batch's records, decompressed).

    ``log_append_time`` is the batch's max timestamp when the batch has LOG_APPEND_TIME, in
    which case every record reports it (DefaultRecordBatch: records inherit the batch's
    timestamp). Bytes left over after ``record_count`` records are an error, as in
    DefaultRecordBatch's iterator ("Incorrect declared batch size, records still remaining").
    """
    records: list[Record] = []
    append = records.append
    end = len(data)
    pos = 0
    index = 0
    if record_count < 0:
        return DecodedRecords(records, f"Found invalid record count {record_count} in magic v2 batch", 0)
    try:
        while index < record_count:
            if pos >= end:
                return DecodedRecords(
                    records,
                    "Incorrect declared batch size, premature EOF reached: the header counts "
                    f"{record_count} records, {index} are present",
                    index,
                )
            # Each field: one-byte varints (the common case) inline, longer ones via read_varint.
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                length, pos = read_varint(data, pos, MAX_VARINT_BYTES)
            start = pos
            record_end = pos + length
            if length <= 0 or record_end > end:
                raise MalformedRecord(
                    f"Invalid record size: expected {length} bytes in record payload, but instead the "
                    f"buffer has only {end - start} remaining bytes."
                )
            attributes = data[pos]
            pos += 1
            b = data[pos]
            if b < 0x80:
                timestamp_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                timestamp_delta, pos = read_varint(data, pos, MAX_VARLONG_BYTES)
            b = data[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                offset_delta, pos = read_varint(data, pos, MAX_VARINT_BYTES)
            b = data[pos]
            if b < 0x80:
                key_size = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                key_size, pos = read_varint(data, pos, MAX_VARINT_BYTES)
            key = None
            if key_size >= 0:
                if pos + key_size > record_end:
                    raise MalformedRecord(f"Invalid key size {key_size}: past the end of the record")
                if with_data:
                    key = data[pos : pos + key_size]
                pos += key_size
            elif key_size != -1:
                raise MalformedRecord(f"Invalid negative key size {key_size}")
            b = data[pos]
            if b < 0x80:
                value_size = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                value_size, pos = read_varint(data, pos, MAX_VARINT_BYTES)
            value = None
            if value_size >= 0:
                if pos + value_size > record_end:
                    raise MalformedRecord(f"Invalid value size {value_size}: past the end of the record")
                if with_data:
                    value = data[pos : pos + value_size]
                pos += value_size
            elif value_size != -1:
                raise MalformedRecord(f"Invalid negative value size {value_size}")
            b = data[pos]
            if b < 0x80:
                header_count = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                header_count, pos = read_varint(data, pos, MAX_VARINT_BYTES)
            headers: tuple[Header, ...] = ()
            if header_count:
                if header_count < 0 or MIN_HEADER_BYTES * header_count > record_end - pos:
                    raise MalformedRecord(f"Found invalid number of record headers {header_count}")
                pos, headers = _read_headers(data, pos, record_end, header_count, with_data)
            if pos != record_end:
                raise MalformedRecord(
                    f"Invalid record size: expected to read {length} bytes in record payload, "
                    f"but instead read {pos - start}"
                )
            timestamp = log_append_time if log_append_time is not None else base_timestamp + timestamp_delta
            record = Record(
                index,
                base_offset + offset_delta,
                offset_delta,
                timestamp,
                key_size,
                value_size,
                key,
                value,
                headers,
                header_count,
                MAGIC_VALUE_V2,
                attributes,
            )
            append(record)
            index += 1
    except (MalformedRecord, IndexError) as exc:
        reason = str(exc) if isinstance(exc, MalformedRecord) else "Record data ends in the middle of a record"
        return DecodedRecords(records, reason, index)
    if pos != end:
        return DecodedRecords(
            records,
            f"Incorrect declared batch size, records still remaining in file: {end - pos} bytes "
            f"after the {record_count} records the header counts",
            index,
        )
    return DecodedRecords(records)


def _read_headers(
    data: bytes, pos: int, record_end: int, count: int, with_data: bool
) -> tuple[int, tuple[Header, ...]]:
    """DefaultRecord.readHeaders: ``count`` (key, value) pairs; a null header key is invalid."""
    headers = []
    for _ in range(count):
        key_size, pos = read_varint(data, pos, MAX_VARINT_BYTES)
        if key_size < 0:
            raise MalformedRecord(f"Invalid negative header key size {key_size}")
        if pos + key_size > record_end:
            raise MalformedRecord(f"Invalid header key size {key_size}: past the end of the record")
        key_bytes = data[pos : pos + key_size]
        pos += key_size
        value_size, pos = read_varint(data, pos, MAX_VARINT_BYTES)
        value = None
        if value_size >= 0:
            if pos + value_size > record_end:
                raise MalformedRecord(f"Invalid header value size {value_size}: past the end of the record")
            value = data[pos : pos + value_size]
            pos += value_size
        elif value_size != -1:
            raise MalformedRecord(f"Invalid negative header value size {value_size}")
        if with_data:
            headers.append(Header(key_bytes.decode("utf-8", errors="replace"), value))
    return pos, tuple(headers)
