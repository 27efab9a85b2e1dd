"""A v2 batch's records walked as a stream: ``DefaultRecordBatch.compressedIterator`` reading
``DefaultRecord.readFrom`` field by field from the codec's ``InputStream``, and skipping key and
value bytes as ``skipKeyValueIterator`` / ``DefaultRecord.readPartiallyFrom`` do.

For a batch larger than :data:`~kafka_audit.record.byte_stream.STREAM_BOUND` (on disk or
inflated): the records are never held together, a key or value is kept only as a bounded prefix
(:data:`DATA_PREFIX` bytes, for ``dump --print-data``), and memory stays within a few pieces of
the stream whatever the lengths claim. The grammar and the sentences are those of
:func:`kafka_audit.record.default_record.decode_records`, which reads batches in one buffer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import overload

from kafka_audit.record.byte_stream import ByteStream, StreamEnded
from kafka_audit.record.default_record import (
    MAX_VARINT_BYTES,
    MAX_VARLONG_BYTES,
    MIN_HEADER_BYTES,
    MalformedRecord,
    read_varint,
)
from kafka_audit.record.record_batch import MAGIC_VALUE_V2, Header, Record

# The most bytes of a key, value or header kept when records are read with their data.
DATA_PREFIX = 4096

_ENDED = "Record data ends in the middle of a record"


class RecordStream(Sequence[Record]):
    """A batch's ``total`` records, read anew from the stream on each iteration: a record by its
    index (a control batch's first) is read again from the stream, not held."""

    total: int

    def __len__(self) -> int:
        return self.total

    @overload
    def __getitem__(self, index: int) -> Record: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Record]: ...

    def __getitem__(self, index: int | slice) -> Record | Sequence[Record]:
        if isinstance(index, slice):
            raise TypeError("a streamed batch's records are not sliced")
        for record in self:
            if record.index == index:
                return record
        raise IndexError(index)


class StreamedRecords(RecordStream):
    """The records of one v2 batch, read anew from ``open_pieces()`` (the inflated payload) on each
    iteration. Built by a first pass that counts them and notes why reading stopped (``error``,
    ``error_index``, as :class:`~kafka_audit.record.default_record.DecodedRecords` says it), so
    that ``len()`` is known before the records are validated in a second pass."""

    def __init__(
        self,
        open_pieces: Callable[[], Iterable[bytes]],
        base_offset: int,
        base_timestamp: int,
        record_count: int,
        log_append_time: int | None,
        keep: int,
    ) -> None:
        self._open = open_pieces
        self._args = (base_offset, base_timestamp, record_count, log_append_time)
        self._keep = keep
        self.error: str | None = None
        self.error_index: int | None = None
        self.total = 0
        for _ in self._walk(0, note=True):
            self.total += 1

    def __iter__(self) -> Iterator[Record]:
        for index, record in enumerate(self._walk(self._keep, note=False)):
            if index >= self.total:
                return
            yield record

    def _walk(self, keep: int, note: bool) -> Iterator[Record]:
        base_offset, base_timestamp, record_count, log_append_time = self._args
        stream = ByteStream(self._open())
        index = 0
        if record_count < 0:
            self._stop(note, f"Found invalid record count {record_count} in magic v2 batch", 0, stream)
            return
        try:
            while index < record_count:
                if stream.at_end():
                    self._stop(
                        note,
                        "Incorrect declared batch size, premature EOF reached: the header counts "
                        f"{record_count} records, {index} are present",
                        index,
                        stream,
                    )
                    return
                record = _read_record(stream, index, keep)
                record.offset = base_offset + record.stored_offset
                record.timestamp = log_append_time if log_append_time is not None else base_timestamp + record.timestamp
                yield record
                index += 1
        except MalformedRecord as exc:
            self._stop(note, str(exc), index, stream)
            return
        left = stream.rest()
        if left:
            self._stop(
                note,
                f"Incorrect declared batch size, records still remaining in file: {left} bytes "
                f"after the {record_count} records the header counts",
                index,
                stream,
            )

    def _stop(self, note: bool, error: str, index: int, stream: ByteStream) -> None:
        """Reading stops at ``index``: the first pass notes why, after inflating the rest of the
        payload, whose error (a payload that does not decompress) comes first, as it does when
        the payload is inflated in one call."""
        if note:
            stream.rest()
            self.error, self.error_index = error, index


def _varint(stream: ByteStream, max_bytes: int, record_field: bool = True) -> int:
    """A varint field; at the very end of the data, a record field (default_record's
    ``_field_varint``) ends the record, read_varint's (a header's fields) says the varint does."""
    buf, pos = stream.window(max_bytes)
    if pos >= len(buf) and record_field:
        raise MalformedRecord(_ENDED)
    value, end = read_varint(buf, pos, max_bytes)
    stream.advance(end)
    return value


# Over 60 lines: DefaultRecord.readFrom's fields in order, each with its own sentence (those of
# default_record._read_record), reading from the stream instead of one buffer.
def _read_record(stream: ByteStream, index: int, keep: int) -> Record:
    """One record; its ``timestamp`` is the delta and ``offset`` unset (the caller adds the base)."""
    length = _varint(stream, MAX_VARINT_BYTES)
    start = stream.position
    record_end = start + length
    if length <= 0:
        raise MalformedRecord(
            f"Invalid record size: expected {length} bytes in record payload, but instead the "
            f"buffer has only {stream.rest()} remaining bytes."
        )
    try:
        attributes = stream.read(1)[0]
        timestamp_delta = _varint(stream, MAX_VARLONG_BYTES)
        offset_delta = _varint(stream, MAX_VARINT_BYTES)
        key_size, key = _field(stream, record_end, keep, "key")
        value_size, value = _field(stream, record_end, keep, "value")
        header_count = _varint(stream, MAX_VARINT_BYTES)
        headers: tuple[Header, ...] = ()
        if header_count:
            if header_count < 0 or MIN_HEADER_BYTES * header_count > record_end - stream.position:
                raise MalformedRecord(f"Found invalid number of record headers {header_count}")
            headers = _headers(stream, record_end, header_count, keep)
        if stream.position != record_end:
            raise MalformedRecord(
                f"Invalid record size: expected to read {length} bytes in record payload, "
                f"but instead read {stream.position - start}"
            )
    except (MalformedRecord, StreamEnded) as exc:
        # default_record._read_record checks first that the record fits the data: so does this, by reading on
        # to where the record should end.
        at = stream.position
        if at < record_end and stream.skip(record_end - at) < record_end - at:
            raise MalformedRecord(
                f"Invalid record size: expected {length} bytes in record payload, but instead the "
                f"buffer has only {stream.position - start} remaining bytes."
            ) from None
        raise MalformedRecord(str(exc) if isinstance(exc, MalformedRecord) else _ENDED) from None
    return Record(
        index, 0, offset_delta, timestamp_delta, key_size, value_size, key, value, headers, header_count,
        MAGIC_VALUE_V2, attributes,
    )


def _field(stream: ByteStream, record_end: int, keep: int, name: str) -> tuple[int, bytes | None]:
    """A key or value: its size and a prefix of at most ``keep`` bytes (None when ``keep`` is 0)."""
    size = _varint(stream, MAX_VARINT_BYTES)
    if size >= 0:
        if stream.position + size > record_end:
            raise MalformedRecord(f"Invalid {name} size {size}: past the end of the record")
        return size, _bytes(stream, size, keep)
    if size != -1:
        raise MalformedRecord(f"Invalid negative {name} size {size}")
    return size, None


def _bytes(stream: ByteStream, size: int, keep: int) -> bytes | None:
    """``size`` bytes consumed: their prefix of ``keep`` bytes, or None when ``keep`` is 0."""
    if keep:
        return stream.take(size, keep)
    if stream.skip(size) < size:
        raise StreamEnded
    return None


def _headers(stream: ByteStream, record_end: int, count: int, keep: int) -> tuple[Header, ...]:
    """DefaultRecord.readHeaders from the stream; with ``keep`` 0 the headers are skipped."""
    headers = []
    for _ in range(count):
        key_size = _varint(stream, MAX_VARINT_BYTES, record_field=False)
        if key_size < 0:
            raise MalformedRecord(f"Invalid negative header key size {key_size}")
        if stream.position + key_size > record_end:
            raise MalformedRecord(f"Invalid header key size {key_size}: past the end of the record")
        key = _bytes(stream, key_size, keep)
        value_size = _varint(stream, MAX_VARINT_BYTES, record_field=False)
        value = None
        if value_size >= 0:
            if stream.position + value_size > record_end:
                raise MalformedRecord(f"Invalid header value size {value_size}: past the end of the record")
            value = _bytes(stream, value_size, keep)
        elif value_size != -1:
            raise MalformedRecord(f"Invalid negative header value size {value_size}")
        if keep:
            headers.append(Header((key or b"").decode("utf-8", errors="replace"), value))
    return tuple(headers)
