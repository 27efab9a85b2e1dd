"""The partition step fed runs of batches as columns gives exactly what it gives fed one summary
per batch.

``audit_partition`` takes a :class:`SummaryColumns` run's batches with nothing to report in its
fast path (rules/replay/replay_runs.py) and gives the others to the per-summary path. On the
fixtures, every bundled corpus, the bench's 4 MiB log dir and generated logs that mix producers,
epoch bumps, sequence gaps, duplicates, transactions, markers, invalid batches, expiry, holes in
the bytes and the offsets and compacted topics, the findings, the totals (producers, transaction
counts, producer rows, events) and the replay's final producer states and counts must be the same
both ways, whether the runs are the compiled walk's or cut at random from the summaries.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_audit.audit import partition_audit
from kafka_audit.audit.partition_audit import PartitionMeta, audit_partition
from kafka_audit.audit.segment_indexes import SegmentFiles
from kafka_audit.record.record_batch import ControlRecordType
from kafka_audit.rules.batch_summary import BatchSummary, RunSlice, SummaryColumns, flatten
from kafka_audit.rules.partition.index_check import SegmentBatches
from kafka_audit.rules.replay.partition_replay import ReplaySettings
from kafka_audit.rules.replay.replay_runs import RunTaker
from tests.conftest import FIXTURES
from tests.support.audit_run import corpus_dir
from tests.support.partition_paths import RecordedReplay, states
from tests.support.partition_runs import Item, as_runs, partition_items

BENCH_4MB = Path(__file__).resolve().parent.parent / "bench" / "data" / "log-dir-4mb"


def _audited(monkeypatch: pytest.MonkeyPatch, meta: PartitionMeta, items: list[Item]) -> tuple:
    """The partition step's findings, totals, and its replay's final states and counts."""
    RecordedReplay.made.clear()
    with monkeypatch.context() as patch:
        patch.setattr(partition_audit, "ProducerStateReplay", RecordedReplay)
        findings, totals = audit_partition(meta, iter(items))
    (replay,) = RecordedReplay.made
    return findings, totals, states(replay), replay.stats


def _same_with_columns(
    monkeypatch: pytest.MonkeyPatch, meta: PartitionMeta, items: list[Item], seed: int = 0, timeline: bool = True
) -> None:
    """The step on ``items``, and on the same summaries cut into other runs, equals the step on
    the summaries one by one; with ``timeline``, also with timeline events."""
    meta.replay = replace(meta.replay, timeline=False)
    expected = _audited(monkeypatch, meta, list(flatten(items)))
    assert _audited(monkeypatch, meta, items) == expected
    assert _audited(monkeypatch, meta, as_runs(items, random.Random(seed))) == expected
    if timeline:
        meta.replay = replace(meta.replay, timeline=True)
        assert _audited(monkeypatch, meta, items) == _audited(monkeypatch, meta, list(flatten(items)))
        meta.replay = replace(meta.replay, timeline=False)


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many batches the fast path took (one count, summed over every call)."""
    count = [0]
    take = RunTaker.take

    def counted(self, run, columns, start, end, prev_last):
        stop = take(self, run, columns, start, end, prev_last)
        count[0] += stop - start
        return stop

    monkeypatch.setattr(RunTaker, "take", counted)
    return count


def _same_on(monkeypatch: pytest.MonkeyPatch, paths: list[str], timeline: bool = True) -> int:
    """Every partition of ``paths`` both ways; the number of batches."""
    batches = 0
    for seed, (meta, items) in enumerate(partition_items(paths)):
        _same_with_columns(monkeypatch, meta, items, seed, timeline)
        batches += sum(len(item) if isinstance(item, SummaryColumns) else 1 for item in items)
    return batches


@pytest.mark.parametrize("name", ["healthy", "faulty", "producer-errors"])
def test_fixtures(monkeypatch, taken, name):
    batches = _same_on(monkeypatch, [str(FIXTURES / name)])
    assert 0 < taken[0] < 3 * batches  # the fast path took batches (with the timeline: none)


@pytest.mark.parametrize("corpus", ["real-broker", "real-broker-4", "real-broker-4-live", "real-broker-replicas"])
def test_bundled_corpora(monkeypatch, taken, corpus):
    for folder in sorted(p for p in corpus_dir(corpus).iterdir() if p.is_dir()):
        # The live copies' preallocated indexes are slow to parse: timeline events (the per-summary
        # path either way) are compared on the other inputs.
        _same_on(monkeypatch, [str(folder)], timeline=corpus != "real-broker-4-live")
    assert taken[0] > 0


def test_real_broker_probes(monkeypatch):
    cases = corpus_dir("real-broker-probes") / "cases"
    for folder in sorted(p for p in cases.iterdir() if p.is_dir()):
        _same_on(monkeypatch, [str(folder)])


def test_real_corpus(monkeypatch):
    for folder in sorted(p for p in corpus_dir("real").iterdir() if p.is_dir()):
        _same_on(monkeypatch, [str(folder)])


@pytest.mark.skipif(not BENCH_4MB.is_dir(), reason="bench/data/log-dir-4mb not generated (bench/datagen.py)")
def test_bench_log_dir(monkeypatch, taken):
    batches = _same_on(monkeypatch, [str(BENCH_4MB)])
    assert taken[0] > batches  # most batches, each way


# -- generated logs ---------------------------------------------------------------------------------

_ACTIONS = (
    "data", "data", "data", "txn", "txn", "commit", "abort", "gap", "duplicate", "bump", "zombie", "invalid",
    "plain", "offset_hole", "byte_hole", "idle", "empty_control", "roll", "coordinator_regression",
)
_PIDS = (7, 8, 9)


class _Log:
    """A partition's batch summaries written step by step (a producer's state per id)."""

    def __init__(self) -> None:
        self.summaries: list[BatchSummary] = []
        self.segments: dict[str, SegmentFiles] = {}
        self.producers: dict[int, list] = {}  # pid -> [epoch, next sequence, coordinator epoch]
        self.offset, self.position, self.timestamp = 0, 0, 1_000
        self.segment = ""
        self._roll()

    def _roll(self) -> None:
        self.segment = f"t-0/{self.offset:020d}.log"
        self.segments[self.segment] = SegmentFiles(self.segment, self.offset, size=0)
        self.position = 0

    def add(self, pid: int, records: int, *, valid: bool = True, transactional: bool = False,
            control_type: int = -1, shift: int = 0) -> None:
        """One batch of ``pid`` (-1: no producer id); ``shift`` moves its sequence off the next."""
        epoch, sequence, coordinator = self.producers.setdefault(pid, [0, 0, 0]) if pid >= 0 else (-1, -1, -1)
        control = control_type != -1 or records == 0
        records = 1 if control else records
        first = -1 if control or pid < 0 else sequence + shift
        last_seq = -1 if first < 0 else first + records - 1
        size = 61 + 10 * records
        self.summaries.append(BatchSummary(
            "t", 0, self.segment, self.segments[self.segment].base_offset, self.position, self.offset,
            self.offset + records - 1, 2, valid, pid, epoch, first, last_seq, transactional, control, control_type,
            coordinator, self.timestamp, records, size,
        ))
        if pid >= 0 and not control:
            self.producers[pid][1] = last_seq + 1
        self.offset += records
        self.position += size
        self.timestamp += 3
        files = self.segments[self.segment]
        self.segments[self.segment] = SegmentFiles(files.segment, files.base_offset, size=self.position)

    def step(self, action: str, pid: int, n: int) -> None:  # noqa: C901, PLR0912  # one branch per action
        state = self.producers.setdefault(pid, [0, 0, 0])
        records = 1 + n % 3
        if action in ("data", "txn"):
            self.add(pid, records, transactional=action == "txn")
        elif action in ("commit", "abort"):
            if n % 4 == 3:
                state[0] += 1  # a TV2 coordinator's bump with the marker
            marker = ControlRecordType.COMMIT if action == "commit" else ControlRecordType.ABORT
            self.add(pid, 0, transactional=True, control_type=marker)
        elif action == "gap":
            self.add(pid, records, shift=1 + n)
        elif action == "duplicate":
            self.add(pid, records, shift=-records)
        elif action == "bump":
            state[0], state[1] = state[0] + 1, 0 if n % 2 else n
            self.add(pid, records)
        elif action == "zombie":
            state[0] -= 1
            self.add(pid, records)
            state[0] += 1
        elif action == "invalid":
            self.add(pid, records, valid=False)
        elif action == "plain":
            self.add(-1, records)
        elif action == "offset_hole":
            self.offset += 1 + n
        elif action == "byte_hole":
            self.position += 5
        elif action == "idle":
            self.timestamp += 200_000
        elif action == "empty_control":
            self.add(pid, 0, control_type=5)
        elif action == "roll":
            self._roll()
        else:  # coordinator_regression: the coordinator epoch of the producer's markers goes back
            state[2] = n % 2


_STEPS = st.lists(
    st.tuples(st.sampled_from(_ACTIONS), st.sampled_from(_PIDS), st.integers(0, 5)), min_size=1, max_size=60
)


@settings(max_examples=500, deadline=None)
@given(_STEPS, st.booleans(), st.integers(0, 2**16))
def test_generated_logs(steps, compacted, seed):
    log = _Log()
    for pid in _PIDS:  # each producer known before the steps, so that most batches can be taken
        log.add(pid, 1)
    for action, pid, n in steps:
        log.step(action, pid, n)
    meta = PartitionMeta(
        "t", 0, log_start_offset=0,
        replay=ReplaySettings(transaction_timeout_ms=60_000, compacted=compacted, producer_id_expiration_ms=100_000),
        segments={name: files for name, files in log.segments.items() if files.size},
    )
    with pytest.MonkeyPatch.context() as patch:
        _same_with_columns(patch, meta, as_runs(log.summaries, random.Random(seed), longest=12), seed)


@settings(max_examples=200, deadline=None)
@given(_STEPS, st.integers(0, 2**16))
def test_segment_batches_of_slices_equal_those_of_summaries(steps, seed):
    """The index verification's view of a segment is the same from slices of runs (invalid
    batches and base offsets out of order among them) as from the summaries."""
    log = _Log()
    for action, pid, n in steps:
        log.step(action, pid, n)
    rng = random.Random(seed)
    summaries = [s for s in log.summaries if s.segment == log.summaries[0].segment] if log.summaries else []
    if len(summaries) > 2 and rng.random() < 0.5:
        at = rng.randrange(1, len(summaries))
        summaries[at - 1], summaries[at] = summaries[at], summaries[at - 1]
    parts: list = []
    for item in as_runs(summaries, rng, longest=6):
        if isinstance(item, SummaryColumns):
            start = rng.randrange(len(item))
            parts.extend([RunSlice(item, 0, start), RunSlice(item, start, len(item))] if start else [RunSlice(item, 0, len(item))])
        else:
            parts.append(item)
    expected, got = SegmentBatches.of(summaries), SegmentBatches.of(parts)
    for name in ("by_position", "base_offsets", "last_offsets", "max_timestamps", "ends", "count", "end_offset"):
        assert getattr(got, name) == getattr(expected, name)
    assert [got.summary(i) for i in range(len(got.base_offsets))] == [expected.summary(i) for i in range(len(expected.base_offsets))]
