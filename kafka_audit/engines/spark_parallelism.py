"""How many Spark tasks the job's steps use: the session's default parallelism (classic or
Connect) and the segment step's task count for the bytes to audit."""

from __future__ import annotations

from kafka_audit.engines.spark_progress import is_connect

# Bytes of segments a Spark task audits (see :func:`segment_slots`), and on a small input.
TASK_BYTES = 256 << 20
SMALL_TASK_BYTES = 16 << 20


def segment_slots(total: int, parallelism: int) -> int:
    """Spark tasks for the segment step over ``total`` bytes: whole rounds of ``parallelism``
    (with 17 tasks on 2 cores, one core idled through the last one) of about
    :data:`TASK_BYTES` each. A small input gets fewer (:func:`small_input_tasks`).

    A Spark task costs its Python worker and the JVM about 40 ms of CPU besides its audit
    (1 GiB on ``local[2]``: 20 tasks of 54 MB took 3.3 s, 4-8 tasks 2.95 s), so tasks are large;
    the plan's byte ranges (``split_bytes``) still let them be balanced (by expected CPU:
    ``audit.task_packing.pack_tasks``)."""
    return max(1, -(-total // (parallelism * TASK_BYTES))) * parallelism


def small_input_tasks(total: int, split_bytes: int) -> int:
    """The most Spark tasks a small input gets, for the segment step and the partition step
    alike: one per :data:`SMALL_TASK_BYTES` of ``total`` (or per ``split_bytes`` if smaller)."""
    return -(-total // min(SMALL_TASK_BYTES, split_bytes))


def default_parallelism(spark) -> int:
    """The session's default parallelism: the SparkContext's on a classic session. On Spark Connect
    (no SparkContext) ``spark.default.parallelism`` when the server lets it be read and it is set
    (a managed endpoint may refuse to show a setting), else the number of partitions Spark gives a
    range by default (``SparkContext.defaultParallelism`` via ``leafNodeDefaultParallelism``),
    counted by a job of built-in functions only, which any Connect endpoint runs.

    The partition id is projected before it is aggregated: Spark 4's analyzer refuses a
    non-deterministic expression inside an aggregate function (``max(spark_partition_id())``,
    AGGREGATE_FUNCTION_WITH_NONDETERMINISTIC_EXPRESSION), not a column a projection computed."""
    if not is_connect(spark):
        return spark.sparkContext.defaultParallelism
    try:
        configured = spark.conf.get("spark.default.parallelism", None)
    except Exception:  # noqa: BLE001 - a managed endpoint may not expose the setting
        configured = None
    if configured:
        return max(1, int(configured))
    from pyspark.sql import functions as F

    ids = spark.range(0, 1 << 16).select(F.spark_partition_id().alias("id"))
    probe = ids.agg(F.max("id").alias("last")).collect()
    return max(1, probe[0]["last"] + 1)
