"""The partition step's fast paths give exactly what its slow paths give.

``audit_partition`` shares the replay's written state with the client's until the client first
rejects a batch the log holds, builds timeline events only when asked, skips the general offset
rule for a batch that follows the previous one and parses index files in bulk
(tests/support/partition_paths.py names the slow path of each). On the bundled fixtures (fencing,
duplicates, coordinator fencing, compaction, damage), the real-broker corpora, broker-log joins
and seeded byte damage, every partition must give the same findings, totals, timeline events and
final producer states both ways.
"""

from __future__ import annotations

import random
import shutil
import struct
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_audit.audit import partition_audit
from kafka_audit.audit.partition_audit import audit_partition
from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.io.broker_log import read_broker_logs
from kafka_audit.log import index_files
from kafka_audit.log.index_files import OFFSET_INDEX, TIME_INDEX
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.partition.offset_continuity import OffsetContinuity
from tests.conftest import FIXTURES
from tests.support.audit_run import corpus_dir
from tests.support.partition_paths import (
    EagerReplay,
    RecordedReplay,
    parse_index_entry_by_entry,
    partition_inputs,
    slow_paths,
    states,
)


def _corpus_dirs(name: str) -> list[Path]:
    root = corpus_dir(name)
    return sorted(p for p in root.iterdir() if p.is_dir())


def _same_both_ways(monkeypatch: pytest.MonkeyPatch, paths: list[str], options: ScanOptions | None = None) -> int:
    """Audit every partition of ``paths`` fast (timeline off and on) and slow; assert they agree.
    Returns the number of findings, so that callers can tell the inputs exercised something."""
    findings = 0
    for meta, summaries in partition_inputs(paths, options):
        meta.replay = replace(meta.replay, timeline=False)
        RecordedReplay.made.clear()
        with monkeypatch.context() as patch:
            patch.setattr(partition_audit, "ProducerStateReplay", RecordedReplay)
            fast, fast_totals = audit_partition(meta, iter(summaries))
        (lazy,) = RecordedReplay.made
        meta.replay = replace(meta.replay, timeline=True)
        timed, timed_totals = audit_partition(meta, iter(summaries))
        EagerReplay.made.clear()
        with slow_paths(monkeypatch):
            slow, slow_totals = audit_partition(meta, iter(summaries))
        (eager,) = EagerReplay.made
        assert fast == slow
        assert timed == slow
        assert fast_totals.events == []
        assert timed_totals.events == slow_totals.events
        for totals in (fast_totals, timed_totals):
            totals.events = slow_totals.events
            assert totals == slow_totals
        assert states(lazy) == states(eager)
        assert lazy.stats == eager.stats
        findings += len(slow)
    return findings


@pytest.mark.parametrize("name, findings", [("healthy", False), ("faulty", True), ("producer-errors", True)])
def test_fixtures(monkeypatch, name, findings):
    assert (_same_both_ways(monkeypatch, [str(FIXTURES / name)]) > 0) == findings


def test_fixtures_with_broker_log(monkeypatch):
    options = ScanOptions(broker_log=read_broker_logs([str(FIXTURES / "broker-logs" / "producer-errors.server.log")]))
    assert _same_both_ways(monkeypatch, [str(FIXTURES / "producer-errors")], options) > 0


def test_fencing_fixtures_fork_the_written_state(monkeypatch):
    """The fixtures where the client rejects a batch the log holds do fork the written state
    (so the comparison above covers a fork, not only the shared state)."""
    forked = []
    for name in ("fenced-epoch-write-0", "duplicate-sequence-0", "coordinator-epoch-regression-0"):
        for meta, summaries in partition_inputs([str(FIXTURES / "faulty" / name)]):
            RecordedReplay.made.clear()
            with monkeypatch.context() as patch:
                patch.setattr(partition_audit, "ProducerStateReplay", RecordedReplay)
                audit_partition(meta, iter(summaries))
            forked += [len(replay.producers.states()) == 2 for replay in RecordedReplay.made]
    assert forked == [True, True, True]
    (meta, summaries), *_ = partition_inputs([str(FIXTURES / "healthy")])
    RecordedReplay.made.clear()
    with monkeypatch.context() as patch:
        patch.setattr(partition_audit, "ProducerStateReplay", RecordedReplay)
        audit_partition(meta, iter(summaries))
    assert len(RecordedReplay.made[0].producers.states()) == 1


@pytest.mark.parametrize("corpus", ["real", "real-broker"])
def test_real_broker_corpora(monkeypatch, corpus):
    for folder in _corpus_dirs(corpus):
        _same_both_ways(monkeypatch, [str(folder)])


def test_real_broker_probes(monkeypatch):
    cases = corpus_dir("real-broker-probes") / "cases"
    for folder in sorted(p for p in cases.iterdir() if p.is_dir()):
        _same_both_ways(monkeypatch, [str(folder)])


@pytest.mark.parametrize("seed", range(6))
def test_damaged_copies(monkeypatch, tmp_path, seed):
    """Seeded byte damage in segments, indexes and snapshots of a real broker's transactions and
    of the producer-error fixtures: whatever the damage, both ways agree."""
    rng = random.Random(seed)
    sources = [corpus_dir("real-broker") / "transactions", FIXTURES / "producer-errors"]
    source = sources[seed % len(sources)]
    copy = tmp_path / "copy"
    shutil.copytree(source, copy)
    files = sorted(p for p in copy.rglob("*") if p.suffix in (".log", ".index", ".timeindex", ".snapshot") and p.stat().st_size)
    for path in rng.sample(files, min(len(files), 6)):
        data = bytearray(path.read_bytes())
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            data[at] = rng.randrange(256)
        if rng.random() < 0.3:
            del data[rng.randrange(len(data)) :]
        path.write_bytes(bytes(data))
    _same_both_ways(monkeypatch, [str(copy)])


_INDEX_DATA = st.one_of(
    st.binary(max_size=200),
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 3)), max_size=20).map(
        lambda pairs: b"".join(struct.pack(">ii", a, b) for a, b in pairs)
    ),
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 6)), max_size=20).map(
        lambda pairs: b"".join(struct.pack(">qi", a, b) for a, b in pairs)
    ),
)


@settings(max_examples=400, deadline=None)
@given(_INDEX_DATA, st.integers(0, 2**40), st.one_of(st.none(), st.integers(-2, 25)), st.binary(max_size=11))
def test_index_parsing_in_bulk_equals_entry_by_entry(data, base_offset, max_entries, tail):
    for index in (OFFSET_INDEX, TIME_INDEX):
        for raw in (data, data + tail):
            fast = index.parse(raw, base_offset, "x", max_entries)
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(index_files, "parse_index", parse_index_entry_by_entry)
                slow = index.parse(raw, base_offset, "x", max_entries)
            assert (fast.entries, fast.problems, fast.preallocated_bytes) == (
                slow.entries,
                slow.problems,
                slow.preallocated_bytes,
            )


def _summary(base: int, last: int, valid: bool, magic: int, segment_base: int) -> BatchSummary:
    return BatchSummary("t", 0, "s", segment_base, 0, base, last, magic, valid, -1, -1, -1, -1, False, False, -1, -1, -1, 1, 70)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([1, 1, 1, 0, 2, 5, -1, -3]),  # base offset - the previous last offset
            st.integers(-1, 4),  # last offset - base offset
            st.sampled_from([True, True, True, False]),
            st.sampled_from([2, 2, 1]),
            st.integers(-2, 2),  # segment base offset - base offset
        ),
        max_size=25,
    ),
    st.booleans(),
)
def test_offset_continuity_shortcut_equals_the_rule(batches, compacted):
    fast, slow = OffsetContinuity(compacted), OffsetContinuity(compacted)
    last = -1
    for step, length, valid, magic, segment_delta in batches:
        base = last + step
        batch = _summary(base, base + length, valid, magic, base + segment_delta)
        assert fast.observe(batch) == slow.judge(batch)
        last = max(last, base + length)
