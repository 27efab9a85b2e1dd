"""Batch summaries as Arrow columns, the way the Spark job moves them: a segment task's summaries
as record batches of ``schemas.SUMMARY_COLUMNS``, cut into runs that travel as Arrow IPC streams,
and read back as the partition step's runs (:func:`summary_runs`) or as the ``batches`` dataset's
typed rows (:func:`dataset_rows`).

The compiled walk's runs (``SummaryColumns``) go to Arrow as their memory (:func:`runs_columns`:
one run's columns wrapped without a copy, several runs' joined with a memcpy per column; the codec
ids the indices of a dictionary of the codec labels), and each task's run comes back as one:
:func:`summary_runs` copies each column once into one ``BatchColumns`` and makes no Python object
per batch. Summaries the Python walk made (tuples) are converted by Arrow at once
(:func:`summary_columns`). Names from the file system are bytes (Python's
surrogate escapes undone, and restored on the way back).

An integer its column cannot hold (a hostile v2 header's base offset near 2^63 plus its last
offset delta) travels as its decimal text in that run's column and comes back as the same int: a
run's schema travels with it, so the partition step sees exactly the values the segment step made
(such a run, a rare one, comes back as tuples).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import chain, repeat
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafka_audit.engines import schemas
from kafka_audit.record.batch_walk import LAYOUT, ROW_BYTES, BatchColumns
from kafka_audit.record.record_batch import COMPRESSION_CODEC_MASK, codec_label
from kafka_audit.rules.batch_summary import BatchSummary, SummaryColumns

_NAMES = tuple(schemas.SUMMARY_COLUMNS.names)
_TYPES = {f.name: f.type for f in schemas.SUMMARY_COLUMNS}
# The columns a task holds constant, in SummaryColumns' order of them.
_CONSTANTS = ("topic", "partition", "segment", "segment_base_offset")
_POSITION, _SIZE = _NAMES.index("position"), _NAMES.index("size")
# The ``compression`` column's dictionary: the codec labels, by codec id.
CODEC_LABELS = pa.array([codec_label(codec) for codec in range(COMPRESSION_CODEC_MASK + 1)], pa.string())


def _value_type(name: str) -> pa.DataType:
    kind = _TYPES[name]
    return kind.value_type if pa.types.is_run_end_encoded(kind) else kind


def _row_type(name: str) -> pa.DataType:
    """A field's type in the row-wise conversion of tuples: Python's str and bool as Arrow's."""
    if name in schemas.NAME_COLUMNS or name == "compression":
        return pa.string()
    return pa.bool_() if name in schemas.BOOL_COLUMNS else _value_type(name)


# A BatchSummary tuple as a struct, field for field in its order.
_ROWS = pa.struct([pa.field(name, _row_type(name)) for name in BatchSummary._fields])
# tuple.__new__ with BatchSummary: a summary made without a Python call per batch.
_new = tuple.__new__


def summary_columns(summaries: Sequence[BatchSummary]) -> pa.RecordBatch:
    """Summaries as the Python walk yields them (a tuple each; one task's or several's) as
    columns: converted by Arrow a row at a time (no Python call per summary), then settled in
    their transport types at C speed. A name that is not UTF-8 or an integer past its column has
    no place in that conversion: such summaries' columns are made one at a time."""
    try:
        rows = pa.array(summaries, _ROWS)
    except (OverflowError, UnicodeError, pa.ArrowInvalid):
        fields = zip(*summaries) if summaries else repeat((), len(BatchSummary._fields))
        return _batch(dict(zip(BatchSummary._fields, fields)), len(summaries))
    return _batch({name: _settled(name, rows.field(name)) for name in _NAMES}, len(summaries))


def _settled(name: str, column: pa.Array) -> pa.Array:
    """A column of the row-wise conversion as it travels: names as bytes, booleans as bytes,
    codecs by id, a column a task holds constant as its runs (one per task)."""
    if name in schemas.NAME_COLUMNS:
        column = column.cast(pa.binary())
    elif name in schemas.BOOL_COLUMNS:
        return column.cast(pa.int8())
    elif name == "compression":
        return _codecs(column)
    return pc.run_end_encode(column, run_end_type=pa.int32()) if name in schemas.RUN_END_COLUMNS else column


def _codecs(labels: pa.Array) -> pa.Array:
    """Codec labels as the indices of :data:`CODEC_LABELS`; a label no codec id has (none the
    walks make) as a dictionary of its own."""
    ids = pc.index_in(labels, value_set=CODEC_LABELS)
    if ids.null_count:
        return labels.dictionary_encode()
    return pa.DictionaryArray.from_arrays(ids.cast(pa.int8()), CODEC_LABELS)


def runs_columns(runs: Sequence[SummaryColumns]) -> pa.RecordBatch:
    """Runs the compiled walk took (one task's or several's, in order) as one record batch, with
    no object per batch: one run's columns are its memory (no copy); several runs' columns each
    their memory joined (a memcpy per column, not some forty Arrow calls per run). The columns a
    task holds constant have a run per stretch of runs that share them."""
    runs = [run for run in runs if len(run)]
    for run in runs:
        if len(run.batches.data) != ROW_BYTES * len(run):
            raise ValueError(f"a run of {len(run)} batches has {len(run.batches.data)} bytes of columns, not {ROW_BYTES * len(run)}")
    heads: list[tuple[str, int, str, int]] = []
    ends: list[int] = []
    count = 0
    for run in runs:
        count += len(run)
        head = (run.topic, run.partition, run.segment, run.segment_base_offset)
        if heads and heads[-1] == head:
            ends[-1] = count
        else:
            heads.append(head)
            ends.append(count)
    run_ends = pa.array(ends, pa.int32())
    arrays = [
        pa.RunEndEncodedArray.from_arrays(run_ends, _plain([_sent(name, head[i]) for head in heads], _value_type(name)))
        for i, name in enumerate(_CONSTANTS)
    ]
    whole = pa.py_buffer(runs[0].batches.data) if len(runs) == 1 else None
    views = [(memoryview(run.batches.data), len(run)) for run in runs]
    for name, _, width, before in LAYOUT:
        if whole is not None:
            memory = whole.slice(count * before, count * width)
        else:
            memory = pa.py_buffer(b"".join([view[size * before : size * (before + width)] for view, size in views]))
        arrays.append(_over(memory, name, count))
    return pa.RecordBatch.from_arrays(arrays, schema=schemas.SUMMARY_COLUMNS)


def _sent(name: str, value: Any) -> Any:
    """A constant as it travels (a name as its bytes)."""
    return schemas.name_bytes(value) if name in schemas.NAME_COLUMNS and isinstance(value, str) else value


def _batch(columns: Mapping[str, Any], length: int) -> pa.RecordBatch:
    """``length`` summaries as a record batch of ``schemas.SUMMARY_COLUMNS``'s fields, each given
    as an Arrow array or a list or tuple of values."""
    return pa.RecordBatch.from_arrays([_column(name, columns[name], length) for name in _NAMES], names=list(_NAMES))


def _column(name: str, values: pa.Array | Sequence[Any], length: int) -> pa.Array:
    if isinstance(values, pa.Array):
        return values
    # A column the task holds constant is one run (tuple.count: no Python call per value).
    if name in schemas.RUN_END_COLUMNS and values and values.count(values[0]) == length:
        return _constant(name, values[0], length)
    if name in schemas.NAME_COLUMNS:
        values = [schemas.name_bytes(value) if isinstance(value, str) else value for value in values]
    if name in schemas.BOOL_COLUMNS:
        return pa.array(values, pa.bool_()).cast(pa.int8())
    if name == "compression":
        return _codecs(pa.array(values, pa.string()))
    column = _plain(values, _value_type(name))
    return pc.run_end_encode(column, run_end_type=pa.int32()) if name in schemas.RUN_END_COLUMNS else column


def _constant(name: str, value: Any, length: int) -> pa.Array:
    """``length`` times ``value``, run-end encoded: one run."""
    return pa.RunEndEncodedArray.from_arrays(pa.array([length], pa.int32()), _plain([_sent(name, value)], _value_type(name)))


def _plain(values: Sequence[Any], kind: pa.DataType) -> pa.Array:
    """A column of ``kind``; integers past its width as their decimal text (see the module doc)."""
    try:
        return pa.array(values, kind)
    except (OverflowError, pa.ArrowInvalid):
        if not pa.types.is_integer(kind):
            raise
        return pa.array([None if value is None else str(value) for value in values], pa.string())


def _over(memory: pa.Buffer, name: str, length: int) -> pa.Array:
    """The column ``name`` over ``memory`` (its ``length`` values; codec ids as the indices of
    :data:`CODEC_LABELS`)."""
    if name == "compression":
        return pa.DictionaryArray.from_arrays(pa.Array.from_buffers(pa.int8(), length, [None, memory]), CODEC_LABELS)
    return pa.Array.from_buffers(_TYPES[name], length, [None, memory])


def run_values(parts: Sequence[pa.RecordBatch], per_value: int) -> Iterator[tuple[pa.RecordBatch, bytes]]:
    """One task's summary columns (its parts in log order) cut into runs of up to ``per_value``
    rows: each run's record batch and its Arrow IPC stream (its schema, then the one record
    batch). Parts of one schema that meet in a run are joined (a memcpy per column)."""
    window: list[pa.RecordBatch] = []
    size = 0
    for part in parts:
        start = 0
        while start < part.num_rows:
            if window and (size == per_value or part.schema != window[0].schema):
                yield _stream(_joined(window))
                window, size = [], 0
            piece = part.slice(start, per_value - size)
            window.append(piece)
            size, start = size + piece.num_rows, start + piece.num_rows
    if window:
        yield _stream(_joined(window))


def _joined(window: list[pa.RecordBatch]) -> pa.RecordBatch:
    """Parts of one task and one schema as one record batch, its constants one run each."""
    if len(window) == 1:
        return window[0]
    first, length = window[0], sum(part.num_rows for part in window)
    arrays = []
    for name in _NAMES:
        column = first.column(name)
        if name in schemas.RUN_END_COLUMNS:
            value = column.values.slice(column.find_physical_offset(), 1)
            arrays.append(pa.RunEndEncodedArray.from_arrays(pa.array([length], pa.int32()), value))
        else:
            arrays.append(pa.concat_arrays([part.column(name) for part in window]))
    return pa.RecordBatch.from_arrays(arrays, schema=first.schema)


def _stream(batch: pa.RecordBatch) -> tuple[pa.RecordBatch, bytes]:
    sink = pa.BufferOutputStream()
    # The options given: the writer's default reads two environment variables per stream.
    with pa.ipc.RecordBatchStreamWriter(sink, batch.schema, options=pa.ipc.IpcWriteOptions()) as writer:
        writer.write_batch(batch)
    return batch, sink.getvalue().to_pybytes()


def read_value(value: pa.Buffer | bytes) -> Iterator[pa.RecordBatch]:
    """The record batches of one run's IPC stream (read in place from ``value``)."""
    return iter(pa.ipc.open_stream(value))


def summary_runs(batch: pa.RecordBatch) -> Iterator[BatchSummary | SummaryColumns]:
    """The summaries of a record batch of one task's summary columns, in its order: one
    :class:`SummaryColumns` (each column copied once, no Python object per batch), or, for a run
    with a value only text holds (decimal text, a codec label of its own), its tuples."""
    run = _run_of(batch)
    return summaries_of(batch) if run is None else iter((run,))


def _run_of(batch: pa.RecordBatch) -> SummaryColumns | None:
    length = batch.num_rows
    if not length or not batch.schema.equals(schemas.SUMMARY_COLUMNS):
        return None
    head = [_only(name, batch.column(i)) for i, name in enumerate(_CONSTANTS)]
    if None in head:
        return None
    memory = []
    for index, (name, _, width, _) in enumerate(LAYOUT, len(_CONSTANTS)):
        column = batch.column(index)
        if name == "compression":
            if not column.dictionary.equals(CODEC_LABELS):
                return None
            column = column.indices
        if column.null_count:
            return None
        memory.append(memoryview(column.buffers()[1])[column.offset * width : (column.offset + length) * width])
    end = batch.column(_POSITION)[length - 1].as_py() + batch.column(_SIZE)[length - 1].as_py()
    topic, partition, segment, base = head
    return SummaryColumns(topic, partition, segment, base, BatchColumns(b"".join(memory), length, end))


def _only(name: str, column: pa.Array) -> Any:
    """The one value of a constant column (a run-end column of one run), None if it has more."""
    if column.find_physical_length() != 1:
        return None
    value = column.values[column.find_physical_offset()].as_py()
    if name in schemas.NAME_COLUMNS and value is not None:
        return value.decode("utf-8", "surrogateescape")
    return value


def summaries_of(batch: pa.RecordBatch) -> Iterator[BatchSummary]:
    """The summaries of a record batch of summary columns, in its order: each column made Python
    values at once (``to_pylist``; a run-end column as its runs), the tuples zipped from them."""
    length = batch.num_rows
    columns = [_values(name, batch.column(name), length) for name in BatchSummary._fields]
    return map(_new, repeat(BatchSummary), zip(*columns))


def _values(name: str, column: pa.Array, length: int) -> Iterator[Any] | list[Any]:
    if not pa.types.is_run_end_encoded(column.type):
        return _python(name, column)
    first, count = column.find_physical_offset(), column.find_physical_length()
    values = _python(name, column.values.slice(first, count))
    if count == 1:
        return repeat(values[0], length)
    ends = [min(end - column.offset, length) for end in column.run_ends.slice(first, count).to_pylist()]
    return chain.from_iterable(repeat(value, end - start) for value, start, end in zip(values, [0, *ends], ends))


def _python(name: str, column: pa.Array) -> list[Any]:
    if pa.types.is_string(column.type) and pa.types.is_integer(_value_type(name)):
        return [None if value is None else int(value) for value in column.to_pylist()]
    if pa.types.is_dictionary(column.type) and not column.null_count:
        # A few words (the codecs) over many rows: each word made once, the rows pointing at it.
        return list(map(_python(name, column.dictionary).__getitem__, column.indices.to_pylist()))
    if name in schemas.BOOL_COLUMNS:
        column = column.cast(pa.bool_())
    values = column.to_pylist()
    if name in schemas.NAME_COLUMNS:
        return [None if value is None else value.decode("utf-8", "surrogateescape") for value in values]
    return values


def dataset_rows(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The ``batches`` dataset's typed rows (``schemas.SUMMARIES``) of a record batch of summary
    columns: run-end columns decoded, names as dataset text (:func:`schemas.name_text`)."""
    arrays = []
    for field in schemas.SUMMARIES:
        column = batch.column(field.name)
        encoded = pa.types.is_run_end_encoded(column.type)
        values = column.values if encoded else column
        if field.name in schemas.NAME_COLUMNS:
            text = [None if value is None else value.decode("utf-8", "backslashreplace") for value in values.to_pylist()]
            values = pa.array(text, pa.string())
        if encoded:
            whole = pa.RunEndEncodedArray.from_arrays(column.run_ends, values)
            values = pc.run_end_decode(whole.slice(column.offset, len(column)))
        arrays.append(values.cast(field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schemas.SUMMARIES)
