"""The Spark job's rows as Arrow batches, both ways: a segment task's batch summaries packed into
values of up to :data:`SUMMARIES_PER_VALUE` pickled tuples (:func:`value_rows`), the other segment
rows (:func:`rare_row`, :func:`segment_row_batch`), and back: summaries streamed out of batch rows
(:func:`batch_summaries`) or expanded into typed rows for the ``batches`` dataset (:func:`expand_batches`).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from operator import itemgetter

import pyarrow as pa

from kafka_audit.engines import schemas
from kafka_audit.rules.batch_summary import BatchSummary

# Batch summaries per Arrow batch that the segment step sends, and per batch row's value.
ROWS_PER_BATCH = 10_000
SUMMARIES_PER_VALUE = 4_096


def value_rows(
    place: int, summaries: list[BatchSummary], per_value: int = SUMMARIES_PER_VALUE, kind: int = schemas.BATCH
) -> Iterator[tuple]:
    """Batch rows of one segment task's summaries (in log order): each holds up to
    ``per_value`` of them as one value, a pickled list of plain tuples, keyed by
    its first summary's segment and position. Spark sorts and moves a few rows per task and never
    looks inside them (a typed row per batch cost the JVM three conversions and a sort each)."""
    for start in range(0, len(summaries), per_value):
        chunk = summaries[start : start + per_value]
        first = chunk[0]
        value = pickle.dumps(list(map(tuple, chunk)), pickle.HIGHEST_PROTOCOL)
        yield (kind, place, first.segment_base_offset, schemas.name_bytes(first.segment), first.position,
               None, value)


def rare_row(kind: int, place: int, payload: str | None, blob: bytes) -> tuple:
    """A row of ``schemas.SEGMENT_ROWS`` other than a batch row: no sort keys after its kind."""
    return (kind, place, None, None, None, payload, blob)


def segment_row_batch(rows: list[tuple]) -> pa.RecordBatch:
    """Rows (tuples in ``schemas.SEGMENT_ROWS``'s order) as one Arrow batch."""
    columns = zip(*rows) if rows else [()] * len(schemas.SEGMENT_ROWS)
    return pa.RecordBatch.from_arrays(
        [pa.array(column, type=f.type) for column, f in zip(columns, schemas.SEGMENT_ROWS)], schema=schemas.SEGMENT_ROWS
    )


def batch_summaries(batches: Iterator[pa.RecordBatch]) -> Iterator[BatchSummary]:
    """Batch summaries back from batch rows, one value at a time (read in place from the Arrow
    batch: a value is unpickled from Arrow's buffer, not copied into a bytes object first)."""
    make = BatchSummary._make
    for batch in batches:
        for value in batch.column("blob"):
            yield from map(make, pickle.loads(value.as_buffer()))


def expand_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Executor side, for the ``batches`` dataset only (``mapInArrow`` over the batch rows): a
    typed row per summary (``schemas.SUMMARY_FIELDS``), in Arrow batches of about
    :data:`ROWS_PER_BATCH` rows."""
    summaries: list[tuple] = []
    for batch in batches:
        for value in batch.column("blob"):
            summaries.extend(pickle.loads(value.as_buffer()))
            if len(summaries) >= ROWS_PER_BATCH:
                yield summary_batch(summaries)
                summaries = []
    if summaries:
        yield summary_batch(summaries)


def summary_batch(summaries: list[tuple]) -> pa.RecordBatch:
    """Typed rows (``schemas.SUMMARIES``) of summary tuples, built a column at a time
    (zip(*summaries) of thousands of tuples took ten times as long)."""
    values = [list(map(itemgetter(i), summaries)) for i in range(len(schemas.SUMMARY_FIELDS))]
    for i in (0, 2):  # topic and segment: names from file names, as dataset text
        values[i] = list(map(schemas.name_text, values[i]))
    return pa.RecordBatch.from_arrays(
        [pa.array(column, type=f.type) for column, f in zip(values, schemas.SUMMARIES)], schema=schemas.SUMMARIES
    )
