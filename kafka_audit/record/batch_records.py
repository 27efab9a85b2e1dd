"""One batch's records decoded on demand (DefaultRecordBatch / AbstractLegacyRecordBatch iterators):
:func:`read_batch_records` and the decompressed v2 payload (:func:`v2_records_data`), with the
decompression-bomb cap (:func:`max_decompressed_size`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from kafka_audit.check_ids import CheckId
from kafka_audit.record.byte_stream import MAX_LISTED_RECORDS, STREAM_BOUND, Buffer, ReadRange
from kafka_audit.record.compression import DecompressionError, TooLarge, decompress
from kafka_audit.record.default_record import DecodedRecords, decode_records
from kafka_audit.record.legacy_record import (
    decode_legacy_batch,
)
from kafka_audit.record.problem import Problem
from kafka_audit.record.record_batch import (
    MAGIC_VALUE_V0,
    MAGIC_VALUE_V1,
    MAGIC_VALUE_V2,
    TIMESTAMP_TYPE_MASK,
    V2_RECORD_BATCH_OVERHEAD,
    Record,
    RecordBatch,
)
from kafka_audit.record.streamed_batch import streamed_legacy, streamed_v2

# Decompression-bomb cap: a batch may inflate to 64 times its size on disk, and always to 64 MiB.
_MIN_DECOMPRESSED_CAP = 64 * 1024 * 1024


_DECOMPRESSION_RATIO_CAP = 64


def max_decompressed_size(batch: RecordBatch) -> int:
    """The most bytes a batch's payload may decompress to before it is treated as a bomb."""
    return max(_MIN_DECOMPRESSED_CAP, _DECOMPRESSION_RATIO_CAP * batch.size)


@dataclass(slots=True)
class BatchRecords:
    """The records of one batch and the problems met decoding them.

    ``batch``: the batch as its records describe it (a v0/v1 wrapper's base offset and record
    count come from its inner set); None where it is the batch that was read.
    """

    records: Sequence[Record]
    problems: list[Problem] = field(default_factory=list)
    batch: RecordBatch | None = None
    # Problems of a check met beyond those listed (a streamed batch lists a bounded number).
    omitted: Counter[str] = field(default_factory=Counter)

    @property
    def count(self) -> int:
        """How many records the batch holds that could be read."""
        return len(self.records)


def v2_records_data(buf: Buffer, batch: RecordBatch) -> bytes | memoryview:
    """A v2 batch's records in one buffer, decompressed (in place when uncompressed); raises
    :class:`DecompressionError` as :func:`read_batch_records` reports it, and :class:`TooLarge`
    for a batch to be read as a stream (larger than :data:`STREAM_BOUND`, on disk or inflated)."""
    if batch.size > STREAM_BOUND:
        raise TooLarge(f"a batch of {batch.size} bytes is read as a stream")
    payload = memoryview(buf)[batch.position + V2_RECORD_BATCH_OVERHEAD : batch.position + batch.size]
    if batch.codec:
        cap = max_decompressed_size(batch)
        return decompress(batch.codec, payload, MAGIC_VALUE_V2, min(cap, STREAM_BOUND))
    return payload


def _streamed(batch: RecordBatch) -> bool:
    """Whether a batch is read as a stream whatever its payload: larger than :data:`STREAM_BOUND`
    on disk, or counting more records than :data:`MAX_LISTED_RECORDS`."""
    return batch.size > STREAM_BOUND or (batch.record_count or 0) > MAX_LISTED_RECORDS


def read_batch_records(
    buf: Buffer, batch: RecordBatch, with_data: bool = True, read_range: ReadRange | None = None
) -> BatchRecords:
    """Decode a batch's records on demand (DefaultRecordBatch / AbstractLegacyRecordBatch iterator).

    Problems: ``decompression_failed`` for an unknown codec or a payload that does not
    decompress (or inflates past :func:`max_decompressed_size`), ``non_monotonic_offsets``
    when a record cannot be read or the records present disagree with the header's record
    count (both InvalidRecordException in DefaultRecord.readFrom and DefaultRecordBatch's
    iterator, INVALID_RECORD; the SPEC row of a count that disagrees with the records present),
    ``truncated_batch``
    for a v0/v1 inner message set that ends early, ``crc_mismatch`` for bad inner messages.
    """
    cap = max_decompressed_size(batch)
    if batch.magic in (MAGIC_VALUE_V0, MAGIC_VALUE_V1):
        if batch.size <= STREAM_BOUND:
            try:
                legacy = decode_legacy_batch(buf, batch, with_data, cap, bound=STREAM_BOUND)
                return BatchRecords(legacy.records, legacy.problems, batch=legacy.batch)
            except TooLarge:
                pass  # inflates past the bound: read as a stream below
        streamed = streamed_legacy(buf, batch, with_data, cap, _reader(buf, read_range))
        return BatchRecords(streamed.records, streamed.problems, streamed.batch, streamed.omitted)
    if _streamed(batch):
        streamed = streamed_v2(buf, batch, with_data, cap, _reader(buf, read_range))
        return BatchRecords(streamed.records, streamed.problems, None, streamed.omitted)
    try:
        data = v2_records_data(buf, batch)
    except TooLarge:
        streamed = streamed_v2(buf, batch, with_data, cap, _reader(buf, read_range))
        return BatchRecords(streamed.records, streamed.problems, None, streamed.omitted)
    except DecompressionError as exc:
        return BatchRecords([], [_decompression_failed(batch, exc)])
    # The records in place are copied out of the buffer; decompressed, bytes() is the same object.
    data = bytes(data)
    log_append_time = batch.max_timestamp if batch.attributes & TIMESTAMP_TYPE_MASK else None
    decoded = decode_records(
        data, batch.base_offset, batch.base_timestamp, batch.record_count or 0, log_append_time, with_data
    )
    if decoded.error is None:
        return BatchRecords(decoded.records, [])
    return BatchRecords(decoded.records, [_undecodable(batch, decoded.error, decoded)])


def _decompression_failed(batch: RecordBatch, exc: DecompressionError) -> Problem:
    """An unknown codec, or a payload that does not decompress within its bound."""
    return Problem(CheckId.DECOMPRESSION_FAILED, batch.position, str(exc), offset=batch.base_offset, details={"codec": batch.compression})


def _undecodable(batch: RecordBatch, error: str, decoded: DecodedRecords) -> Problem:
    """``non_monotonic_offsets``: a record that cannot be read, or a record count the records
    present disagree with (DefaultRecord.readFrom, DefaultRecordBatch's iterator)."""
    return Problem(
        CheckId.NON_MONOTONIC_OFFSETS,
        batch.position,
        error,
        record_index=decoded.error_index,
        offset=batch.base_offset + (decoded.error_index or 0),
        details={"record_count": batch.record_count, "records_read": len(decoded.records)},
    )


def _reader(buf: Buffer, read_range: ReadRange | None) -> ReadRange:
    """Ranged reads of the file (or of ``buf`` when the caller has no other way to its bytes)."""
    if read_range is not None:
        return read_range
    view = memoryview(buf)
    return lambda start, stop: bytes(view[start:stop])
