"""The local engine (``scan --engine local``): the plan's steps one after another in this process,
with no JVM; the reference the Spark job must agree with, and the audit core of the tests, the
benchmarks and the fuzz script. Nothing of pyspark is imported here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain

from kafka_audit.audit.partition_audit import PartitionTotals, audit_partition
from kafka_audit.audit.plan import ScanPlan, log_order
from kafka_audit.audit.replica_sets import ReplicaSets
from kafka_audit.audit.results import Progress, ScanResult
from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.audit.segment_audit import SegmentAuditor
from kafka_audit.audit.segment_task import SegmentStats, with_read_ahead
from kafka_audit.engines.engine import OnProgress, audit_with
from kafka_audit.log.discovery import Discovery
from kafka_audit.rules.batch_summary import BatchSummary, SummaryColumns, flatten
from kafka_audit.rules.findings import Finding

# Per replica key, each segment task's batch summaries (runs of them as columns, as the compiled
# walk yields them) under where the task stands in the log.
_Summaries = dict[tuple, list[tuple[tuple, list[BatchSummary | SummaryColumns]]]]


@dataclass(frozen=True, slots=True)
class LocalEngine:
    """The audit in this process; the segment step's runs of batches go to the partition step as
    columns. ``on_batches`` gets each task's batch summaries (the ``batches`` dataset); ``on_progress`` is called after each segment task and partition replica."""

    on_batches: Callable[[list[BatchSummary]], None] | None = None

    def audit(self, plan: ScanPlan, on_progress: OnProgress | None = None) -> ScanResult:
        progress = plan.progress()
        stats = SegmentStats()
        findings: list[Finding] = []
        summaries: _Summaries = {key: [] for key in plan.metas}
        validations = plan.options.validations
        storage = plan.discovery.storage
        for task in with_read_ahead(plan.tasks, storage):
            auditor = SegmentAuditor(task, validations.of(task.replica), plan.options.reference_time, storage)
            batches: list[BatchSummary | SummaryColumns] = []
            for item in auditor.run(columns=True):
                if isinstance(item, (BatchSummary, SummaryColumns)):
                    batches.append(item)
                else:
                    findings.append(item)
            summaries[task.replica_key].append((log_order(task), batches))
            stats.merge(auditor.stats)
            if self.on_batches is not None:
                self.on_batches(list(flatten(batches)))
            progress.segments_done += 1
            progress.bytes_done += task.byte_count
            if on_progress is not None:
                on_progress(progress)
        totals = _partition_steps(plan, summaries, findings, progress, on_progress)
        return plan.finish(stats, totals, findings)


def _partition_steps(
    plan: ScanPlan, summaries: _Summaries, findings: list[Finding], progress: Progress, on_progress: OnProgress | None
) -> PartitionTotals:
    """Each replica's partition step on its summaries in log order, then the replica sets' step
    (SPEC section 6); their findings added to ``findings``, their totals merged."""
    totals = PartitionTotals()
    held = ReplicaSets(plan.options.validation.is_compacted)
    for key, meta in plan.metas.items():
        in_log_order = chain.from_iterable(batches for _, batches in sorted(summaries[key], key=lambda t: t[0]))
        partition_findings, partition_totals = audit_partition(meta, in_log_order, plan.discovery.storage)
        findings.extend(partition_findings)
        if not held.hold(partition_totals):
            totals.merge(partition_totals)
        progress.partitions_done += 1
        if on_progress is not None:
            on_progress(progress)
    held.finish(totals, findings)
    return totals


def audit_in_process(
    discovery: Discovery,
    options: ScanOptions,
    on_progress: OnProgress | None = None,
    on_batches: Callable[[list[BatchSummary]], None] | None = None,
) -> ScanResult:
    """The whole audit in this process (:class:`LocalEngine`)."""
    return audit_with(LocalEngine(on_batches), discovery, options, on_progress)
