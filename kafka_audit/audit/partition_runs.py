"""The partition step's runs of batches as columns (:class:`SummaryColumns`, the compiled walk's):
the batches the fast path (:class:`~kafka_audit.rules.replay.replay_runs.RunTaker`) takes are
never made Python objects; the others go on, one :class:`BatchSummary` each, to the per-summary
path of ``partition_audit``, which produces every finding and event.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kafka_audit.audit.segment_coverage import Coverage
from kafka_audit.audit.segment_indexes import SegmentFiles
from kafka_audit.record.batch_walk import COLUMN_NAMES
from kafka_audit.rules.batch_summary import BatchSummary, RunSlice, SummaryColumns
from kafka_audit.rules.partition.offset_continuity import OffsetContinuity
from kafka_audit.rules.replay.replay_runs import RunTaker


class PartitionRuns:
    """One partition's items (summaries and runs) as the summaries the per-summary path still
    needs; ``buffered``: the current segment's buffer, which the per-summary path rebinds at each
    segment and the fast path adds what it takes to."""

    def __init__(
        self, live: dict[str, SegmentFiles], replayed_elsewhere: frozenset[str], taker: RunTaker, coverage: Coverage,
        continuity: OffsetContinuity,
    ) -> None:
        """``replayed_elsewhere``: the segments whose batches the per-summary path does not replay
        (remote segments below a local log's start)."""
        self.live, self.apart, self.taker, self.coverage = live, replayed_elsewhere, taker, coverage
        self.continuity = continuity
        self.buffered: list[BatchSummary | RunSlice] = []

    def summaries(self, items: Iterable[BatchSummary | SummaryColumns]) -> Iterator[BatchSummary]:
        """The summaries the fast path leaves, in log order; each is yielded before the fast path
        looks at the next batch, so it sees the state the per-summary path left."""
        for item in items:
            if not isinstance(item, SummaryColumns):
                yield item
                continue
            if item.segment not in self.live or item.segment in self.apart:
                yield from item
                continue
            columns = item.batches.columns()
            yield from self._run(item, columns, dict(zip(COLUMN_NAMES, columns)))

    def _run(self, run: SummaryColumns, columns: list[memoryview], named: dict[str, memoryview]) -> Iterator[BatchSummary]:
        """The run's batches the fast path does not take (its first in a segment, at least)."""
        count = len(run)
        coverage, continuity, take = self.coverage, self.continuity, self.taker.take
        index = 0
        while index < count:
            current, previous = coverage.current, continuity.previous
            if current is not None and current.segment == run.segment and previous is not None and not continuity.unreadable:
                taken = take(run, columns, index, coverage.end, previous.last_offset)
                if taken > index:
                    self.buffered.append(RunSlice(run, index, taken))
                    coverage.end = named["position"][taken - 1] + named["size"][taken - 1]
                    continuity.previous = _row(run, columns, taken - 1)  # offsets rise through the batches taken
                    index = taken
                    if index == count:
                        return
            yield _row(run, columns, index)
            index += 1


def _row(run: SummaryColumns, columns: list[memoryview], index: int) -> BatchSummary:
    return run.summary(tuple(column[index] for column in columns))
