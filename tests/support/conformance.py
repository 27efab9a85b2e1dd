"""Kafka's producer-state tests as offline logs: a scenario is a list of batches written with the
fixture writer into one partition; :meth:`Scenario.run` audits the log end to end
(``audit_in_process``) and also replays it to expose the producer state Kafka's tests assert on.

Kafka's ``assertThrows`` on an append becomes a log whose last batch is that append (the probe):
the audit must report the error on it, as the broker answers a produce request.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from kafka_audit.audit.log_dir_facts import with_inferred_compaction
from kafka_audit.audit.partition_audit import PartitionMeta
from kafka_audit.audit.plan import plan_tasks
from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.audit.segment_audit import SegmentAuditor
from kafka_audit.engines.local import audit_in_process
from kafka_audit.log.log_dir import discover
from kafka_audit.log.producer_snapshot import read_producer_snapshot
from kafka_audit.log.transaction_index import read_transaction_index
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.findings import Finding
from kafka_audit.rules.replay.partition_replay import PartitionLog, ProducerStateReplay
from tests.support.partition_paths import states
from tests.support.writer import (
    TS_BASE,
    BatchSpec,
    ControlSpec,
    LogDirWriter,
    ProducerState,
    RecordSpec,
)

ABORT, COMMIT = 0, 1
_RUNS = itertools.count()


@dataclass
class Outcome:
    findings: list[Finding]
    replay: ProducerStateReplay
    offsets: list[int]

    def on(self, offset: int) -> list[Finding]:
        return [f for f in self.findings if offset in (f.batch_base_offset, f.offset)]

    def errors(self) -> list[tuple[str, int | None, int | None]]:
        """(check, error code, offset) of every error finding."""
        return [(f.check, f.error_code, f.offset) for f in self.findings if f.severity == "error"]

    def checks(self) -> list[str]:
        return [f.check for f in self.findings]

    def entry(self, pid: int):
        """The producer's state as the leader holds it after the log (AppendOrigin.CLIENT)."""
        return self.replay.producers.client.get(pid)

    def written(self, pid: int):
        """The producer's state as a follower / log recovery rebuilds it (AppendOrigin.REPLICATION)."""
        return self.replay.producers.written.get(pid)

    @property
    def last(self) -> int:
        return self.offsets[-1]


@dataclass
class Scenario:
    """Batches for one partition. ``ts`` None: the writer's clock (one second per batch)."""

    tmp_path: Path
    topic: str = "test"
    start_offset: int = 0
    snapshots: dict[int, list[ProducerState]] = field(default_factory=dict)
    batches: list[BatchSpec] = field(default_factory=list)
    # offset -> bytes transform applied to that .snapshot file after writing (damage).
    damage: dict[int, Callable[[bytes], bytes]] = field(default_factory=dict)

    def data(self, pid: int, epoch: int, seq: int, count: int = 1, *, txn: bool = False, ts: int | None = None) -> Scenario:
        records = tuple(RecordSpec(key=b"k%d" % i, value=b"v") for i in range(count))
        self.batches.append(
            BatchSpec(records=records, producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=txn,
                      base_timestamp=ts)
        )
        return self

    def marker(self, pid: int, epoch: int, control_type: int, coordinator_epoch: int = 0, *, ts: int | None = None) -> Scenario:
        self.batches.append(
            BatchSpec(control=ControlSpec(control_type, coordinator_epoch), producer_id=pid, producer_epoch=epoch,
                      transactional=True, base_timestamp=ts)
        )
        return self

    def raw(self, spec: BatchSpec) -> Scenario:
        self.batches.append(spec)
        return self

    def snapshot(self, offset: int, entries: list[ProducerState]) -> Scenario:
        self.snapshots[offset] = entries
        return self

    def then(self, *probes) -> Outcome:
        """Run with extra batches appended (each a callable taking this scenario)."""
        clone = Scenario(
            self.tmp_path, self.topic, self.start_offset, dict(self.snapshots), list(self.batches), dict(self.damage)
        )
        for probe in probes:
            probe(clone)
        return clone.run()

    def run(self, args: ScanOptions | None = None) -> Outcome:
        root = self.tmp_path / f"run{next(_RUNS)}"
        with LogDirWriter(root, snapshots=False) as d:
            w = d.partition(self.topic, 0, start_offset=self.start_offset, clock=TS_BASE)
            if self.start_offset:
                w.log_start_offset = self.start_offset
            offsets = [w.append(spec).base_offset for spec in self.batches]
            w.snapshots.update(self.snapshots)
        for offset, transform in self.damage.items():
            path = root / f"{self.topic}-0" / f"{offset:020d}.snapshot"
            path.write_bytes(transform(path.read_bytes()))
        options = args or ScanOptions()
        discovery = discover([str(root)])
        findings = audit_in_process(discovery, options).findings
        return Outcome(findings, _replay(discovery, with_inferred_compaction(options, discovery)), offsets)


def _replay(discovery, options: ScanOptions) -> ProducerStateReplay:
    """The replay the partition step runs, kept to read its state."""
    (found,) = discovery.partitions
    meta = PartitionMeta.from_discovery(found, options)
    summaries: list[BatchSummary] = []
    for task in sorted(plan_tasks(discovery, options.split_bytes), key=lambda t: (t.file.base_offset, t.start)):
        summaries.extend(i for i in SegmentAuditor(task, options.validation).run() if isinstance(i, BatchSummary))
    log = PartitionLog(
        meta.topic,
        meta.partition,
        meta.log_start_offset,
        snapshots=[read_producer_snapshot(path) for path, _ in meta.snapshots],
        aborted_txns={
            files.segment: read_transaction_index(files.txn_index).entries
            for files in meta.segments.values()
            if files.txn_index
        },
        settings=replace(meta.replay, timeline=True),  # the tests read its events
    )
    replay = ProducerStateReplay(log)
    # The same replay with its written state forked before the first batch (both states run
    # every batch): the lazy fork must end in the same states and findings.
    eager = ProducerStateReplay(log)
    eager.producers.fork_written()
    for summary in summaries:
        replay.append(summary)
        eager.append(summary)
    assert replay.finish() == eager.finish()
    assert states(replay) == states(eager)
    return replay
