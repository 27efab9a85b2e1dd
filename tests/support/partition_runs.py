"""The partition step fed runs of batches as columns, to hold it equal to the per-summary step
(tests/test_partition_columns.py): the segment step's own runs (:func:`partition_items`), and any
summaries cut into runs (:func:`as_runs`)."""

from __future__ import annotations

import random
from typing import Any

from kafka_audit.audit.log_dir_facts import with_inferred_compaction
from kafka_audit.audit.partition_audit import PartitionMeta
from kafka_audit.audit.plan import log_order, partition_metas, plan_tasks
from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.audit.segment_audit import SegmentAuditor
from kafka_audit.log.log_dir import discover
from kafka_audit.rules.batch_summary import BatchSummary, SummaryColumns, flatten

Item = BatchSummary | SummaryColumns


def partition_items(paths: list[str], options: ScanOptions | None = None) -> list[tuple[PartitionMeta, list[Item]]]:
    """Each partition's meta and its items in log order as the local engine passes them (the
    compiled walk's runs as columns, the other batches as summaries)."""
    found = discover(paths)
    options = with_inferred_compaction(options or ScanOptions(), found)
    metas = partition_metas(found, options)
    parts: dict[Any, list] = {key: [] for key in metas}
    for task in plan_tasks(found, options.split_bytes):
        auditor = SegmentAuditor(task, options.validation, options.reference_time)
        items = [i for i in auditor.run(columns=True) if isinstance(i, (BatchSummary, SummaryColumns))]
        parts[task.replica_key].append((log_order(task), items))
    return [
        (meta, [i for _, items in sorted(parts[key], key=lambda t: t[0]) for i in items])
        for key, meta in metas.items()
    ]


def as_runs(items: list[Item], rng: random.Random, longest: int = 40) -> list[Item]:
    """The same summaries, cut at random into runs of one segment (of 1 to ``longest`` batches,
    built with ``SummaryColumns.of_summaries``), some left as summaries."""
    summaries = list(flatten(items))
    out: list[Item] = []
    at = 0
    while at < len(summaries):
        size = rng.randint(1, longest)
        chunk = [summaries[at]]
        while len(chunk) < size and at + len(chunk) < len(summaries) and summaries[at + len(chunk)].segment == chunk[0].segment:
            chunk.append(summaries[at + len(chunk)])
        at += len(chunk)
        if rng.random() < 0.15:
            out.extend(chunk)
        else:
            out.append(SummaryColumns.of_summaries(chunk))
    return out
