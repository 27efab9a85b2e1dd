"""The record screen in pure Python: the reference the compiled screen (``kafka_audit.record.
_record_screen``, C) is held to by the differential tests (tests/test_default_record.py,
test_properties.py, test_quick_path.py). Not part of the product: the audit runs the compiled one
(:mod:`kafka_audit.record.record_screen`)."""

from __future__ import annotations

from kafka_audit.record.batch_records import v2_records_data
from kafka_audit.record.compression import DecompressionError
from kafka_audit.record.default_record import (
    MAX_VARINT_BYTES,
    MAX_VARLONG_BYTES,
    MIN_HEADER_BYTES,
    TWO_BYTE_VARINT_VALUES,
    MalformedRecord,
    decode_records,
    read_varint,
)
from kafka_audit.record.record_batch import RecordBatch
from kafka_audit.record.record_screen import RecordScreen

# The zig-zag value of every varint of one or two bytes, indexed by its 14 payload bits
# ``(b0 & 0x7F) | (b1 << 7)`` (a one-byte varint is its own index). In CPython one tuple lookup
# is cheaper than the shift, and, negate and xor of a zig-zag decode; :func:`screen_records`
# reads every length, delta and size of a batch through it.
_ZIGZAG = tuple((raw >> 1) ^ -(raw & 1) for raw in range(TWO_BYTE_VARINT_VALUES))



def screen_records_py(data: bytes, base_timestamp: int, record_count: int, screen: RecordScreen) -> bool:
    """True when the v2 records in ``data`` are well-formed and all pass ``screen``.

    The audit's fast path, for the common batch with nothing to report. True means exactly what
    :func:`decode_records` would confirm at a much higher cost: ``record_count`` records read
    without error, no byte left over, and every record passing the screen. It builds no
    :class:`Record`, copies no key or value, and reads varints of one or two bytes (every
    length, delta and size below 8 KiB) through a table lookup instead of a call. False means
    "look closer": the caller decodes the batch with :func:`decode_records`, which says what is
    wrong in Kafka's words, so this function only has to reject, never to explain. It never raises.

    Bounds are checked lazily: a key, value or header that runs past its record's end is not
    caught where it happens but by ``pos != record_end`` at the end of the record, since ``pos``
    only moves forward (a size is never negative here and every varint takes a byte at least);
    reads past the end of ``data`` raise IndexError, which rejects.
    """
    if record_count < 0:
        return False
    zigzag = _ZIGZAG
    require_key = screen.require_key
    low = screen.min_timestamp
    high = screen.max_timestamp
    check_time = low is not None or high is not None
    end = len(data)
    pos = 0
    try:
        for index in range(record_count):
            # Each varint: one byte, two bytes (both inline), or read_varint for longer ones.
            b = data[pos]
            if b < 0x80:
                length = zigzag[b]
                pos += 1
            elif (b1 := data[pos + 1]) < 0x80:
                length = zigzag[(b & 0x7F) | (b1 << 7)]
                pos += 2
            else:
                length, pos = read_varint(data, pos, MAX_VARINT_BYTES)
            record_end = pos + length
            if length <= 0 or record_end > end:
                return False
            pos += 1  # attributes: no rule reads a v2 record's attributes
            b = data[pos]
            if b < 0x80:
                timestamp_delta = zigzag[b]
                pos += 1
            elif (b1 := data[pos + 1]) < 0x80:
                timestamp_delta = zigzag[(b & 0x7F) | (b1 << 7)]
                pos += 2
            else:
                timestamp_delta, pos = read_varint(data, pos, MAX_VARLONG_BYTES)
            if check_time:
                timestamp = base_timestamp + timestamp_delta
                if (low is not None and timestamp < low) or (high is not None and timestamp > high):
                    return False
            b = data[pos]
            if b < 0x80:
                offset_delta = zigzag[b]
                pos += 1
            elif (b1 := data[pos + 1]) < 0x80:
                offset_delta = zigzag[(b & 0x7F) | (b1 << 7)]
                pos += 2
            else:
                offset_delta, pos = read_varint(data, pos, MAX_VARINT_BYTES)
            if offset_delta != index:
                return False
            b = data[pos]
            if b < 0x80:
                key_size = zigzag[b]
                pos += 1
            elif (b1 := data[pos + 1]) < 0x80:
                key_size = zigzag[(b & 0x7F) | (b1 << 7)]
                pos += 2
            else:
                key_size, pos = read_varint(data, pos, MAX_VARINT_BYTES)
            if key_size >= 0:
                pos += key_size
            elif key_size != -1 or require_key:
                return False
            b = data[pos]
            if b < 0x80:
                value_size = zigzag[b]
                pos += 1
            elif (b1 := data[pos + 1]) < 0x80:
                value_size = zigzag[(b & 0x7F) | (b1 << 7)]
                pos += 2
            else:
                value_size, pos = read_varint(data, pos, MAX_VARINT_BYTES)
            if value_size >= 0:
                pos += value_size
            elif value_size != -1:
                return False
            b = data[pos]
            if b == 0:  # no headers, the common case
                pos += 1
            else:
                if b < 0x80:
                    header_count = zigzag[b]
                    pos += 1
                else:
                    header_count, pos = read_varint(data, pos, MAX_VARINT_BYTES)
                if header_count < 0 or MIN_HEADER_BYTES * header_count > record_end - pos:
                    return False
                for _ in range(header_count):
                    b = data[pos]
                    if b < 0x80:
                        header_key_size = zigzag[b]
                        pos += 1
                    else:
                        header_key_size, pos = read_varint(data, pos, MAX_VARINT_BYTES)
                    if header_key_size < 0:
                        return False
                    pos += header_key_size
                    b = data[pos]
                    if b < 0x80:
                        header_value_size = zigzag[b]
                        pos += 1
                    else:
                        header_value_size, pos = read_varint(data, pos, MAX_VARINT_BYTES)
                    if header_value_size >= 0:
                        pos += header_value_size
                    elif header_value_size != -1:
                        return False
            if pos != record_end:
                return False
    except (MalformedRecord, IndexError):
        return False
    return pos == end


def screen_payload_py(buf, batch: RecordBatch, screen: RecordScreen, want_record: bool = False):
    """True when the v2 batch's payload decompresses (:func:`v2_records_data`) and its records
    pass ``screen`` (:func:`screen_records_py`), else False. With ``want_record``, a batch of one
    record that passes answers its ``(key, value)`` instead of True (a control batch's record)."""
    try:
        data = v2_records_data(buf, batch)
    except DecompressionError:
        return False
    count = batch.record_count or 0
    if not screen_records_py(data, batch.base_timestamp, count, screen):
        return False
    if want_record and count == 1:
        record = decode_records(bytes(data), batch.base_offset, batch.base_timestamp, 1, None).records[0]
        return record.key, record.value
    return True
