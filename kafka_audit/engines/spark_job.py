"""The Spark engine (:class:`SparkEngine`): the plan's steps in one job on the DataFrame API, one
code path for a classic session and for Spark Connect; the driver hands what reaches it to
``ScanPlan.finish``.

1. The driver's plan (``audit.plan.ScanPlan``) has one task per segment; a segment
   much larger than the split size is cut into byte ranges at batch boundaries, so one huge file
   is not one straggler. Tasks are dealt into slots of about equal expected CPU (:func:`pack_tasks`:
   a replica small beside a slot's share goes whole to one slot). Each slot's tasks
   (``schemas.TASKS`` rows: paths and settings only, and a whole replica's PartitionMeta) travel
   with the segment step's function as an Arrow stream, over ``spark.range`` with one partition
   per slot (``job_rows.slot_step``): no frame of tasks and no exchange before the segment step.
2. ``mapInArrow`` (:func:`_segment_step_of`): each Spark task audits its segments and emits Arrow
   batches of ``schemas.SEGMENT_ROWS``: a row per finding and one with each task's counts; a
   whole replica's partition step runs right there, on the summaries it holds, and only its
   findings and totals leave. The other tasks' batch summaries leave as a few values under their
   sort keys, each a run of up to 4,096 summaries as one Arrow record batch of typed columns
   (``summary_columns``: a column per ``BatchSummary`` field, the task's constants run-end
   encoded, about 100 bytes a summary; a run the compiled walk took goes as its own memory,
   with no Python object per batch): Spark moves and sorts a few rows per segment task and
   never looks inside a value (a typed Spark row per record batch cost its JVM more CPU than the
   audit).
3. Those rows and one metadata row per replica not audited whole (topic, partition, folder; the
   first slot's Spark task sends them) are repartitioned by ``place``, a key per replica chosen
   so that replicas are dealt out over the partitions by bytes (:func:`place_replicas`), and
   sorted within partitions by (place, kind, segment base offset, segment, position): a
   replica's rows arrive together at one task, metadata first, then the segment step's findings
   and counts, then its batch values in log order.
4. ``groupBy(place).applyInArrow`` (:func:`_replica_step`, iterator form) streams each replica's
   summaries, a value at a time (its columns copied once into a ``SummaryColumns``), into the
   partition step (offsets, indexes, producer-state
   replay); a whole replica's rows are passed on. A segment cut into several tasks also sends
   its values to a group of its own that checks its indexes (``job_plan.index_checks``) beside
   the replay instead of inside it. The grouping needs no shuffle or sort of its own: the plan's
   exchange and sort above already give it.
5. Replicas of one partition (SPEC section 6) leave their totals with their batch digests under
   their set's label; a ``groupBy(group).applyInArrow`` (``replica_set_step``) compares each set
   on an executor. Only findings and counts (``schemas.REPLICA_ROWS``) reach the driver. The ``batches`` dataset
   expands the values into typed rows (:meth:`ScanFrames.batches`), only when it is asked for
   (whole replicas' values are then kept aside for it, never shuffled).

Memory per replica in the partition step: Spark sorts the rows with its external sorter (spilling
to disk), and the Python worker holds one Arrow batch (at most ``spark.sql.execution.arrow.
maxRecordsPerBatch`` rows, 10,000 by default, and ``maxBytesPerBatch``, 64 MiB), one value being
replayed (at most 4,096 summaries, under 2 MB) plus what ``audit_partition`` keeps: the replay's
per-producer state and the batch summaries of the segment being index-verified. One replica of
10 M batches therefore costs what its largest segment's summaries cost (about 0.4 KB a batch: 1 GiB
segments of 16 KiB batches, 65 K summaries, about 27 MB), not 10 M summaries. A replica audited
whole in the segment step holds all its summaries, at most half a slot's expected CPU (a slot is
about 256 MiB: some 64 MB of summaries for 256 MiB of the smallest batches seen, 2.6 KB each).
"""

from __future__ import annotations

import functools
import gc
import pickle
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from itertools import chain
from typing import Any

import pyarrow as pa

from kafka_audit.audit.partition_audit import PartitionTotals, audit_partition
from kafka_audit.audit.plan import ScanPlan, log_order
from kafka_audit.audit.results import ScanResult
from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.audit.segment_audit import SegmentAuditor
from kafka_audit.audit.segment_indexes import IndexCheck, check_indexes
from kafka_audit.audit.segment_task import SegmentStats, SegmentTask, with_read_ahead
from kafka_audit.audit.task_packing import pack_tasks
from kafka_audit.engines import schemas
from kafka_audit.engines.engine import OnProgress, audit_with
from kafka_audit.engines.job_plan import check_buckets, index_checks, task_table
from kafka_audit.engines.job_rows import (
    ROWS_PER_BATCH,
    PendingValues,
    batch_runs,
    rare_row,
    segment_row_batch,
    slot_step,
)
from kafka_audit.engines.replica_placement import keys_for_buckets, place_replicas
from kafka_audit.engines.replica_set_step import keyed_by_set, set_label, set_step_of
from kafka_audit.engines.spark_frames import ScanFrames
from kafka_audit.engines.spark_parallelism import default_parallelism, segment_slots, small_input_tasks
from kafka_audit.engines.spark_progress import watch
from kafka_audit.io.storage import StorageSettings
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.discovery import Discovery
from kafka_audit.rules.batch_summary import BatchSummary, RunSlice, SummaryColumns
from kafka_audit.rules.findings import Finding

# pyspark 4 warns on every Arrow conversion when pandas 3 is installed; the job uses no pandas.
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)

# The task columns that are names from the file system, sent as bytes.
_NAME_COLUMNS = ("topic", "replica")
# The order of a replica's rows at the partition step (see the module docstring).
_REPLICA_ORDER = ("place", "kind", "segment_base_offset", "segment", "position")


@dataclass(frozen=True, slots=True)
class SparkEngine:
    """The audit on ``spark`` (a classic session or Spark Connect), an :class:`AuditEngine`: the
    plan's steps in this module's DataFrame job; with ``output_parquet``, the datasets of SPEC
    section 3 written there from the executors too."""

    spark: Any
    output_parquet: str | None = None

    def audit(self, plan: ScanPlan, on_progress: OnProgress | None = None) -> ScanResult:
        result, frames = self.run(plan, on_progress, keep=self.output_parquet is not None)
        if frames is not None and self.output_parquet is not None:
            try:
                frames.write_parquet(self.spark, result, self.output_parquet)
            finally:
                frames.unpersist()
        return result

    def run(
        self, plan: ScanPlan, on_progress: OnProgress | None = None, keep: bool = False
    ) -> tuple[ScanResult, ScanFrames | None]:
        """The job; with ``keep``, its row sets stay persisted (MEMORY_AND_DISK) for the datasets.
        Frames are None when there is nothing to audit."""
        if not plan.tasks:
            return plan.finish(SegmentStats(), PartitionTotals(), []), None
        frames = build_frames(self.spark, plan, keep)
        if keep:
            frames = frames.persisted()
        with watch(self.spark, plan.progress(), frames.segment_tasks, on_progress):
            table = frames.replica_rows.select("kind", "blob").toArrow()
        return plan.finish(*_driver_rows(table)), frames


def run_scan(
    spark,
    discovery: Discovery,
    options: ScanOptions,
    on_progress: OnProgress | None = None,
    output_parquet: str | None = None,
) -> ScanResult:
    """Run the audit of everything ``discovery`` found on ``spark`` (classic or Connect) and return
    the result; with ``output_parquet``, also write the datasets there from the executors."""
    return audit_with(SparkEngine(spark, output_parquet), discovery, options, on_progress)


def run_job(
    spark,
    discovery: Discovery,
    options: ScanOptions,
    on_progress: OnProgress | None = None,
    keep: bool = False,
) -> tuple[ScanResult, ScanFrames | None]:
    """The job (:meth:`SparkEngine.run`) of auditing everything ``discovery`` found."""
    return SparkEngine(spark).run(ScanPlan.build(discovery, options), on_progress, keep)


def _driver_rows(table: pa.Table) -> tuple[SegmentStats, PartitionTotals, list[Finding]]:
    """What the job's rows that reach the driver hold: the segment tasks' counts, the partition
    and set steps' totals, and every step's findings."""
    stats, totals, findings = SegmentStats(), PartitionTotals(), []
    for kind, blob in zip(table.column("kind").to_pylist(), table.column("blob").to_pylist()):
        value = pickle.loads(blob)
        if kind == schemas.FINDING:
            findings.append(value)
        elif kind == schemas.STATS:
            stats.merge(value)
        elif kind == schemas.TOTALS:
            totals.merge(value)
    return stats, totals, findings


def build_frames(spark, plan: ScanPlan, keep: bool = False) -> ScanFrames:
    """The job's plan (nothing runs yet): tasks -> segment step -> replicas -> partition step. A
    replica audited whole in its slot (:mod:`~kafka_audit.audit.task_packing`) travels with its
    first task; the others' metadata joins their batch rows at the partition step. With ``keep``,
    whole replicas' batch values are kept for the ``batches`` dataset."""
    tasks, options = plan.tasks, plan.options
    parallelism = default_parallelism(spark)
    total = sum(t.byte_count for t in tasks)
    small = small_input_tasks(total, options.split_bytes)
    packing = pack_tasks(tasks, min(segment_slots(total, parallelism), small))
    groups = packing.groups
    metas = dict(plan.metas)
    count = max(1, min(len(metas), options.shuffle_partitions or min(parallelism * 2, small)))
    checks = index_checks(tasks, packing.whole, metas) if count > 1 else {}
    for key in {key for key, _ in checks}:
        metas[key] = replace(metas[key], indexes_apart=frozenset(segment for k, segment in checks if k == key))
    replicas = sorted(metas)
    buckets = place_replicas(tasks, count)
    units: list[tuple] = [*replicas, *checks]
    places = dict(zip(units, keys_for_buckets([buckets.get(key, 0) for key in replicas] + check_buckets(checks, buckets, count), count)))
    tasks_table = task_table(groups, places, {key: metas[key] for key in packing.whole})
    meta_table = segment_row_batch(
        [rare_row(schemas.META, places[key], None, pickle.dumps(metas[key])) for key in replicas if key not in packing.whole]
        + [rare_row(schemas.META, places[unit], None, pickle.dumps(check)) for unit, check in checks.items()]
    )
    segment_schema = schemas.spark_schema(schemas.SEGMENT_ROWS)
    segment_step = _segment_step_of(options, plan.discovery.storage.settings, keep)
    # One Spark partition per slot, its one row the slot's number (no exchange, no frame of tasks).
    slots = spark.range(0, len(groups), 1, len(groups))
    segment_rows = slots.mapInArrow(slot_step(tasks_table, len(groups), segment_step, meta_table), segment_schema)
    to_replicas = segment_rows.where(segment_rows.kind != schemas.KEPT_BATCH) if keep else segment_rows
    replica_rows = (
        _partitioned(to_replicas, count, "place", narrow=len(groups) == 1)
        .sortWithinPartitions(*_REPLICA_ORDER)
        .groupBy("place")
        .applyInArrow(_replica_step, schemas.spark_schema(schemas.REPLICA_ROWS))
    )
    if any(meta.replica_set is not None for meta in metas.values()):
        # SPEC section 6: the replicas of one partition meet in one group of the set step.
        replica_rows = (
            keyed_by_set(replica_rows)
            .groupBy("group")
            .applyInArrow(set_step_of(options.validation.is_compacted), schemas.spark_schema(schemas.REPLICA_ROWS))
        )
    return ScanFrames(segment_rows, replica_rows, len(groups))


def _partitioned(frame, count: int, key: str, narrow: bool):
    """``frame`` hash-partitioned by ``key`` into ``count`` partitions; into one by ``coalesce``
    when ``narrow`` (its input is one Spark partition, one slot's), with no shuffle: a small
    input's job is then one Spark stage, not two."""
    return frame.coalesce(1) if count == 1 and narrow else frame.repartition(count, key)


def _segment_step_of(
    options: ScanOptions, settings: StorageSettings, keep: bool = False
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    validations, reference_time = options.validations, options.reference_time

    def segment_step(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Executor side: audit each segment task of this Spark task (``mapInArrow``). A task's
        batch summaries (the compiled walk's runs as columns, ``run(columns=True)``) leave as
        summary columns (``PendingValues``: ``summary_columns`` is the seam between the segment
        step and the transport) in values of up to
        :data:`SUMMARIES_PER_VALUE` (:func:`task_rows`), except a whole replica's: its tasks run
        together in log order and its partition step runs here, on the summaries kept in memory.
        Rows are sent in Arrow batches holding about :data:`ROWS_PER_BATCH` summaries. Its reads
        share one storage context of the settings."""
        settle_worker_heap()
        with StorageContext(settings) as storage:
            yield from _segment_rows(batches, storage)

    def _segment_rows(batches: Iterator[pa.RecordBatch], storage: StorageContext) -> Iterator[pa.RecordBatch]:
        tasks, places, metas, checks = _read_tasks(batches, storage.settings)
        left = Counter(task.replica_key for task in tasks if task.replica_key in metas)
        held: dict[tuple, list[BatchSummary | SummaryColumns]] = {key: [] for key in left}
        rows: list[tuple] = []
        pending = PendingValues()
        sent = storage.requests_sent()  # a store's requests, counted with each task's stats
        for task in with_read_ahead(tasks, storage):
            place, key = places.pop(task), task.replica_key
            auditor = SegmentAuditor(task, validations.of(task.replica), reference_time, storage)
            summaries: list[BatchSummary | SummaryColumns] = []
            for item in auditor.run(columns=True):
                if isinstance(item, BatchSummary | SummaryColumns):
                    summaries.append(item)
                else:
                    payload = schemas.finding_json(item.to_dict())
                    rows.append(rare_row(schemas.FINDING, place, payload, pickle.dumps(item)))
            auditor.stats.requests, auditor.stats.bytes_fetched = storage.fetched_since(sent)
            rows.append(rare_row(schemas.STATS, place, None, pickle.dumps(auditor.stats)))
            if key not in metas:
                pending.add([place] if task not in checks else [place, checks.pop(task)], summaries)
            else:
                held[key].extend(summaries)
                if keep:
                    pending.add([place], summaries, kind=schemas.KEPT_BATCH)
                left[key] -= 1
                if not left[key]:
                    rows.extend(rare_row(kind, place, payload, blob) for kind, payload, blob in
                                _partition_rows(metas.pop(key), held.pop(key), storage))
            sent = storage.requests_sent()
            if len(pending) >= ROWS_PER_BATCH:
                yield segment_row_batch(rows + pending.rows())
                rows = []
        if rows or pending:
            yield segment_row_batch(rows + pending.rows())

    return segment_step


@functools.cache
def settle_worker_heap() -> None:
    """Executor side, at a task's start, once per process (the cache of a call without
    arguments: one bit, no request's data): the objects alive in this Python worker by now (its
    modules, PySpark's and ours) are left out of later garbage collections (``gc.freeze``).
    PySpark reuses a worker for task after task and runs a full ``gc.collect()`` after each
    (``pyspark.daemon``), which walked those ~90,000 objects every time (60-80 ms a task); it now
    walks what the tasks since made. Freezing frees and moves nothing: a frozen object is still
    freed when its last reference goes; only a cycle among objects alive at the first task's
    start (that task's set-up, once per worker) is never collected."""
    gc.freeze()


def _read_tasks(
    batches: Iterator[pa.RecordBatch], settings: StorageSettings
) -> tuple[list[SegmentTask], dict[SegmentTask, int], dict[tuple, Any], dict[SegmentTask, int]]:
    """A Spark task's segment tasks (a whole replica's together, in log order), where each one's
    rows go, the PartitionMeta of each replica it audits whole, and where the rows of a segment
    whose indexes are checked apart go too."""
    tasks: list[SegmentTask] = []
    places: dict[SegmentTask, int] = {}
    metas: dict[tuple, Any] = {}
    checks: dict[SegmentTask, int] = {}
    for batch in batches:
        for row in batch.to_pylist():
            place, meta, check = row.pop("place"), row.pop("meta"), row.pop("check_place")
            del row["slot"]
            for key in _NAME_COLUMNS:
                row[key] = row[key].decode("utf-8", "surrogateescape")
            row["file"] = pickle.loads(row["file"])
            task = SegmentTask(**row, storage_options=settings)
            places[task] = place
            if meta is not None:
                metas[task.replica_key] = pickle.loads(meta)
            if check is not None:
                checks[task] = check
            tasks.append(task)
    whole = sorted((t for t in tasks if t.replica_key in metas), key=lambda t: (t.replica_key, log_order(t)))
    return whole + [t for t in tasks if t.replica_key not in metas], places, metas, checks


def _partition_rows(
    meta: Any, items: Iterable[BatchSummary | SummaryColumns], storage: StorageContext
) -> list[tuple[int, str | None, bytes]]:
    """(kind, payload, blob) of a replica's partition step, or of a segment's index check, on its
    summaries and runs: its findings, then its totals (a check's are only the requests it sent)."""
    sent = storage.requests_sent()
    if isinstance(meta, IndexCheck):
        # Runs as slices of their columns (as the partition step passes them), no object per batch.
        batches = [RunSlice(item, 0, len(item)) if isinstance(item, SummaryColumns) else item
                   for item in items if not isinstance(item, SummaryColumns) or len(item)]
        findings, totals = check_indexes(meta, batches, storage), PartitionTotals()
    else:
        findings, totals = audit_partition(meta, items, storage)
    totals.requests, totals.bytes_fetched = storage.fetched_since(sent)
    rows: list[tuple[int, str | None, bytes]] = [
        (schemas.FINDING, schemas.finding_json(f.to_dict()), pickle.dumps(f)) for f in findings
    ]
    if totals.replica_set is not None:
        rows.append((schemas.SET_TOTALS, set_label(totals.replica_set), pickle.dumps(totals)))
    else:
        rows.append((schemas.TOTALS, None, pickle.dumps(totals)))
    return rows


def _replica_step(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Executor side: one replica's rows (``applyInArrow``, iterator form), in the order of
    ``_REPLICA_ORDER``: its metadata, the segment step's counts and findings (passed on), then its
    batch rows in log order, whose summaries stream into the partition step. A replica the
    segment step audited whole has no metadata or batch rows here: its rows are passed on."""
    settle_worker_heap()
    meta = None
    out: list[tuple] = []
    rest = iter(batches)
    first: list[pa.RecordBatch] = []
    for batch in rest:
        kinds = batch.column(0).to_pylist()
        head = next((i for i, kind in enumerate(kinds) if kind == schemas.BATCH), len(kinds))
        payloads, blobs = batch.column("payload").to_pylist()[:head], batch.column("blob").to_pylist()[:head]
        for kind, payload, blob in zip(kinds, payloads, blobs):
            if kind == schemas.META:
                meta = pickle.loads(blob)
            else:
                out.append((kind, payload, blob))
        if head < len(kinds):
            first.append(batch.slice(head))
            break
    if meta is not None:
        with StorageContext(meta.storage_options) as storage:
            out.extend(_partition_rows(meta, batch_runs(chain(first, rest)), storage))
    elif first:
        raise RuntimeError("a replica's batch rows reached the partition step without its metadata row")
    if out:
        kinds, payloads, blobs = zip(*out)
        yield pa.RecordBatch.from_arrays(
            [pa.array(kinds, pa.int8()), pa.array(payloads, pa.string()), pa.array(blobs, pa.binary())],
            schema=schemas.REPLICA_ROWS,
        )
