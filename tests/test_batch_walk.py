"""The compiled batch walk (``_batch_walk.c``) gives exactly what the Python walk gives.

The segment step with and without the compiled walk: the same findings, summaries and counts, on
the fixtures, every bundled corpus and a few thousand mutated segments (seeded). The compiled
walk's columns equal the columns built in Python from the Python walk's summaries
(``SummaryColumns.of_summaries``: what a process without the extension builds).
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

import crc32c
import pytest

from kafka_audit.audit import segment_audit
from kafka_audit.audit.log_dir_facts import with_inferred_compaction
from kafka_audit.audit.plan import plan_tasks
from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.audit.segment_audit import SegmentAuditor
from kafka_audit.audit.segment_task import SegmentTask
from kafka_audit.log.log_dir import discover
from kafka_audit.record import _batch_walk, batch_walk
from kafka_audit.record.batch_records import max_decompressed_size
from kafka_audit.record.batch_walk import COLUMNS, BatchColumns
from kafka_audit.record.byte_stream import STREAM_BOUND
from kafka_audit.record.file_records import FileRecords
from kafka_audit.record.record_batch import V2_ATTRIBUTES_OFFSET, V2_CRC_OFFSET, V2_RECORDS_OFFSET, RecordBatch
from kafka_audit.rules.batch_summary import BatchSummary, SummaryColumns
from kafka_audit.rules.validation.log_validator import ValidationConfig
from tests.support.screen_options import SCREEN_OPTIONS
from tests.support.segment_tasks import segment_task
from tests.support.writer import BatchSpec, ControlSpec, encode_batch, records

REPO = Path(__file__).resolve().parent.parent
FIXTURES = sorted(p for p in (REPO / "fixtures").iterdir() if p.is_dir())
CORPORA = sorted(p for p in (REPO / "corpus").iterdir() if p.is_dir())
ROOTS = FIXTURES + CORPORA
TS = 1_700_000_000_000
OPTIONS = SCREEN_OPTIONS

pytestmark = pytest.mark.skipif(not batch_walk.COMPILED, reason="the compiled walk is not built")


def _run(task: SegmentTask, options: ScanOptions, compiled: bool, monkeypatch) -> tuple[list, object, int]:
    """One task's output and stats, with or without the compiled walk, and the batches it took."""
    taken = [0]
    fold = SegmentAuditor._fold_run

    def counted(self, run: BatchColumns):
        taken[0] += run.count
        return fold(self, run)

    with monkeypatch.context() as patch:
        patch.setattr(segment_audit, "WALK_COMPILED", compiled)
        patch.setattr(SegmentAuditor, "_fold_run", counted)
        auditor = SegmentAuditor(task, options.validation, options.reference_time)
        items = list(auditor.run())
        # The same task read as columns: its runs give the same summaries, in place.
        as_columns = SegmentAuditor(task, options.validation, options.reference_time)
        flat = [s for item in as_columns.run(True) for s in (item if isinstance(item, SummaryColumns) else (item,))]
        assert flat == items
        assert as_columns.stats == auditor.stats
    return items, auditor.stats, taken[0] // 2


def _assert_same_audit(root: Path, options: ScanOptions, split: int, monkeypatch) -> int:
    discovery = discover([str(root)])
    options = with_inferred_compaction(options, discovery)
    taken = 0
    for task in plan_tasks(discovery, split):
        fast, fast_stats, count = _run(task, options, True, monkeypatch)
        slow, slow_stats, _ = _run(task, options, False, monkeypatch)
        assert fast == slow, task.file.display_path
        assert [s.__class__ for s in fast] == [s.__class__ for s in slow]
        assert fast_stats == slow_stats, task.file.display_path
        taken += count
    return taken


@pytest.mark.parametrize("root", FIXTURES, ids=lambda p: p.name)
def test_the_compiled_walk_audits_the_fixtures_as_the_python_walk(root: Path, monkeypatch) -> None:
    # Small ranges: tasks that start mid-segment too; every set of options.
    taken = sum(_assert_same_audit(root, options, 4096, monkeypatch) for options in OPTIONS)
    if root.name != "broker-logs":  # broker log lines only: no segment
        assert taken > 0


@pytest.mark.parametrize("root", CORPORA, ids=lambda p: p.name)
def test_the_compiled_walk_audits_the_corpora_as_the_python_walk(root: Path, monkeypatch) -> None:
    assert _assert_same_audit(root, OPTIONS[0], 1 << 30, monkeypatch) > 0


@pytest.mark.parametrize("root", ROOTS, ids=lambda p: p.name)
def test_the_compiled_columns_equal_the_python_columns(root: Path, monkeypatch) -> None:
    """Each batch the C walk takes, walked from its own start: its columns are those built in
    Python from the Python walk's summary of it (SummaryColumns.of_summaries), and read back as it."""
    discovery = discover([str(root)])
    options = with_inferred_compaction(OPTIONS[0], discovery)
    runs = 0
    for task in plan_tasks(discovery, 1 << 30):
        if not Path(task.file.path).is_file():  # the fixtures' dangling link of an unreadable segment
            continue
        items, _, _ = _run(task, options, False, monkeypatch)
        summaries = {s.position: s for s in items if isinstance(s, BatchSummary)}
        walk = SegmentAuditor(task, options.validation, options.reference_time)._compiled_walk()
        with FileRecords(task.file.path) as segment:
            buf = segment.loaded()
            for position, summary in summaries.items():
                run = next(walk.runs(buf, position, position + 1, segment.size, _loaded, lambda _: segment.size), None)
                if run is None:
                    continue
                runs += 1
                assert run.count == 1
                expected = SummaryColumns.of_summaries([summary])
                assert run.data == expected.batches.data
                assert list(SummaryColumns(task.topic, task.partition, task.file.display_path, task.file.base_offset, run)) == [summary]
    if root.name != "broker-logs":
        assert runs > 0


def _loaded(start: int, stop: int) -> None:
    """The ``need`` of a buffer that holds the whole file."""


def test_the_column_layout_is_stated_once() -> None:
    assert _batch_walk.COLUMNS == COLUMNS
    assert _batch_walk.V2_RECORDS_OFFSET == V2_RECORDS_OFFSET
    assert {name for name, _ in COLUMNS} | {"topic", "partition", "segment", "segment_base_offset"} == set(
        BatchSummary._fields
    )
    # The C walk inflates up to STREAM_BOUND: the decompression cap of any batch is no lower.
    assert max_decompressed_size(RecordBatch(0, 0, 0, 2, 61, 0, True, 0, 1, 0, 0, 0, 0, -1, -1, -1)) >= STREAM_BOUND


# -- mutated segments --------------------------------------------------------------------------


def _pool() -> list[bytes]:
    """Batches of every codec and kind the walk meets."""
    rng = random.Random(34)
    out = []
    for codec in (0, 1, 2, 3, 4):
        for n in (1, 3):
            recs = records([b"v" * rng.randrange(1, 200) for _ in range(n)], keys=[b"k"] * n)
            out.append(encode_batch(BatchSpec(records=recs, codec=codec, producer_id=7, producer_epoch=0, base_sequence=0)))
            out.append(encode_batch(BatchSpec(records=recs, codec=codec, timestamp_type=1, log_append_time=TS)))
            out.append(encode_batch(BatchSpec(records=recs, codec=codec, transactional=True, producer_id=9,
                                              producer_epoch=1, base_sequence=2**31 - 2)))
    out.append(encode_batch(BatchSpec(control=ControlSpec(1, coordinator_epoch=3), transactional=True, producer_id=9,
                                      producer_epoch=1)))
    return out


_FIELDS = [(0, ">q"), (8, ">i"), (12, ">i"), (16, ">b"), (21, ">h"), (23, ">i"), (27, ">q"), (35, ">q"), (43, ">q"),
           (51, ">h"), (53, ">i"), (57, ">i")]
_VALUES = [-1, 0, 1, 2, 3, 7, 48, 49, 60, 61, 0x7F, 2**15 - 1, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63), TS]


def _mutant(rng: random.Random, pool: list[bytes]) -> bytes:
    out = bytearray()
    offset = rng.choice([0, 0, 2**63 - 5])
    for _ in range(rng.randrange(1, 5)):
        batch = bytearray(rng.choice(pool))
        struct.pack_into(">q", batch, 0, offset)
        offset = (offset + 3) % 2**63
        for _ in range(rng.choice([0, 0, 1, 2])):
            if rng.random() < 0.5:
                at, fmt = rng.choice(_FIELDS)
                size = struct.calcsize(fmt)
                value = rng.choice(_VALUES) % (1 << (8 * size))
                batch[at : at + size] = value.to_bytes(size, "big")
            else:
                batch[rng.randrange(len(batch))] = rng.randrange(256)
        if rng.random() < 0.8 and len(batch) > V2_ATTRIBUTES_OFFSET:
            struct.pack_into(">I", batch, V2_CRC_OFFSET, crc32c.crc32c(bytes(batch[V2_ATTRIBUTES_OFFSET:])))
        out += batch
    if rng.random() < 0.2:
        del out[rng.randrange(len(out)) :]
    return bytes(out)


@pytest.mark.parametrize("seed", range(4))
def test_the_compiled_walk_audits_mutated_segments_as_the_python_walk(seed: int, tmp_path: Path, monkeypatch) -> None:
    rng = random.Random(seed)
    pool = _pool()
    folder = tmp_path / "t-0"
    folder.mkdir()
    path = folder / "00000000000000000000.log"
    taken = 0
    for n in range(600):
        data = _mutant(rng, pool)
        path.write_bytes(data)
        task = segment_task("t", 0, "t-0", str(path), "t-0/0.log", 0, size=len(data), newest=n % 2 == 0)
        options = OPTIONS[n % len(OPTIONS)]
        fast, fast_stats, count = _run(task, options, True, monkeypatch)
        slow, slow_stats, _ = _run(task, options, False, monkeypatch)
        assert (fast, fast_stats) == (slow, slow_stats), data.hex()
        taken += count
    assert taken > 0


def _walk() -> batch_walk.CompiledWalk:
    return SegmentAuditor(segment_task("t", 0, "t-0", "", "s", 0), ValidationConfig(), None)._compiled_walk()


def test_a_long_run_comes_in_bounded_pieces_and_whole() -> None:
    """More batches than one run holds (its columns are bounded): the runs follow one another."""
    one = bytearray(encode_batch(BatchSpec(records=records([b"v"]), producer_id=1, producer_epoch=0, base_sequence=0)))
    n = 70_000
    segment = bytearray()
    for offset in range(n):
        struct.pack_into(">q", one, 0, offset)  # the base offset: outside the CRC
        segment += one
    runs = list(_walk().runs(bytes(segment), 0, len(segment), len(segment), _loaded, lambda _: len(segment)))
    assert len(runs) == 2
    assert sum(run.count for run in runs) == n
    assert runs[-1].position == len(segment)
    assert list(runs[1].column("base_offset"))[:2] == [runs[0].count, runs[0].count + 1]


def test_the_entry_point_reads_nothing_outside_the_buffer() -> None:
    """Positions and limits past either end of the buffer take nothing and read nothing."""
    one = encode_batch(BatchSpec(records=records([b"v"])))
    screen = _walk().screens[0]
    for start, stop, limit in [(-5, 10, 10), (0, 10**9, 10**9), (len(one) + 7, 10**9, 10**9), (0, 1, -1), (3, 4, 2)]:
        data, count, position, want = _batch_walk.walk(
            one, start, stop, limit, 10**6, STREAM_BOUND, screen, screen, None, None
        )
        expected = 1 if (start, limit) == (0, 10**9) else 0  # the one batch, read from its start
        assert (count, len(data)) == (expected, expected * batch_walk.ROW_BYTES), (start, stop, limit)
    with pytest.raises(TypeError):
        _batch_walk.walk(one, 0, 1)
