"""The batch summaries the segment step makes of a log dir's segment tasks, as the engines plan them."""

from __future__ import annotations

from pathlib import Path

from kafka_audit.audit.plan import plan_tasks
from kafka_audit.audit.segment_audit import SegmentAuditor
from kafka_audit.log.log_dir import discover
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.validation.log_validator import ValidationConfig


def segment_summaries(log_dir: Path) -> list[list[BatchSummary]]:
    """Per segment task of ``log_dir``, its summaries (tasks in plan order)."""
    return [
        [item for item in SegmentAuditor(task, ValidationConfig()).run() if isinstance(item, BatchSummary)]
        for task in plan_tasks(discover([str(log_dir)]))
    ]
