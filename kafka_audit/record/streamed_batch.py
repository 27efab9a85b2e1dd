"""A batch too large for one buffer, read as a stream: the payload by ranged reads of the file
(:func:`~kafka_audit.record.byte_stream.ranged_pieces`), inflated in pieces
(:func:`~kafka_audit.record.compression.decompress_stream`) and walked record by record
(:class:`~kafka_audit.record.stream_records.StreamedRecords`,
:class:`~kafka_audit.record.stream_legacy.StreamedLegacy`). The answers (records, problems, their
sentences) are those of :func:`kafka_audit.record.batch_records.read_batch_records` on one buffer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from kafka_audit.check_ids import CheckId
from kafka_audit.record.byte_stream import STREAM_BOUND, Buffer, ReadRange, ranged_pieces
from kafka_audit.record.compression import DecompressionError, decompress_stream
from kafka_audit.record.legacy_record import LegacyMessage, parse_message
from kafka_audit.record.problem import Problem
from kafka_audit.record.record_batch import (
    MAGIC_VALUE_V1,
    MAGIC_VALUE_V2,
    TIMESTAMP_TYPE_MASK,
    V2_RECORD_BATCH_OVERHEAD,
    CompressionType,
    Record,
    RecordBatch,
)
from kafka_audit.record.stream_legacy import StreamedLegacy, read_message_header, scan_inner_set
from kafka_audit.record.stream_records import DATA_PREFIX, StreamedRecords


@dataclass(slots=True)
class Streamed:
    """A streamed batch's records (read again on each iteration), problems and omitted counts."""

    records: Sequence[Record]
    problems: list[Problem] = field(default_factory=list)
    batch: RecordBatch | None = None
    omitted: Counter[str] = field(default_factory=Counter)


def _failed(batch: RecordBatch, exc: DecompressionError, with_offset: bool) -> Streamed:
    return Streamed([], [Problem(
        CheckId.DECOMPRESSION_FAILED, batch.position, str(exc), offset=batch.base_offset if with_offset else None,
        details={"codec": batch.compression},
    )], batch if not with_offset else None)


def streamed_v2(buf: Buffer, batch: RecordBatch, with_data: bool, cap: int, read: ReadRange) -> Streamed:
    """A v2 batch's records from a stream of its payload, inflated up to ``cap`` bytes."""
    start, stop = batch.position + V2_RECORD_BATCH_OVERHEAD, batch.position + batch.size

    def open_pieces() -> Iterable[bytes]:
        raw = ranged_pieces(read, start, stop)
        return decompress_stream(batch.codec, raw, MAGIC_VALUE_V2, cap) if batch.codec else raw

    log_append_time = batch.max_timestamp if batch.attributes & TIMESTAMP_TYPE_MASK else None
    try:
        records = StreamedRecords(
            open_pieces, batch.base_offset, batch.base_timestamp, batch.record_count or 0, log_append_time,
            DATA_PREFIX if with_data else 0,
        )
    except DecompressionError as exc:
        return _failed(batch, exc, True)
    problems = []
    if records.error is not None:
        problems.append(Problem(
            CheckId.NON_MONOTONIC_OFFSETS,
            batch.position,
            records.error,
            record_index=records.error_index,
            offset=batch.base_offset + (records.error_index or 0),
            details={"record_count": batch.record_count, "records_read": records.total},
        ))
    return Streamed(records, problems)


def message_of(buf: Buffer, batch: RecordBatch, read: ReadRange, large: bool) -> LegacyMessage | str:
    """The top-level v0/v1 message of ``batch``: parsed in place, or from ranged reads when large."""
    end = batch.position + batch.size
    if large:
        return read_message_header(read, batch.position, end)
    return parse_message(buf, batch.position, end)


def streamed_legacy(buf: Buffer, batch: RecordBatch, with_data: bool, cap: int, read: ReadRange) -> Streamed:
    """A v0/v1 message's records from a stream: a lone message's key and value as prefixes, a
    wrapper's inner set inflated in pieces up to ``cap`` bytes and walked twice (count, records)."""
    message = message_of(buf, batch, read, batch.size > STREAM_BOUND)
    assert not isinstance(message, str), "a streamed message was read by the walk already"
    keep = DATA_PREFIX if with_data else 0
    if batch.codec == CompressionType.NONE:
        return Streamed([_lone_record(replace(message, crc_valid=batch.crc_valid), read, keep)], batch=batch)
    if message.value_span is None:
        return Streamed([], [Problem(CheckId.DECOMPRESSION_FAILED, batch.position,
                                     "Found invalid compressed record set with null value")], batch)
    value_start, value_stop = message.value_span

    def open_pieces() -> Iterable[bytes]:
        return decompress_stream(batch.codec, ranged_pieces(read, value_start, value_stop), batch.magic, cap)

    try:
        inner = scan_inner_set(open_pieces(), batch.position)
    except DecompressionError as exc:
        return _failed(batch, exc, False)
    if inner.count == 0:
        problems = inner.problems or [Problem(CheckId.DECOMPRESSION_FAILED, batch.position,
                                              "Compressed message set holds no message")]
        return Streamed([], problems, batch)
    base = message.offset - inner.last_offset if batch.magic == MAGIC_VALUE_V1 else 0
    log_append_time = batch.magic == MAGIC_VALUE_V1 and bool(batch.attributes & TIMESTAMP_TYPE_MASK)
    records = StreamedLegacy(
        open_pieces, batch.position, inner.count, base, message.timestamp if log_append_time else None, keep
    )
    described = replace(batch, base_offset=base + inner.first_offset, record_count=inner.count)
    return Streamed(records, inner.problems + inner.crc_problems(batch.position, base), described, inner.omitted)


def _lone_record(message: LegacyMessage, read: ReadRange, keep: int) -> Record:
    """An uncompressed message as its one record, its key and value as prefixes of ``keep`` bytes."""
    sizes: list[int] = []
    data: list[bytes | None] = []
    for span in (message.key_span, message.value_span):
        sizes.append(-1 if span is None else span[1] - span[0])
        data.append(None if span is None or not keep else read(span[0], min(span[1], span[0] + keep)))
    return Record(
        index=0, offset=message.offset, stored_offset=message.offset, timestamp=message.timestamp,
        key_size=sizes[0], value_size=sizes[1], key=data[0], value=data[1], magic=message.magic,
        attributes=message.attributes, crc_valid=message.crc_valid,
    )

