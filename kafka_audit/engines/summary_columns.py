"""Batch summaries as Arrow columns, the way the Spark job moves them: a segment task's summaries
as one record batch of ``schemas.SUMMARY_COLUMNS`` (a column per ``BatchSummary`` field, under its
name), cut into runs that travel as Arrow IPC streams, and read back as the partition step's
summaries (:func:`summaries_of`) or as the ``batches`` dataset's typed rows (:func:`dataset_rows`).

:func:`columns_batch` is the one seam between the segment step's output and the transport. Each
field comes as a per-task constant (one run), a sequence of values, or a buffer of the field's
width (``array.array``, NumPy, a compiled walk's memory), which is wrapped without a copy. The
columns a task holds constant (``schemas.RUN_END_COLUMNS``) are run-end encoded. Names from the
file system are bytes (Python's surrogate escapes undone, and restored on the way back).

An integer no int64 holds (a hostile v2 header's base offset near 2^63 plus its last offset delta)
travels as its decimal text in that run's column and comes back as the same int: a run's schema
travels with it, so the partition step sees exactly the values the segment step made.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import chain, repeat
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafka_audit.engines import schemas
from kafka_audit.rules.batch_summary import BatchSummary

_NAMES = tuple(schemas.SUMMARY_COLUMNS.names)
_TYPES = {f.name: f.type for f in schemas.SUMMARY_COLUMNS}
# The summary columns with names as text: a task's tuples converted by Arrow at once.
_AS_TEXT = pa.struct([pa.field(f.name, pa.string()) if f.name in schemas.NAME_COLUMNS else f for f in schemas.SUMMARY_COLUMNS])
# tuple.__new__ with BatchSummary: a summary made without a Python call per batch.
_new = tuple.__new__


def summary_columns(summaries: Sequence[BatchSummary]) -> pa.RecordBatch:
    """A segment task's summaries, as the segment step yields them (a tuple each), as columns:
    converted by Arrow a row at a time (no Python call per summary), then the columns a task
    holds constant made runs. A name that is not UTF-8 or an integer past int64 has no place
    in that conversion: such a task's columns are made one at a time (:func:`columns_batch`)."""
    try:
        rows = pa.array(summaries, _AS_TEXT)
    except (OverflowError, UnicodeError, pa.ArrowInvalid):
        columns: Mapping[str, Any] = dict(zip(_NAMES, zip(*summaries))) if summaries else dict.fromkeys(_NAMES, ())
        return columns_batch(columns, len(summaries))
    return columns_batch({name: _settled(name, rows.field(name)) for name in _NAMES}, len(summaries))


def _settled(name: str, column: pa.Array) -> pa.Array:
    """A column of the row-wise conversion as it travels: names as bytes, a column a task holds
    constant as its runs (one per task)."""
    if name in schemas.NAME_COLUMNS:
        column = column.cast(pa.binary())
    return pc.run_end_encode(column, run_end_type=pa.int32()) if name in schemas.RUN_END_COLUMNS else column


def columns_batch(columns: Mapping[str, Any], length: int) -> pa.RecordBatch:
    """``length`` summaries as a record batch of ``schemas.SUMMARY_COLUMNS``'s fields, each given
    as an Arrow array, a constant (str, int or bool: one run), a list or tuple of values, or a
    buffer of the field's width (a byte per bool), wrapped without a copy (bools are packed)."""
    arrays = [_column(name, columns[name], length) for name in _NAMES]
    # Text that changes from row to row (the codec of mixed batches) travels as a dictionary.
    arrays = [
        array.dictionary_encode() if array.type == _TYPES[name] == pa.string() else array for name, array in zip(_NAMES, arrays)
    ]
    return pa.RecordBatch.from_arrays(arrays, names=list(_NAMES))


def _column(name: str, values: Any, length: int) -> pa.Array:
    if isinstance(values, pa.Array):
        return values
    if isinstance(values, str | int):  # bool is an int
        return _constant(name, values, length)
    if not isinstance(values, list | tuple):
        return _wrapped(values, _TYPES[name], length)
    # A column the task holds constant is one run (tuple.count: no Python call per value).
    if name in schemas.RUN_END_COLUMNS and values and values.count(values[0]) == length:
        return _constant(name, values[0], length)
    if name in schemas.NAME_COLUMNS:
        values = [schemas.name_bytes(value) if isinstance(value, str) else value for value in values]
    return _plain(values, _TYPES[name])


def _constant(name: str, value: Any, length: int) -> pa.Array:
    """``length`` times ``value``, run-end encoded (no run when empty)."""
    if name in schemas.NAME_COLUMNS and isinstance(value, str):
        value = schemas.name_bytes(value)
    ends, values = ([length], [value]) if length else ([], [])
    return pa.RunEndEncodedArray.from_arrays(pa.array(ends, pa.int32()), _plain(values, _TYPES[name]))


def _plain(values: Sequence[Any], kind: pa.DataType) -> pa.Array:
    """A column of ``kind``; integers past its width as their decimal text (see the module doc)."""
    try:
        return pa.array(values, kind)
    except (OverflowError, pa.ArrowInvalid):
        if not pa.types.is_integer(kind):
            raise
        return pa.array([None if value is None else str(value) for value in values], pa.string())


def _wrapped(values: Any, kind: pa.DataType, length: int) -> pa.Array:
    """A buffer of ``length`` values of ``kind``'s width as an Arrow array over the same memory."""
    view = memoryview(values).cast("B")
    width = 1 if kind == pa.bool_() else kind.byte_width
    if view.nbytes != length * width:
        raise ValueError(f"a column of {length} values of {kind} needs {length * width} bytes, not {view.nbytes}")
    if kind == pa.bool_():
        return pa.Array.from_buffers(pa.uint8(), length, [None, pa.py_buffer(view)]).cast(pa.bool_())
    return pa.Array.from_buffers(kind, length, [None, pa.py_buffer(view)])


def run_values(batch: pa.RecordBatch, per_value: int) -> Iterator[tuple[int, bytes]]:
    """The batch cut into runs of up to ``per_value`` rows: each run's first row and its Arrow
    IPC stream (its schema, then the one record batch)."""
    for start in range(0, batch.num_rows, per_value):
        sink = pa.BufferOutputStream()
        part = batch.slice(start, per_value)
        with pa.ipc.new_stream(sink, part.schema) as writer:
            writer.write_batch(part)
        yield start, sink.getvalue().to_pybytes()


def read_value(value: pa.Buffer | bytes) -> Iterator[pa.RecordBatch]:
    """The record batches of one run's IPC stream (read in place from ``value``)."""
    return iter(pa.ipc.open_stream(value))


def summaries_of(batch: pa.RecordBatch) -> Iterator[BatchSummary]:
    """The summaries of a record batch of summary columns, in its order: each column made Python
    values at once (``to_pylist``; a run-end column as its runs), the tuples zipped from them."""
    length = batch.num_rows
    columns = [_values(name, batch.column(name), length) for name in _NAMES]
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
    if pa.types.is_string(column.type) and pa.types.is_integer(_TYPES[name]):
        return [None if value is None else int(value) for value in column.to_pylist()]
    if pa.types.is_dictionary(column.type) and not column.null_count:
        # A few words (the codecs) over many rows: each word made once, the rows pointing at it.
        return list(map(_python(name, column.dictionary).__getitem__, column.indices.to_pylist()))
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
