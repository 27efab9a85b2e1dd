"""A v0/v1 wrapper's inner message set walked as a stream (``AbstractLegacyRecordBatch``'s
``DeepRecordsIterator`` reading ``LegacyRecord``s from the codec's ``InputStream``), for a wrapper
too large for one buffer (:data:`~kafka_audit.record.byte_stream.STREAM_BOUND`).

Each inner message's CRC-32 is computed as its bytes go by; keys and values are kept only as
bounded prefixes. The offsets need the last inner offset (v1) or the count (v0) first, so the
set is walked twice: once to count and check, once to hand the records on. The sentences are
those of :func:`kafka_audit.record.legacy_record.decode_legacy_batch`.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from kafka_audit.check_ids import CheckId
from kafka_audit.record.byte_stream import ByteStream, StreamEnded
from kafka_audit.record.legacy_record import (
    CRC_MAGIC_ATTRIBUTES,
    LENGTH,
    OFFSET_SIZE,
    TIMESTAMP,
    LegacyMessage,
    message_header,
    record_overhead,
)
from kafka_audit.record.problem import Problem
from kafka_audit.record.record_batch import (
    LEGACY_RECORD_OVERHEAD_V0,
    LOG_OVERHEAD,
    MAGIC_VALUE_V1,
    NO_TIMESTAMP,
    Record,
)
from kafka_audit.record.stream_records import RecordStream

# Inner messages with a bad CRC listed as problems per batch; the rest are counted (``omitted``).
MAX_LISTED_PROBLEMS = 1000


class _Crc:
    """CRC-32 (LegacyRecord: over magic..end) fed as the bytes go by."""

    def __init__(self) -> None:
        self.value = 0

    def __call__(self, chunk: bytes | memoryview) -> None:
        self.value = zlib.crc32(chunk, self.value)


@dataclass(slots=True)
class InnerSet:
    """What the first pass learns: how many inner messages, their first and last stored offset,
    the problems met (truncation first, then bad CRCs) and the bad CRCs beyond the listed ones."""

    count: int = 0
    first_offset: int = 0
    last_offset: int = 0
    problems: list[Problem] = field(default_factory=list)
    omitted: Counter[str] = field(default_factory=Counter)
    bad_crcs: list[tuple[int, int, int]] = field(default_factory=list)  # (index, stored offset, stored crc)

    def crc_problems(self, position: int, absolute_base: int) -> list[Problem]:
        """The listed bad CRCs as decode_legacy_batch words them, at their absolute offsets."""
        return [
            Problem(CheckId.CRC_MISMATCH, position, f"Record is corrupt (stored crc = {crc}) in inner message {index}",
                    record_index=index, offset=absolute_base + stored)
            for index, stored, crc in self.bad_crcs
        ]


def scan_inner_set(pieces: Iterable[bytes], position: int) -> InnerSet:
    """First pass over the inflated inner set of the wrapper at ``position``."""
    found = InnerSet()
    for record, crc in _inner_records(ByteStream(pieces), position, 0, found.problems):
        if found.count == 0:
            found.first_offset = record.stored_offset
        found.last_offset = record.stored_offset
        if not record.crc_valid:
            if len(found.bad_crcs) < MAX_LISTED_PROBLEMS:
                found.bad_crcs.append((record.index, record.stored_offset, crc))
            else:
                found.omitted[CheckId.CRC_MISMATCH] += 1
        found.count += 1
    return found


# A key's or a value's length field: an INT32 (LegacyRecord.KEY_SIZE_LENGTH, VALUE_SIZE_LENGTH).
_LENGTH_SIZE = 4


def read_message_header(read: Callable[[int, int], bytes], pos: int, end: int) -> LegacyMessage | str:
    """:func:`~kafka_audit.record.legacy_record.parse_message` of a message too large for one
    buffer: its header and two length fields by ``read(start, stop)`` (ranged reads), its CRC
    left to the caller (``crc_valid`` False until then); the same sentences."""
    head = read(pos, min(end, pos + _HEAD_BYTES))
    offset, size = OFFSET_SIZE.unpack_from(head, 0)
    body, body_end = pos + LOG_OVERHEAD, pos + LOG_OVERHEAD + size
    header = message_header(head, LOG_OVERHEAD, size)
    if isinstance(header, str):
        return header
    crc, magic, attributes, timestamp, header_size = header
    cursor = body + header_size
    spans: list[tuple[int, int] | None] = []
    for name in ("key", "value"):
        field_bytes = read(cursor, cursor + _LENGTH_SIZE) if cursor + _LENGTH_SIZE <= body_end else b""
        if len(field_bytes) < _LENGTH_SIZE:
            return f"{name} length runs past the end of the message"
        (length,) = LENGTH.unpack(field_bytes)
        cursor += 4
        if length == -1:
            spans.append(None)
            continue
        if length < 0 or cursor + length > body_end:
            return f"{name} length {length} runs past the end of the message"
        spans.append((cursor, cursor + length))
        cursor += length
    if cursor != body_end:
        return f"Message size {size} does not match its key and value lengths ({cursor - body} bytes)"
    return LegacyMessage(offset, size, crc, False, magic, attributes, timestamp, spans[0], spans[1])


# The log overhead, crc, magic, attributes, timestamp and key length of a v1 message.
_HEAD_BYTES = LOG_OVERHEAD + 6 + 8 + 4


class StreamedLegacy(RecordStream):
    """The inner records of a wrapper, read anew from ``open_pieces()`` on each iteration, with
    absolute offsets (``absolute_base`` + stored) and the wrapper's timestamp under
    LOG_APPEND_TIME (``timestamp``), as :func:`~kafka_audit.record.legacy_record.decode_legacy_batch`
    gives them."""

    def __init__(
        self, open_pieces: Callable[[], Iterable[bytes]], position: int, count: int, absolute_base: int,
        timestamp: int | None, keep: int,
    ) -> None:
        self._open = open_pieces
        self._position = position
        self.total = count
        self._base = absolute_base
        self._timestamp = timestamp
        self._keep = keep

    def __iter__(self) -> Iterator[Record]:
        for record, _ in _inner_records(ByteStream(self._open()), self._position, self._keep, []):
            if record.index >= self.total:
                return
            record.offset = self._base + record.stored_offset
            if self._timestamp is not None:
                record.timestamp = self._timestamp
            yield record


def _inner_records(stream: ByteStream, position: int, keep: int, problems: list[Problem]) -> Iterator[tuple[Record, int]]:
    """Each inner message as a record (``offset`` unset) with its stored CRC, until the set ends or
    a message cannot be read (its problem appended to ``problems``, after the rest of the set is
    inflated: a payload that does not decompress is the error reported first)."""
    yield from _inner_walk(stream, position, keep, problems)
    stream.rest()


def _inner_walk(stream: ByteStream, position: int, keep: int, problems: list[Problem]) -> Iterator[tuple[Record, int]]:
    index = 0
    while not stream.at_end():
        start = stream.position
        try:
            offset, size = OFFSET_SIZE.unpack(stream.read(LOG_OVERHEAD))
        except StreamEnded:
            problems.append(_truncated(position, index, stream.position - start))
            return
        if size < LEGACY_RECORD_OVERHEAD_V0:
            problems.append(_truncated(position, index, stream.position - start + stream.rest()))
            return
        body_end = start + LOG_OVERHEAD + size
        try:
            parsed = _inner_message(stream, index, offset, size, keep)
        except StreamEnded:
            problems.append(_truncated(position, index, stream.position - start))
            return
        if isinstance(parsed, str):
            at = stream.position
            if stream.skip(body_end - at) < body_end - at:
                problems.append(_truncated(position, index, stream.position - start))
            else:
                problems.append(Problem(CheckId.TRUNCATED_BATCH, position, f"Inner message {index}: {parsed}", record_index=index))
            return
        yield parsed
        index += 1


def _inner_message(stream: ByteStream, index: int, offset: int, size: int, keep: int) -> tuple[Record, int] | str:
    """LegacyRecord's fields after the log overhead, as :func:`~kafka_audit.record.legacy_record.parse_message`
    reads them (its sentences); the CRC-32 computed over magic..end as the bytes go by."""
    body = stream.position
    body_end = body + size
    crc, magic, attributes = CRC_MAGIC_ATTRIBUTES.unpack(stream.read(6))
    overhead = record_overhead(magic)
    if size < overhead:
        return f"Message size {size} is less than the minimum record overhead ({overhead})"
    computed = _Crc()
    computed(bytes((magic & 0xFF, attributes)))
    timestamp = NO_TIMESTAMP
    if magic == MAGIC_VALUE_V1:
        raw = stream.read(8)
        computed(raw)
        (timestamp,) = TIMESTAMP.unpack(raw)
    sizes_data: list[tuple[int, bytes | None]] = []
    for name in ("key", "value"):
        if stream.position + 4 > body_end:
            return f"{name} length runs past the end of the message"
        raw = stream.read(4)
        computed(raw)
        (length,) = LENGTH.unpack(raw)
        if length == -1:
            sizes_data.append((-1, None))
            continue
        if length < 0 or stream.position + length > body_end:
            return f"{name} length {length} runs past the end of the message"
        if keep:
            sizes_data.append((length, stream.take(length, keep, computed)))
        else:
            if stream.skip(length, computed) < length:
                raise StreamEnded
            sizes_data.append((length, None))
    if stream.position != body_end:
        return f"Message size {size} does not match its key and value lengths ({stream.position - body} bytes)"
    (key_size, key), (value_size, value) = sizes_data
    record = Record(
        index=index, offset=0, stored_offset=offset, timestamp=timestamp, key_size=key_size, value_size=value_size,
        key=key, value=value, magic=magic, attributes=attributes, crc_valid=computed.value == crc,
    )
    return record, crc


def _truncated(position: int, index: int, remaining: int) -> Problem:
    return Problem(
        CheckId.TRUNCATED_BATCH,
        position,
        f"Compressed message set ends inside inner message {index} ({remaining} bytes left)",
        record_index=index,
    )
