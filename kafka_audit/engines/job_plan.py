"""Where the Spark job's work goes, decided on the driver: the segment tasks as rows of
``schemas.TASKS`` (:func:`task_table`), and the segments whose index checks run in a group of
their own beside their replica's replay (:func:`index_checks`, :func:`check_buckets`)."""

from __future__ import annotations

import pickle
from collections import Counter
from typing import Any

import pyarrow as pa

from kafka_audit.audit.partition_audit import PartitionMeta
from kafka_audit.audit.segment_indexes import IndexCheck
from kafka_audit.audit.segment_task import SegmentTask
from kafka_audit.engines import schemas


def index_checks(tasks: list[SegmentTask], whole: frozenset, metas: dict[tuple, PartitionMeta]) -> dict[tuple, IndexCheck]:
    """The live segments cut into several tasks of replicas replayed after the shuffle: their
    index checks run in a group of their own, beside the replica's replay rather than inside it
    (a 1 GiB segment's indexes cost about a third of its replica's partition step)."""
    ranges = Counter((task.replica_key, task.file.display_path) for task in tasks if task.replica_key not in whole)
    checks = {}
    for (key, segment), count in sorted(ranges.items()):
        meta = metas[key]
        if count > 1 and segment in meta.segments:
            checks[(key, segment)] = IndexCheck(
                meta.topic, meta.partition, meta.segments[segment], meta.storage_options, meta.empty_objects
            )
    return checks


def check_buckets(checks: dict[tuple, IndexCheck], buckets: dict[tuple, int], count: int) -> list[int]:
    """A partition-step partition for each index check: the least loaded by replicas and checks
    so far, never its own replica's (they run side by side)."""
    load = Counter(buckets.values())
    chosen = []
    for key, _ in checks:
        bucket = min((b for b in range(count) if b != buckets.get(key, 0)), key=lambda b: (load[b], b))
        load[bucket] += 1
        chosen.append(bucket)
    return chosen


def task_table(groups: list[list[SegmentTask]], places: dict[tuple, int], whole: dict[tuple, Any]) -> pa.Table:
    """The tasks as rows of ``schemas.TASKS``, each group's under its slot (the group's index): a
    whole replica's PartitionMeta on its first task, and on each task of a segment whose indexes
    are checked apart, that check's place."""
    name = schemas.name_bytes
    rows = []
    for slot, group in enumerate(groups):
        for task in group:
            meta = whole.pop(task.replica_key, None)
            rows.append((
                slot, places[task.replica_key], name(task.topic), task.partition, name(task.replica),
                pickle.dumps(task.file), task.start, task.stop, task.newest,
                None if meta is None else pickle.dumps(meta),
                places.get((task.replica_key, task.file.display_path)),
            ))
    columns = zip(*rows) if rows else [()] * len(schemas.TASKS)
    return pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schemas.TASKS)], schema=schemas.TASKS)
