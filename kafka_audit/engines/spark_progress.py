"""The progress of a running Spark job, from Spark itself: the status tracker on a classic
session, the progress handler on Spark Connect (no accumulators)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kafka_audit.audit.results import Progress


def is_connect(spark) -> bool:
    """Whether ``spark`` is a Spark Connect session (it has no SparkContext)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


@contextmanager
def watch(
    spark, progress: Progress, segment_tasks: int, on_progress: Callable[[Progress], None] | None
) -> Iterator[None]:
    """Feed ``progress`` from Spark while the job runs (the status tracker on a classic session,
    the progress handler on Spark Connect; no accumulators) and call ``on_progress`` twice a
    second. Segments and bytes are counted by the segment step's Spark tasks done (the stage of
    ``segment_tasks`` tasks), partitions by the later stages' tasks; all are complete at the end."""
    if on_progress is None:
        yield
        return
    stop = threading.Event()
    seen: dict[int, tuple[int, int]] = {}
    if is_connect(spark):

        def handler(stages, inflight_tasks, operation_id, done) -> None:  # pyspark calls it by keyword
            for stage in stages:
                seen[stage.stage_id] = (stage.num_completed_tasks, stage.num_tasks)

        spark.registerProgressHandler(handler)
        poll = None
    else:
        tracker = spark.sparkContext.statusTracker()

        def poll() -> None:
            active = set(tracker.getActiveStageIds())
            for stage in set(seen) - active:  # a stage no longer active has finished
                seen[stage] = (seen[stage][1], seen[stage][1])
            for stage in active:
                info = tracker.getStageInfo(stage)
                if info is not None:
                    seen[stage] = (info.numCompletedTasks, info.numTasks)

    def loop() -> None:
        while not stop.wait(0.5):
            if poll is not None:
                poll()
            _count_done(progress, dict(seen), segment_tasks)
            on_progress(progress)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        if poll is None:
            spark.removeProgressHandler(handler)
    progress.segments_done, progress.bytes_done = progress.segments_total, progress.bytes_total
    progress.partitions_done = progress.partitions_total
    on_progress(progress)


def _count_done(progress: Progress, stages: dict[int, tuple[int, int]], segment_tasks: int) -> None:
    """Segments, bytes and partitions done, in proportion to the Spark tasks done of the segment
    step's stage (the first of ``segment_tasks`` tasks) and of the stages after it."""
    segment_stage = next((stage for stage in sorted(stages) if stages[stage][1] == segment_tasks), None)
    if segment_stage is None:
        return
    done, total = stages[segment_stage]
    progress.segments_done = progress.segments_total * done // total
    progress.bytes_done = progress.bytes_total * done // total
    later = [stages[stage] for stage in stages if stage > segment_stage]
    later_total = sum(total for _, total in later)
    if later_total:
        progress.partitions_done = progress.partitions_total * sum(done for done, _ in later) // later_total
