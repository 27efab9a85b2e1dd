"""The Spark job's rows as Arrow batches, both ways (and each slot's segment tasks, sent with the
segment step, :func:`slot_step`): segment tasks' summaries made columns together
(:class:`PendingValues`, :mod:`~kafka_audit.engines.summary_columns`) and each task's cut into batch
rows of up to :data:`SUMMARIES_PER_VALUE` summaries, each an Arrow record batch in ``blob``
(:func:`task_rows`), the other segment rows (:func:`rare_row`, :func:`segment_row_batch`), and
back: the partition step's runs streamed out of batch rows (:func:`batch_runs`; their summaries,
:func:`batch_summaries`) or their typed rows for the ``batches`` dataset (:func:`expand_batches`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from kafka_audit.engines import schemas
from kafka_audit.engines.summary_columns import (
    dataset_rows,
    read_value,
    run_values,
    runs_columns,
    summary_columns,
    summary_runs,
)
from kafka_audit.rules.batch_summary import BatchSummary, SummaryColumns, flatten

# Batch summaries per Arrow batch that the segment step sends, and per batch row's value.
ROWS_PER_BATCH = 10_000
SUMMARIES_PER_VALUE = 4_096


def task_rows(places: list[int], parts: Sequence[pa.RecordBatch], per_value: int, kind: int) -> Iterator[tuple]:
    """Batch rows of one segment task's summary columns (its parts in log order), to each of
    ``places``: each holds up to ``per_value`` of them as one Arrow record batch, keyed by its
    first summary's segment and position. Spark sorts and moves a few rows per task and never
    looks inside them (a typed row per batch cost the JVM three conversions and a sort each)."""
    for columns, value in run_values(parts, per_value):
        keys = tuple(columns.column(name)[0].as_py() for name in ("segment_base_offset", "segment", "position"))
        yield from ((kind, place, *keys, None, value) for place in places)


class PendingValues:
    """Segment tasks' summaries waiting to leave as batch rows, made columns together when sent
    (:meth:`rows`): one conversion per Arrow batch the segment step sends, not one per segment
    task (a conversion costs as much as a few hundred summaries, and a 1 MiB segment has about a
    hundred), each task's stretches of them slices. The compiled walk's runs go as their memory
    (``runs_columns``), the summaries the Python walk made converted by Arrow at once."""

    def __init__(self) -> None:
        self.summaries: list[BatchSummary] = []
        self.runs: list[SummaryColumns] = []
        self.run_rows = 0
        # Per task: its places, its kind and its parts in log order (from the runs or from the
        # summaries, first row, count).
        self.tasks: list[tuple[list[int], int, list[tuple[bool, int, int]]]] = []

    def __len__(self) -> int:
        return len(self.summaries) + self.run_rows

    def add(self, places: Iterable[int], items: Iterable[BatchSummary | SummaryColumns], kind: int = schemas.BATCH) -> None:
        """One task's summaries and runs (in log order), to be sent to each of ``places``."""
        summaries = self.summaries
        parts: list[tuple[bool, int, int]] = []
        start = len(summaries)
        for item in items:
            if isinstance(item, BatchSummary):
                summaries.append(item)
            elif len(item):
                _extend(parts, False, start, len(summaries) - start)
                start = len(summaries)
                _extend(parts, True, self.run_rows, len(item))
                self.runs.append(item)
                self.run_rows += len(item)
        _extend(parts, False, start, len(summaries) - start)
        if parts:
            self.tasks.append((list(places), kind, parts))

    def rows(self) -> list[tuple]:
        """The batch rows of every task added since the last call (:func:`task_rows`)."""
        made = {False: summary_columns(self.summaries) if self.summaries else None,
                True: runs_columns(self.runs) if self.runs else None}
        rows: list[tuple] = []
        for places, kind, parts in self.tasks:
            batches = [_slice(made[from_runs], start, count) for from_runs, start, count in parts]
            rows.extend(task_rows(places, batches, SUMMARIES_PER_VALUE, kind))
        self.summaries, self.runs, self.run_rows, self.tasks = [], [], 0, []
        return rows


def _extend(parts: list[tuple[bool, int, int]], from_runs: bool, start: int, count: int) -> None:
    """``parts`` and the stretch ``count`` rows from ``start`` (one part with the last if it goes on)."""
    if not count:
        return
    if parts and parts[-1][0] == from_runs and sum(parts[-1][1:]) == start:
        parts[-1] = (from_runs, parts[-1][1], parts[-1][2] + count)
    else:
        parts.append((from_runs, start, count))


def _slice(columns: pa.RecordBatch | None, start: int, count: int) -> pa.RecordBatch:
    assert columns is not None  # a part is of rows made
    return columns.slice(start, count)


def rare_row(kind: int, place: int, payload: str | None, blob: bytes) -> tuple:
    """A row of ``schemas.SEGMENT_ROWS`` other than a batch row: no sort keys after its kind."""
    return (kind, place, None, None, None, payload, blob)


def segment_row_batch(rows: list[tuple]) -> pa.RecordBatch:
    """Rows (tuples in ``schemas.SEGMENT_ROWS``'s order) as one Arrow batch."""
    columns = zip(*rows) if rows else [()] * len(schemas.SEGMENT_ROWS)
    return pa.RecordBatch.from_arrays(
        [pa.array(column, type=f.type) for column, f in zip(columns, schemas.SEGMENT_ROWS)], schema=schemas.SEGMENT_ROWS
    )


def batch_runs(batches: Iterator[pa.RecordBatch]) -> Iterator[BatchSummary | SummaryColumns]:
    """The partition step's runs back from batch rows, a value at a time (its record batch read in
    place from the Arrow buffer, not copied into a bytes object first): a ``SummaryColumns`` per
    value, or its summaries (``summary_runs``)."""
    for batch in batches:
        for value in batch.column("blob"):
            for columns in read_value(value.as_buffer()):
                yield from summary_runs(columns)


def batch_summaries(batches: Iterator[pa.RecordBatch]) -> Iterator[BatchSummary]:
    """The summaries of :func:`batch_runs`, one at a time."""
    return flatten(batch_runs(batches))


def expand_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Executor side, for the ``batches`` dataset only (``mapInArrow`` over the batch rows): the
    typed rows (``schemas.SUMMARIES``) of each value's summary columns."""
    for batch in batches:
        for value in batch.column("blob"):
            yield from map(dataset_rows, read_value(value.as_buffer()))


def slot_step(
    tasks: pa.Table,
    slots: int,
    segment_step: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
    first: pa.RecordBatch,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The segment step over ``spark.range``'s slot numbers (0 to ``slots`` - 1): each slot's
    rows of ``tasks`` go with the function, as an Arrow IPC stream apiece (a task reads only its
    own), so that the tasks reach their slots without a frame of their own and an exchange (a
    stage, 0.1-0.15 CPU s of the JVM's per scan; PySpark broadcasts a function past 1 MB). Slot 0 sends the rows
    ``first`` too (the metadata rows: no second frame and union for them)."""
    slot_column = tasks.column("slot")
    streams = [_ipc_stream(tasks.filter(pc.equal(slot_column, slot))) for slot in range(slots)]

    def slots_step(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Executor side: the segment step of each slot number of this Spark task (one)."""
        for batch in batches:
            for slot in batch.column(0).to_pylist():
                if slot == 0 and first.num_rows:
                    yield first
                yield from segment_step(iter(pa.ipc.open_stream(streams[slot])))

    return slots_step


def _ipc_stream(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()
