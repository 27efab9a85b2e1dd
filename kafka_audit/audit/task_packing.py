"""Segment tasks dealt into a distributed engine's tasks ("slots") by the CPU they are expected to
cost, and the replicas small enough to be audited whole inside one slot.

A segment's audit costs about the same per batch whatever its codec or batch size (1 GiB bench
dir, in-process, CPU per batch: 44 us uncompressed 19 KB batches, 42 us LZ4 8 KB, 32 us zstd and
markers 2.6 KB; per GB the same topics cost 2.3, 5.3 and 12.6 s), so bytes alone deal a slot of
small zstd batches five times the work of a slot of large plain ones. The expected cost is
:data:`BATCH_CPU_S` per batch plus :data:`BYTE_CPU_S` per byte, the batch count being the task's
bytes over its replica's mean batch size, read from the first batch headers of the replica's
largest local segment (:func:`~kafka_audit.record.batch_density.mean_batch_bytes`; an object in a
store is not read for it: a producer's default ``batch.size`` is assumed).

A replica whose expected cost is at most half a slot's share is *whole*: all its tasks go to one
slot, which then also runs its partition step (offsets, indexes, producer-state replay) on the
summaries it made, so they never leave the task. A larger replica's tasks are dealt one by one
and its partition step runs after the engine's shuffle, in log order.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass

from kafka_audit.audit.segment_task import SegmentTask
from kafka_audit.io import storage
from kafka_audit.record.batch_density import mean_batch_bytes

# Fitted on the 1 GiB bench dir (bench/engines.py data), in-process: ~35 us per batch, 0.3 s per GB.
BATCH_CPU_S = 35e-6
BYTE_CPU_S = 0.3e-9
# The producer's default batch.size (ProducerConfig): the batch size assumed where none is read.
DEFAULT_BATCH_BYTES = 16384


@dataclass(slots=True)
class Packing:
    """Each slot's segment tasks (heaviest slot first) and the replicas audited whole in one."""

    groups: list[list[SegmentTask]]
    whole: frozenset[tuple]


def batch_bytes_by_replica(tasks: Iterable[SegmentTask]) -> dict[tuple, float]:
    """Each replica's mean batch size, from the first headers of its largest local segment."""
    largest: dict[tuple, SegmentTask] = {}
    for task in tasks:
        known = largest.get(task.replica_key)
        if known is None or task.file.size > known.file.size:
            largest[task.replica_key] = task
    sizes = {}
    for key, task in largest.items():
        segment = task.file
        mean = None if storage.is_remote(segment.path) else mean_batch_bytes(storage.local_path(segment.path), segment.size)
        sizes[key] = mean or DEFAULT_BATCH_BYTES
    return sizes


def expected_cpu_s(task: SegmentTask, batch_bytes: float) -> float:
    """The CPU seconds a task's audit is expected to cost (see the module docstring)."""
    return task.byte_count / batch_bytes * BATCH_CPU_S + task.byte_count * BYTE_CPU_S


def pack_tasks(tasks: list[SegmentTask], slots: int, batch_bytes: dict[tuple, float] | None = None) -> Packing:
    """Deal ``tasks`` into at most ``slots`` groups of about equal expected CPU: whole replicas
    as one unit, the tasks of larger replicas one by one; the costliest unit first, each to the
    lightest group (longest processing time first), so that thousands of small segments do not
    cost a Spark task each. ``batch_bytes``: :func:`batch_bytes_by_replica` (read when None)."""
    if batch_bytes is None:
        batch_bytes = batch_bytes_by_replica(tasks)
    by_replica: dict[tuple, list[SegmentTask]] = {}
    for task in tasks:
        by_replica.setdefault(task.replica_key, []).append(task)
    cost = {task: expected_cpu_s(task, batch_bytes.get(task.replica_key, DEFAULT_BATCH_BYTES)) for task in tasks}
    count = max(1, min(slots, len(tasks)))
    share = sum(cost.values()) / count
    units: list[tuple[float, list[SegmentTask]]] = []
    whole = set()
    for key, members in by_replica.items():
        replica_cost = sum(cost[t] for t in members)
        if count == 1 or replica_cost <= share / 2:
            whole.add(key)
            units.append((replica_cost, members))
        else:
            units.extend((cost[t], [t]) for t in members)
    groups: list[tuple[float, int, list[SegmentTask]]] = [(0.0, i, []) for i in range(count)]
    heapq.heapify(groups)
    for unit_cost, members in sorted(units, key=lambda u: (-u[0], u[1][0].replica_key, u[1][0].file.display_path, u[1][0].start)):
        load, number, held = heapq.heappop(groups)
        held.extend(members)
        heapq.heappush(groups, (load + unit_cost, number, held))
    ordered = [held for _, _, held in sorted(groups, key=lambda g: -g[0]) if held]
    return Packing(ordered, frozenset(whole))
