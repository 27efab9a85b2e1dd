"""The Spark job's rows as Arrow batches, both ways: segment tasks' summaries made columns together
(:class:`PendingValues`, :mod:`~kafka_audit.engines.summary_columns`) and each task's cut into batch
rows of up to :data:`SUMMARIES_PER_VALUE` summaries, each an Arrow record batch in ``blob``
(:func:`value_rows`),
the other segment rows (:func:`rare_row`, :func:`segment_row_batch`), and back: summaries streamed
out of batch rows (:func:`batch_summaries`) or their typed rows for the ``batches`` dataset
(:func:`expand_batches`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa

from kafka_audit.engines import schemas
from kafka_audit.engines.summary_columns import dataset_rows, read_value, run_values, summaries_of, summary_columns
from kafka_audit.rules.batch_summary import BatchSummary

# Batch summaries per Arrow batch that the segment step sends, and per batch row's value.
ROWS_PER_BATCH = 10_000
SUMMARIES_PER_VALUE = 4_096


def value_rows(
    place: int, columns: pa.RecordBatch, per_value: int = SUMMARIES_PER_VALUE, kind: int = schemas.BATCH
) -> Iterator[tuple]:
    """Batch rows of one segment task's summary columns (in log order): each holds up to
    ``per_value`` of them as one Arrow record batch, keyed by its first summary's segment and
    position. Spark sorts and moves a few rows per task and never looks inside them (a typed row
    per batch cost the JVM three conversions and a sort each)."""
    bases, segments, positions = (columns.column(name) for name in ("segment_base_offset", "segment", "position"))
    for start, value in run_values(columns, per_value):
        yield (kind, place, bases[start].as_py(), segments[start].as_py(), positions[start].as_py(), None, value)


class PendingValues:
    """Segment tasks' summaries waiting to leave as batch rows, converted to columns together
    when sent (:meth:`rows`): one conversion per Arrow batch the segment step sends, not one per
    segment task (a conversion costs as much as a few hundred summaries, and a 1 MiB segment has
    about a hundred); each task's run is then a slice of those columns."""

    def __init__(self) -> None:
        self.summaries: list[BatchSummary] = []
        self.runs: list[tuple[int, int, int, int]] = []  # place, kind, first summary, count

    def __len__(self) -> int:
        return len(self.summaries)

    def add(self, places: Iterable[int], summaries: list[BatchSummary], kind: int = schemas.BATCH) -> None:
        """One task's summaries (in log order), to be sent to each of ``places``."""
        start = len(self.summaries)
        self.summaries.extend(summaries)
        self.runs.extend((place, kind, start, len(summaries)) for place in places)

    def rows(self) -> list[tuple]:
        """The batch rows of every task added since the last call (:func:`value_rows`)."""
        columns = summary_columns(self.summaries)
        rows = [row for place, kind, start, count in self.runs
                for row in value_rows(place, columns.slice(start, count), kind=kind)]
        self.summaries, self.runs = [], []
        return rows


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
    """Batch summaries back from batch rows, one value at a time (its record batch read in place
    from the Arrow buffer, not copied into a bytes object first)."""
    for batch in batches:
        for value in batch.column("blob"):
            for columns in read_value(value.as_buffer()):
                yield from summaries_of(columns)


def expand_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Executor side, for the ``batches`` dataset only (``mapInArrow`` over the batch rows): the
    typed rows (``schemas.SUMMARIES``) of each value's summary columns."""
    for batch in batches:
        for value in batch.column("blob"):
            yield from map(dataset_rows, read_value(value.as_buffer()))
