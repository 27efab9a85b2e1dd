"""The Spark job: discover, parse, shuffle, replay, collect.

1. The driver discovers the files and plans one task per segment (:func:`plan_tasks`); a
   segment much larger than the split size is cut into byte ranges at batch boundaries, so one
   huge file is not one straggler. Only paths travel to the executors.
2. Executors parse in ``mapPartitions`` (:class:`SegmentAuditor`), streaming findings,
   per-task counts and one compact :class:`BatchSummary` per batch.
3. Everything is keyed by replica (topic, partition, folder) and shuffled with
   ``repartitionAndSortWithinPartitions`` (the RDD form of repartition + sortWithinPartitions),
   so each partition replica arrives whole, in log order, at one task.
4. That task runs the partition checks (offsets, indexes, producer-state replay) in
   ``mapPartitions``; summaries stop there. Only findings and counts reach the driver.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import chain, groupby

from kafka_audit.audit import (
    Progress,
    ScanOptions,
    ScanResult,
    finish_result,
    log_order,
    pack_tasks,
    partition_metas,
    plan_tasks,
)
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.tasks.partition_audit import PartitionTotals, audit_partition
from kafka_audit.tasks.segment_audit import SegmentAuditor, SegmentStats, SegmentTask, with_read_ahead
from kafka_audit.findings import Finding
from kafka_audit.formats.log_dir import Discovery

# Row kinds; a replica's rows sort findings and counts before its batch summaries.
_FINDING, _STATS, _SUMMARY = 0, 1, 2


def run_scan(
    spark,
    discovery: Discovery,
    options: ScanOptions,
    on_progress: Callable[[Progress], None] | None = None,
) -> ScanResult:
    """Run the audit of everything ``discovery`` found on ``spark`` and return the result."""
    started = time.monotonic()
    sc = spark.sparkContext
    tasks = plan_tasks(discovery, options.split_bytes)
    meta_broadcast = sc.broadcast(partition_metas(discovery, options))
    validation = options.validation
    reference_time = options.reference_time
    segments_acc = sc.accumulator(0)
    bytes_acc = sc.accumulator(0)
    partitions_acc = sc.accumulator(0)

    def parse(groups: Iterable[list[SegmentTask]]) -> Iterator[tuple]:
        """Executor side: audit each segment task, keyed for the shuffle by replica and log order.

        A task's batch summaries travel as one row, a list of plain tuples in file order, keyed
        by where the task starts: a row per batch cost the shuffle a Python-level step per batch
        (partitioning, cloudpickle's per-object hook for the NamedTuple, the sort), about a
        quarter of the job's time. Sorting tasks by (segment base offset, segment, start) and
        concatenating their lists gives the batches in log order, as sorting batches did."""
        for task in with_read_ahead(chain.from_iterable(groups)):
            auditor = SegmentAuditor(task, validation, reference_time)
            key = task.replica_key
            summaries: list[tuple] = []
            for item in auditor.run():
                if isinstance(item, BatchSummary):
                    summaries.append(tuple(item))
                else:
                    yield (key + (_FINDING, 0, "", 0), item.to_dict())
            if summaries:
                yield (key + (_SUMMARY, *log_order(task)), summaries)
            yield (key + (_STATS, 0, "", 0), auditor.stats)
            segments_acc.add(1)
            bytes_acc.add(task.byte_count)

    def check_partitions(rows: Iterable[tuple]) -> Iterator[tuple]:
        """Executor side: a replica's rows arrive together, findings and counts first, then its
        batch summaries in log order, which stream into the partition step without a list."""
        for replica, group in groupby(rows, key=lambda row: row[0][:3]):
            summaries: Iterator[BatchSummary] = iter(())
            for key, value in group:
                if key[3] == _SUMMARY:
                    lists = chain((value,), (v for _, v in group))
                    summaries = map(BatchSummary._make, chain.from_iterable(lists))
                    break
                yield (key[3], value)
            findings, totals = audit_partition(meta_broadcast.value[replica], summaries)
            for finding in findings:
                yield (_FINDING, finding.to_dict())
            yield (_SUMMARY, totals)
            partitions_acc.add(1)

    progress = Progress(len(tasks), sum(t.byte_count for t in tasks), len(discovery.partitions))
    accumulators = (segments_acc, bytes_acc, partitions_acc)
    rows: list[tuple] = []
    if tasks:
        wanted = options.shuffle_partitions or sc.defaultParallelism * 2
        shuffle_partitions = max(1, min(len(discovery.partitions), wanted))
        # A Spark task per group of segment tasks: a few per core, more when the data is large.
        total = sum(t.byte_count for t in tasks)
        slots = max(sc.defaultParallelism * 4, -(-total // options.split_bytes))
        # Whole rounds of groups: with 17 groups on 2 cores, one core idled through the last one.
        slots = -(-slots // sc.defaultParallelism) * sc.defaultParallelism
        groups = pack_tasks(tasks, slots)
        parsed = sc.parallelize(groups, len(groups)).mapPartitions(parse)
        placement = place_replicas(tasks, shuffle_partitions)
        shuffled = parsed.repartitionAndSortWithinPartitions(
            numPartitions=shuffle_partitions,
            partitionFunc=lambda key: placement.get(key[:3]) if key[:3] in placement else _stable_hash(key[:3]),
        )
        with _watch(progress, accumulators, on_progress):
            rows = shuffled.mapPartitions(check_partitions).collect()

    findings: list[Finding] = []
    stats = SegmentStats()
    totals = PartitionTotals()
    for kind, value in rows:
        if kind == _FINDING:
            findings.append(Finding.from_dict(value))
        elif kind == _STATS:
            stats.merge(value)
        else:
            totals.merge(value)
    return finish_result(discovery, stats, totals, findings, time.monotonic() - started)


def place_replicas(tasks: list[SegmentTask], count: int) -> dict[tuple, int]:
    """The shuffle partition of each replica: replicas dealt out by bytes, largest first, each to
    the least loaded of ``count`` partitions, so that the partition step is spread evenly over
    the cores (ties broken by key: the same input always gives the same placement).

    Hashing the replica key cannot promise that: :func:`_stable_hash` of ``<topic>-<N>`` folders
    is even or odd alike for every N (the partition number enters it twice): with two or four
    shuffle partitions, every replica of the benchmark's dir went to the same one, and the
    partition step ran on a single core."""
    sizes: dict[tuple, int] = {}
    for task in tasks:
        sizes[task.replica_key] = sizes.get(task.replica_key, 0) + task.byte_count
    loads = [(0, index) for index in range(max(1, count))]
    placement: dict[tuple, int] = {}
    for replica, size in sorted(sizes.items(), key=lambda item: (-item[1], item[0])):
        load, index = heapq.heappop(loads)
        placement[replica] = index
        heapq.heappush(loads, (load + size, index))
    return placement


def _stable_hash(replica: tuple) -> int:
    """Python's str hash is salted per process; executors must agree on where a replica goes."""
    topic, partition, folder = replica
    value = partition & 0x7FFFFFFF
    for char in topic + "/" + folder:
        value = (value * 31 + ord(char)) & 0x7FFFFFFF
    return value


@contextmanager
def _watch(progress: Progress, accumulators: tuple, on_progress: Callable[[Progress], None] | None) -> Iterator[None]:
    """Call ``on_progress`` twice a second from a thread while the job runs, with the segments,
    bytes and partitions the finished Spark tasks counted in ``accumulators``."""
    if on_progress is None:
        yield
        return
    stop = threading.Event()

    def report() -> None:
        progress.segments_done, progress.bytes_done, progress.partitions_done = (a.value for a in accumulators)
        on_progress(progress)

    def loop() -> None:
        while not stop.wait(0.5):
            report()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        report()
