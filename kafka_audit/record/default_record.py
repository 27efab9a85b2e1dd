"""Magic v2 records: the zig-zag varint layout of ``org.apache.kafka.common.record.DefaultRecord``.

A record is ``length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
keyLength varint, key, valueLength varint, value, headerCount varint, headers`` where each
header is ``keyLength varint, key (UTF-8), valueLength varint, value``. A length of -1 is null.

The audit reads most batches' records with the compiled screen (record_screen); this decoder
reads the rest, the records ``dump`` prints, and explains a batch the screen refuses. It only
copies keys, values and headers when asked to (``with_data``). Malformed input never
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
    if record_count < 0:
        return DecodedRecords(records, f"Found invalid record count {record_count} in magic v2 batch", 0)
    try:
        for index in range(record_count):
            if pos >= end:
                return DecodedRecords(
                    records,
                    "Incorrect declared batch size, premature EOF reached: the header counts "
                    f"{record_count} records, {index} are present",
                    index,
                )
            record, pos = _read_record(data, pos, index, base_offset, base_timestamp, log_append_time, with_data)
            append(record)
    except (MalformedRecord, IndexError) as exc:
        reason = str(exc) if isinstance(exc, MalformedRecord) else "Record data ends in the middle of a record"
        return DecodedRecords(records, reason, len(records))
    if pos != end:
        return DecodedRecords(
            records,
            f"Incorrect declared batch size, records still remaining in file: {end - pos} bytes "
            f"after the {record_count} records the header counts",
            len(records),
        )
    return DecodedRecords(records)


def _read_record(
    data: bytes, pos: int, index: int, base_offset: int, base_timestamp: int, log_append_time: int | None,
    with_data: bool,
) -> tuple[Record, int]:
    """DefaultRecord.readFrom: the record at ``pos`` and the position after it. Raises
    MalformedRecord in DefaultRecord's words, or IndexError where the data ends inside a field."""
    end = len(data)
    length, pos = _field_varint(data, pos, MAX_VARINT_BYTES)
    start = pos
    record_end = pos + length
    if length <= 0 or record_end > end:
        raise MalformedRecord(
            f"Invalid record size: expected {length} bytes in record payload, but instead the "
            f"buffer has only {end - start} remaining bytes."
        )
    attributes = data[pos]
    timestamp_delta, pos = _field_varint(data, pos + 1, MAX_VARLONG_BYTES)
    offset_delta, pos = _field_varint(data, pos, MAX_VARINT_BYTES)
    key_size, key, pos = _nullable_bytes(data, pos, record_end, with_data, "key")
    value_size, value, pos = _nullable_bytes(data, pos, record_end, with_data, "value")
    header_count, pos = _field_varint(data, pos, MAX_VARINT_BYTES)
    headers: tuple[Header, ...] = ()
    if header_count:
        if header_count < 0 or MIN_HEADER_BYTES * header_count > record_end - pos:
            raise MalformedRecord(f"Found invalid number of record headers {header_count}")
        pos, headers = _read_headers(data, pos, record_end, header_count, with_data)
    if pos != record_end:
        raise MalformedRecord(
            f"Invalid record size: expected to read {length} bytes in record payload, but instead read {pos - start}"
        )
    timestamp = log_append_time if log_append_time is not None else base_timestamp + timestamp_delta
    record = Record(
        index, base_offset + offset_delta, offset_delta, timestamp, key_size, value_size, key, value,
        headers, header_count, MAGIC_VALUE_V2, attributes,
    )
    return record, pos


def _field_varint(data: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    """A record field's varint (:func:`read_varint`), its one- and two-byte cases (sizes and
    deltas below 8192, the common ones) read here. A field that starts past the end raises
    IndexError, which :func:`decode_records` reports as a record cut short."""
    b = data[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    if pos + 1 < len(data) and data[pos + 1] < 0x80:
        raw = (b & 0x7F) | (data[pos + 1] << 7)
        return (raw >> 1) ^ -(raw & 1), pos + 2
    return read_varint(data, pos, max_bytes)


def _nullable_bytes(data: bytes, pos: int, record_end: int, with_data: bool, what: str) -> tuple[int, bytes | None, int]:
    """DefaultRecord's key or value: a varint length, -1 for null, then that many bytes inside the
    record. Returns (length, the bytes when ``with_data``, next position)."""
    size, pos = _field_varint(data, pos, MAX_VARINT_BYTES)
    if size >= 0:
        if pos + size > record_end:
            raise MalformedRecord(f"Invalid {what} size {size}: past the end of the record")
        return size, data[pos : pos + size] if with_data else None, pos + size
    if size != -1:
        raise MalformedRecord(f"Invalid negative {what} size {size}")
    return size, None, pos


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
