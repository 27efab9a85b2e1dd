"""Batch summaries as Arrow columns (engines/summary_columns.py): the Spark job's transport gives
back every summary, field for field and type for type, and the ``batches`` dataset's rows."""

from __future__ import annotations

from array import array

import pyarrow as pa
import pytest

from kafka_audit.engines import schemas
from kafka_audit.engines.job_rows import batch_summaries, expand_batches, segment_row_batch, value_rows
from kafka_audit.engines.summary_columns import columns_batch, summary_columns
from kafka_audit.rules.batch_summary import BatchSummary
from tests.conftest import FIXTURES
from tests.support.fixture_summaries import segment_summaries


def _through_the_job(summaries: list[BatchSummary], per_value: int = 4_096) -> list[BatchSummary]:
    rows = list(value_rows(3, summary_columns(summaries), per_value=per_value))
    return list(batch_summaries(iter([segment_row_batch(rows)])))


def _exactly(summaries: list[BatchSummary]) -> list[tuple]:
    """Each field with its type: True and 1 are equal, but not the same summary."""
    return [tuple((type(value), value) for value in s) for s in summaries]


def test_the_columns_are_the_summary_fields_in_order():
    assert schemas.SUMMARY_COLUMNS.names == list(BatchSummary._fields)
    assert set(BatchSummary._fields) >= schemas.RUN_END_COLUMNS


@pytest.mark.parametrize("name", ["faulty", "producer-errors", "healthy"])
def test_every_fixture_summary_comes_back_field_for_field(name):
    segments = segment_summaries(FIXTURES / name)
    assert sum(map(len, segments)) > 10
    for summaries in segments:
        back = _through_the_job(summaries, per_value=5)
        assert _exactly(back) == _exactly(summaries)
        assert all(type(s) is BatchSummary for s in back)


def test_the_batches_dataset_rows_are_those_of_the_summaries():
    summaries = [s for segment in segment_summaries(FIXTURES / "faulty") for s in segment]
    rows = list(value_rows(1, summary_columns(summaries), per_value=7))
    expanded = pa.Table.from_batches(list(expand_batches(iter([segment_row_batch(rows)]))))
    typed = schemas.batches_table(summaries)
    assert expanded.schema == schemas.SUMMARIES
    for name in schemas.BATCHES.names:
        assert expanded.column("compression" if name == "codec" else name).to_pylist() == typed.column(name).to_pylist()


def _hostile(position: int, compression: str) -> BatchSummary:
    return BatchSummary._make((
        "t\udcff", 2, "t\udcff-2/\udce9.log", 0, position, 2**63 - 1, 2**63 + 2**31 - 2, 2, True, -(2**63), -32768,
        2**31 - 1, -5, True, False, -1, -1, -(2**63), 2**31 - 1, 61, compression, False, -1, 2**32 - 1,
    ))


def test_names_that_are_not_utf8_and_offsets_past_int64_come_back():
    """A hostile header's base offset plus its delta passes 2^63; a folder's name is any bytes."""
    summaries = [_hostile(61 * i, codec) for i, codec in enumerate(["zstd", "zstd", "none", "lz4", "lz4"])]
    summaries.append(summaries[0]._replace(last_offset=7, position=400))
    for per_value in (1, 2, 6):
        assert _exactly(_through_the_job(summaries, per_value)) == _exactly(summaries)
    rows = list(value_rows(1, summary_columns(summaries[-1:])))
    (expanded,) = expand_batches(iter([segment_row_batch(rows)]))
    assert expanded.column("topic").to_pylist() == ["t\\xff"]
    assert expanded.column("segment").to_pylist() == ["t\\xff-2/\\xe9.log"]
    assert rows[0][3] == b"t\xff-2/\xe9.log"


def test_columns_given_as_buffers_are_wrapped_without_a_copy():
    """A compiled walk's columns (a buffer per field, the task's constants once) travel as they are."""
    summaries = segment_summaries(FIXTURES / "producer-errors")[0]
    fields = list(zip(*summaries))
    codes = {"b": pa.int8(), "h": pa.int16(), "i": pa.int32(), "q": pa.int64()}
    by_type = {kind: code for code, kind in codes.items()}
    columns = {}
    for name, values in zip(BatchSummary._fields, fields):
        kind = schemas.SUMMARY_COLUMNS.field(name).type
        if name in ("topic", "partition", "segment", "segment_base_offset"):
            columns[name] = values[0]
        elif name == "compression":
            columns[name] = list(values)
        elif kind == pa.bool_():
            columns[name] = array("b", values)
        else:
            columns[name] = array(by_type[kind], values)
    batch = columns_batch(columns, len(summaries))
    position = columns["position"]
    assert batch.column("position").buffers()[1].address == position.buffer_info()[0]
    assert pa.types.is_run_end_encoded(batch.column("topic").type)
    rows = list(value_rows(0, batch, per_value=4))
    assert _exactly(list(batch_summaries(iter([segment_row_batch(rows)])))) == _exactly(summaries)
    with pytest.raises(ValueError, match="needs"):
        columns_batch({**columns, "size": array("i", [1])}, len(summaries))


def test_tasks_sent_together_come_back_each_to_its_places():
    """Several tasks' summaries made columns at once (PendingValues): each task's own rows, keyed
    by its first summary, to each place it goes to, in its kind."""
    from kafka_audit.engines.job_rows import PendingValues

    found = segment_summaries(FIXTURES / "producer-errors") + segment_summaries(FIXTURES / "faulty")
    tasks = [summaries for summaries in found if summaries][:4]
    assert len(tasks) == 4
    pending = PendingValues()
    pending.add([1], tasks[0])
    pending.add([2, 9], tasks[1])
    pending.add([3], [])
    pending.add([4], tasks[2], kind=schemas.KEPT_BATCH)
    pending.add([5], tasks[3])
    assert len(pending) == sum(map(len, tasks))
    rows = pending.rows()
    assert len(pending) == 0 and pending.rows() == []
    by_place: dict[int, list[tuple]] = {}
    for row in rows:
        by_place.setdefault(row[1], []).append(row)
    expected = {1: tasks[0], 2: tasks[1], 9: tasks[1], 4: tasks[2], 5: tasks[3]}
    assert set(by_place) == set(expected)
    for place, summaries in expected.items():
        first = summaries[0]
        kind, _, base, segment, position, _, _ = by_place[place][0]
        assert (kind, base, segment, position) == (
            schemas.KEPT_BATCH if place == 4 else schemas.BATCH, first.segment_base_offset,
            schemas.name_bytes(first.segment), first.position,
        )
        back = list(batch_summaries(iter([segment_row_batch(by_place[place])])))
        assert _exactly(back) == _exactly(summaries)
