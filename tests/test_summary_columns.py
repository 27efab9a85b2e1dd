"""Batch summaries as Arrow columns (engines/summary_columns.py): the Spark job's transport gives
back every summary, field for field and type for type, and the ``batches`` dataset's rows."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kafka_audit.audit.plan import plan_tasks
from kafka_audit.audit.segment_audit import SegmentAuditor
from kafka_audit.engines import schemas
from kafka_audit.engines.job_rows import (
    PendingValues,
    batch_runs,
    batch_summaries,
    expand_batches,
    segment_row_batch,
    task_rows,
)
from kafka_audit.engines.summary_columns import (
    read_value,
    run_values,
    runs_columns,
    summary_columns,
    summary_runs,
)
from kafka_audit.log.log_dir import discover
from kafka_audit.record.batch_walk import COLUMNS, ROW_BYTES, BatchColumns
from kafka_audit.rules.batch_summary import BatchSummary, SummaryColumns
from kafka_audit.rules.findings import Finding
from kafka_audit.rules.validation.log_validator import ValidationConfig
from tests.conftest import FIXTURES
from tests.support.fixture_summaries import segment_summaries


def _through_the_job(summaries: list[BatchSummary], per_value: int = 4_096) -> list[BatchSummary]:
    rows = list(task_rows([3], [summary_columns(summaries)], per_value, schemas.BATCH))
    return list(batch_summaries(iter([segment_row_batch(rows)])))


def _exactly(summaries: list[BatchSummary]) -> list[tuple]:
    """Each field with its type: True and 1 are equal, but not the same summary."""
    return [tuple((type(value), value) for value in s) for s in summaries]


def test_the_columns_are_the_summary_fields_the_walk_columns_last():
    """Every BatchSummary field travels; the compiled walk's columns in its order and widths."""
    assert sorted(schemas.SUMMARY_COLUMNS.names) == sorted(BatchSummary._fields)
    walk = [(name, {"q": 8, "i": 4, "h": 2, "b": 1}[code]) for name, code in COLUMNS]
    sent = [(f.name, f.type.index_type.byte_width if name == "compression" else f.type.byte_width)
            for f, (name, _) in zip(list(schemas.SUMMARY_COLUMNS)[-len(COLUMNS):], COLUMNS)]
    assert sent == walk
    assert schemas.SUMMARY_COLUMNS.names[: len(schemas.RUN_END_COLUMNS)] == list(SummaryColumns.__slots__[:4])


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
    rows = list(task_rows([1], [summary_columns(summaries)], 7, schemas.BATCH))
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
    rows = list(task_rows([1], [summary_columns(summaries[-1:])], 4_096, schemas.BATCH))
    (expanded,) = expand_batches(iter([segment_row_batch(rows)]))
    assert expanded.column("topic").to_pylist() == ["t\\xff"]
    assert expanded.column("segment").to_pylist() == ["t\\xff-2/\\xe9.log"]
    assert rows[0][3] == b"t\xff-2/\xe9.log"


def test_a_run_whose_memory_is_not_its_columns_is_refused():
    with pytest.raises(ValueError, match="bytes of columns"):
        runs_columns([SummaryColumns("t", 0, "t-0/0.log", 0, BatchColumns(bytes(ROW_BYTES + 1), 1, 0))])


def test_tasks_sent_together_come_back_each_to_its_places():
    """Several tasks' summaries made columns at once (PendingValues): each task's own rows, keyed
    by its first summary, to each place it goes to, in its kind."""
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


def _task_items(log_dir, kinds: str) -> list[list[BatchSummary | SummaryColumns]]:
    """The segment step's summaries and compiled runs (``run(columns=True)``) of each task of
    ``log_dir`` whose items hold each of ``kinds`` ("R" a run, "t" a tuple)."""
    found = []
    for task in plan_tasks(discover([str(log_dir)])):
        items = [i for i in SegmentAuditor(task, ValidationConfig()).run(columns=True) if not isinstance(i, Finding)]
        present = {"R" if isinstance(i, SummaryColumns) else "t" for i in items}
        if present >= set(kinds):
            found.append(items)
    return found


def _flat(items) -> list[BatchSummary]:
    return [s for item in items for s in ((item,) if isinstance(item, BatchSummary) else item)]


def _hostile_run() -> SummaryColumns:
    """Summaries every column of which holds an edge: offsets near 2^63, negative fields, names
    that are not UTF-8, each codec id (the compiled walk makes no such run; its columns can)."""
    summaries = [
        _hostile(61 * i, codec)._replace(last_offset=2**63 - 1 - i, base_sequence=-(2**31), producer_epoch=-1,
                                         control_type=-32768, coordinator_epoch=-(2**31), record_count=-3,
                                         partition_leader_epoch=-(2**31), crc=2**32 - 1 - i, magic=-128,
                                         valid=i % 2 == 0, is_control=True, crc_valid=i % 3 == 0)
        for i, codec in enumerate(["none", "gzip", "snappy", "lz4", "zstd", "unknown(5)", "unknown(7)", "zstd"])
    ]
    return SummaryColumns.of_summaries(summaries)


def test_a_run_goes_to_arrow_as_its_memory_and_comes_back_equal():
    """A compiled run's columns are wrapped, not copied; the partition step gets back one
    SummaryColumns equal to it (each column copied once), and the same summaries."""
    runs = [item for items in _task_items(FIXTURES / "producer-errors", "R") for item in items
            if isinstance(item, SummaryColumns)]
    for run in [*runs, _hostile_run()]:
        batch = runs_columns([run])
        for name, _ in COLUMNS:
            column = batch.column(name)
            wrapped = column.indices if name == "compression" else column
            assert wrapped.buffers()[1].address == pa.py_buffer(run.batches.column(name)).address, name
        assert batch.schema == schemas.SUMMARY_COLUMNS
        (back,) = summary_runs(batch)
        assert back == run
        (_, value), = run_values([batch], 4_096)
        (read,) = read_value(value)
        (again,) = summary_runs(read)
        assert again == run and _exactly(list(again)) == _exactly(list(run))


def test_an_empty_run_sends_no_value():
    empty = runs_columns([SummaryColumns("t", 0, "t-0/0.log", 0, BatchColumns(b"", 0, 0))])
    assert empty.num_rows == 0 and list(summary_runs(empty)) == []
    assert list(run_values([empty], 4)) == []
    pending = PendingValues()
    pending.add([1], [SummaryColumns("t", 0, "t-0/0.log", 0, BatchColumns(b"", 0, 0))])
    assert len(pending) == 0 and pending.rows() == []


@pytest.mark.parametrize("per_value", [1, 2, 3, 4_096])
def test_runs_and_tuples_of_a_task_travel_together_in_log_order(per_value):
    """A task's compiled runs and the Python walk's tuples between them: values of up to
    ``per_value`` join the parts they span, and come back as the same summaries in order."""
    tasks = _task_items(FIXTURES / "faulty", "Rt")
    assert len(tasks) > 3
    for items in tasks:
        tuples = [item for item in items if isinstance(item, BatchSummary)]
        converted = summary_columns(tuples)
        parts, start = [], 0
        for item in items:
            if isinstance(item, SummaryColumns):
                parts.append(runs_columns([item]))
            else:
                parts.append(converted.slice(start, 1))
                start += 1
        rows = list(task_rows([4, 6], parts, per_value, schemas.BATCH))
        expected = _flat(items)
        assert len(rows) == 2 * -(-len(expected) // per_value)
        for place in (4, 6):
            mine = [row for row in rows if row[1] == place]
            assert [row[4] for row in mine] == [s.position for s in expected[::per_value]]
            back = list(batch_runs(iter([segment_row_batch(mine)])))
            assert all(isinstance(item, SummaryColumns) for item in back)
            assert _exactly(_flat(back)) == _exactly(expected)


def test_pending_values_send_runs_and_tuples_of_each_task():
    """PendingValues with the segment step's items (runs and tuples): each task's summaries in
    order to each of its places; the ``batches`` dataset's rows are the tuples' rows."""
    tasks = _task_items(FIXTURES / "faulty", "Rt")[:3] + _task_items(FIXTURES / "producer-errors", "R")[:2]
    pending = PendingValues()
    for place, items in enumerate(tasks):
        pending.add([place], items)
    assert len(pending) == sum(len(_flat(items)) for items in tasks)
    rows = pending.rows()
    for place, items in enumerate(tasks):
        batch = segment_row_batch([row for row in rows if row[1] == place])
        assert _exactly(list(batch_summaries(iter([batch])))) == _exactly(_flat(items))
        expanded = pa.Table.from_batches(list(expand_batches(iter([batch]))))
        typed = schemas.batches_table(_flat(items))
        assert expanded.schema == schemas.SUMMARIES
        for name in schemas.BATCHES.names:
            column = expanded.column("compression" if name == "codec" else name)
            assert column.to_pylist() == typed.column(name).to_pylist(), name



def test_runs_of_several_tasks_are_joined_and_each_comes_back_one_run():
    """Runs sent together are one batch (each column's memory joined); a task whose walk gave
    two runs in a row, and two tasks of one segment (a split one: the same constants), each come
    back as one SummaryColumns of exactly its summaries."""
    runs = [item for items in _task_items(FIXTURES / "producer-errors", "R") for item in items
            if isinstance(item, SummaryColumns) and len(item) > 1]
    assert len(runs) > 2
    first = list(runs[0])
    halves = [SummaryColumns.of_summaries(first[:1]), SummaryColumns.of_summaries(first[1:])]
    tasks = [halves, [runs[1]], [runs[1]], [_hostile_run()], runs[2:]]
    pending = PendingValues()
    for place, items in enumerate(tasks):
        pending.add([place], items)
    joined = runs_columns([run for items in tasks for run in items])
    assert joined.num_rows == len(pending) and joined.schema == schemas.SUMMARY_COLUMNS
    rows = pending.rows()
    for place, items in enumerate(tasks):
        back = list(batch_runs(iter([segment_row_batch([row for row in rows if row[1] == place])])))
        assert all(isinstance(item, SummaryColumns) for item in back)
        assert _exactly(_flat(back)) == _exactly(_flat(items))
    assert [len(item) for item in batch_runs(iter([segment_row_batch([r for r in rows if r[1] == 0])]))] == [len(first)]


def test_a_codec_label_no_codec_id_has_travels_as_text():
    """The walks only make the labels of codec ids 0-7; any other text still comes back as it was."""
    summaries = [_hostile(0, "zstd"), _hostile(61, "br\u00f6tli")._replace(last_offset=9)]
    assert _exactly(_through_the_job(summaries)) == _exactly(summaries)
