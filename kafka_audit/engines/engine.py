"""What every engine is to the audit (:class:`AuditEngine`): it takes one :class:`ScanPlan`, runs
the plan's steps (each segment task through ``SegmentAuditor``, each replica's summaries in log
order through ``audit_partition``, each replica set through ``ReplicaSets``) however it
distributes them, and calls ``plan.finish`` once with what they found. :func:`audit_with` plans a
scan and hands it to an engine: ``engines/local.py`` in this process, ``engines/spark_job.py`` on Spark.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from kafka_audit.audit.plan import ScanPlan
from kafka_audit.audit.results import Progress, ScanResult
from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.log.discovery import Discovery

# Called as the steps progress (the progress display); both engines call it with the same counts.
OnProgress = Callable[[Progress], None]


class AuditEngine(Protocol):
    """Runs a planned scan's steps and finishes it (``plan.finish``) into its result."""

    def audit(self, plan: ScanPlan, on_progress: OnProgress | None = None) -> ScanResult: ...


def audit_with(
    engine: AuditEngine, discovery: Discovery, options: ScanOptions, on_progress: OnProgress | None = None
) -> ScanResult:
    """Plan the audit of everything ``discovery`` found, once, and run it on ``engine``."""
    return engine.audit(ScanPlan.build(discovery, options), on_progress)
