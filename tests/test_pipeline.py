"""The Spark job agrees with the in-process audit, whatever the partitioning and splitting, on a
classic session and on Spark Connect (``any_spark``)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from kafka_audit.audit.plan import plan_tasks
from kafka_audit.audit.scan_options import ScanOptions, scan_options
from kafka_audit.audit.segment_task import SegmentTask
from kafka_audit.audit.task_packing import batch_bytes_by_replica, pack_tasks
from kafka_audit.engines.local import audit_in_process
from kafka_audit.engines.spark_job import run_scan
from kafka_audit.log.log_dir import discover
from tests.conftest import FIXTURES
from tests.support.audit_run import BUNDLED
from tests.support.segment_tasks import segment_task
from tests.support.writer import BatchSpec, LogDirWriter, Producer, records

REAL_BROKER = BUNDLED / "real-broker"
CORPUS_DIRS = sorted(p.name for p in REAL_BROKER.iterdir() if p.is_dir())

pytestmark = pytest.mark.spark


def options_of(log_dir: Path) -> ScanOptions:
    """The scan options an EXPECTED.json names."""
    given = json.loads((log_dir / "EXPECTED.json").read_text())["options"]
    named = ("max_message_bytes", "timestamp_before_max_ms", "timestamp_after_max_ms", "reference_time",
             "transaction_timeout_ms")
    return scan_options(compacted_topics=given.get("compacted_topics", ()), **{n: given[n] for n in named if n in given})


def as_dicts(result) -> list[dict]:
    return [f.to_dict() for f in result.findings]


def counts(result) -> tuple:
    s = result.summary
    return (s["partitions"], s["segments"], s["batches"], s["records"], s["bytes"], s["producers"], s["transactions"])


@pytest.mark.parametrize("name", ["healthy", "faulty", "producer-errors"])
def test_spark_and_in_process_agree_on_the_fixtures(any_spark, name):
    log_dir = FIXTURES / name
    options = options_of(log_dir)
    reference = audit_in_process(discover([str(log_dir)]), options)
    on_spark = run_scan(any_spark, discover([str(log_dir)]), options)
    assert as_dicts(on_spark) == as_dicts(reference)
    assert counts(on_spark) == counts(reference)
    assert on_spark.summary["findings_by_check"] == reference.summary["findings_by_check"]


@pytest.mark.parametrize("name", CORPUS_DIRS)
def test_spark_and_in_process_agree_on_the_real_broker_dirs(any_spark, name):
    found = discover([str(REAL_BROKER / name)])
    reference = audit_in_process(found, ScanOptions())
    on_spark = run_scan(any_spark, found, ScanOptions())
    assert reference.summary["batches"] > 0
    assert as_dicts(on_spark) == as_dicts(reference)
    assert counts(on_spark) == counts(reference)


def test_same_findings_with_one_and_with_several_spark_partitions(any_spark):
    log_dir = FIXTURES / "faulty"
    options = options_of(log_dir)
    one = run_scan(any_spark, discover([str(log_dir)]), replace(options, shuffle_partitions=1))
    several = run_scan(any_spark, discover([str(log_dir)]), replace(options, shuffle_partitions=7))
    assert len(one.findings) > 30
    assert as_dicts(one) == as_dicts(several)
    assert counts(one) == counts(several)


def _write_big_partition(d: LogDirWriter) -> None:
    """``big-0``: 300 batches of one idempotent producer, then one whose sequence jumps (an
    ``out_of_order_sequence`` late in the segment)."""
    w = d.partition("big", 0)
    p = Producer(77, epoch=0)
    for i in range(300):
        p.send(w, records([b"v%05d" % i * 20] * 3))
    p.send(w, records([b"late"]), sequence=5000)


def test_segments_split_into_byte_ranges_give_the_same_findings(any_spark, tmp_path):
    """A large segment is cut into ranges at batch boundaries; its batches still reach the replay
    in log order (a sequence anomaly late in the segment is found exactly once)."""
    with LogDirWriter(tmp_path) as d:
        _write_big_partition(d)
    found = discover([str(tmp_path)])
    whole = ScanOptions()
    split = replace(whole, split_bytes=8 * 1024)
    assert len(plan_tasks(found, split.split_bytes)) > 5
    assert len(plan_tasks(found, whole.split_bytes)) == 1
    reference = audit_in_process(found, whole)
    assert [f.check for f in reference.findings] == ["out_of_order_sequence"]
    for options in (whole, split):
        result = run_scan(any_spark, found, options)
        assert as_dicts(result) == as_dicts(reference)
        assert counts(result) == counts(reference)


def test_two_replicas_of_one_partition_are_replayed_apart(spark, tmp_path):
    """Two brokers' copies of the same partition scanned together: each replays on its own,
    so the second copy's batches are neither overlaps nor duplicates of the first's."""
    for broker in ("broker-1", "broker-2"):
        with LogDirWriter(tmp_path / broker) as d:
            w = d.partition("orders", 3)
            p = Producer(5, epoch=1)
            for _ in range(4):
                p.send(w, records(["a", "b"]))
            w.append(BatchSpec(records=records(["plain"])))
    found = discover([str(tmp_path)])
    assert len(found.partitions) == 2
    result = run_scan(spark, found, ScanOptions())
    assert result.findings == []
    assert result.summary["batches"] == 10


def test_the_real_broker_corpus_audits_clean_on_spark(any_spark, corpus):
    found = discover([str(corpus)])
    result = run_scan(any_spark, found, ScanOptions())
    assert [f for f in result.findings if f.severity == "error"] == []
    assert result.summary["batches"] == 11366 + 6387 + 98 + 873 + 19
    assert as_dicts(result) == as_dicts(audit_in_process(found, ScanOptions()))


def test_pack_tasks_deals_every_task_once_into_balanced_groups():
    tasks = [
        segment_task("t", 0, "t-0", f"/x/{i}", f"t-0/{i}.log", i, size=size)
        for i, size in enumerate([900, 500, 400, 300, 300, 200, 100, 100, 50, 50])
    ]
    density = {("t", 0, "t-0"): 100.0}
    groups = pack_tasks(tasks, 3, density).groups
    assert len(groups) == 3
    assert sorted(t.file.path for g in groups for t in g) == sorted(t.file.path for t in tasks)
    loads = [sum(t.byte_count for t in g) for g in groups]
    assert max(loads) - min(loads) <= 100
    assert pack_tasks(tasks[:2], 8, density).groups == [[tasks[0]], [tasks[1]]]
    assert pack_tasks([], 4, {}).groups == []


def test_tasks_are_dealt_by_expected_cpu_not_bytes():
    """Two replicas of equal bytes, one cut into batches ten times smaller: by CPU per batch the
    dense one is nine tenths of the work, so each slot gets one of its tasks (bytes alone could
    give one slot both), and the light replica goes whole beside one of them."""
    def replica(topic: str) -> list[SegmentTask]:
        return [segment_task(topic, 0, f"{topic}-0", f"/x/{topic}/{i}", f"{topic}-0/{i}.log", i, size=10_000)
                for i in range(2)]

    dense, sparse = replica("zstd"), replica("plain")
    density = {("zstd", 0, "zstd-0"): 1_000.0, ("plain", 0, "plain-0"): 10_000.0}
    for order in (dense + sparse, sparse + dense):
        packing = pack_tasks(order, 2, density)
        assert packing.whole == {sparse[0].replica_key}
        assert sorted(sum(t.topic == "zstd" for t in g) for g in packing.groups) == [1, 1]
        assert sorted(sum(t.topic == "plain" for t in g) for g in packing.groups) == [0, 2]


def test_small_replicas_go_whole_to_one_slot_and_large_ones_are_spread():
    big = [segment_task("big", 0, "big-0", f"/x/big/{i}", f"big-0/{i}.log", i, size=1000) for i in range(8)]
    small = [segment_task(f"s{n}", 0, f"s{n}-0", f"/x/s{n}/{i}", f"s{n}-0/{i}.log", i, size=100)
             for n in range(6) for i in range(2)]
    density = {t.replica_key: 100.0 for t in big + small}
    packing = pack_tasks(big + small, 4, density)
    assert packing.whole == {t.replica_key for t in small}
    for key in packing.whole:
        assert sum(any(t.replica_key == key for t in g) for g in packing.groups) == 1
    assert sum(any(t.topic == "big" for t in g) for g in packing.groups) == 4
    assert pack_tasks(big, 1, density).whole == {big[0].replica_key}  # one slot: everything together


def test_the_batch_density_is_read_from_the_first_batch_headers(tmp_path):
    """The writer's own batch positions are the oracle for the mean batch size."""
    with LogDirWriter(tmp_path) as d:
        w = d.partition("dense", 0)
        written = [w.append(BatchSpec(records=records([b"x" * n]))) for n in (10, 2000, 300)]
    found = discover([str(tmp_path)])
    (task,) = plan_tasks(found)
    size = task.file.size
    assert [b.position for b in written] == [0, written[1].position, written[2].position]
    assert batch_bytes_by_replica([task]) == {task.replica_key: size / 3}


def test_replicas_are_spread_over_the_shuffle_partitions_by_bytes():
    """Every replica gets a partition of the partition step, the heaviest first, each to the
    least loaded one."""
    from kafka_audit.engines.replica_placement import place_replicas

    sizes = {0: 900, 1: 500, 2: 400, 3: 300, 4: 300, 5: 200}
    tasks = [
        segment_task("t", p, f"logs/t-{p}", f"/x/t-{p}/{i}.log", f"t-{p}/{i}.log", i, size=size // 2)
        for p, size in sizes.items()
        for i in range(2)
    ]
    placement = place_replicas(tasks, 2)
    assert set(placement) == {t.replica_key for t in tasks}
    loads = [sum(sizes[key[1]] for key, index in placement.items() if index == n) for n in range(2)]
    assert sum(loads) == 2600 and max(loads) - min(loads) <= 200  # largest first, to the lightest
    assert place_replicas(list(reversed(tasks)), 2) == placement
    assert set(place_replicas(tasks, 1).values()) == {0}


def test_keys_land_in_the_partition_spark_gives_them(spark):
    """``keys_for_buckets`` predicts Spark's own hash partitioning: each key, repartitioned by
    Spark, lands in the partition it was chosen for (Spark is the oracle)."""
    from pyspark.sql import functions as F

    from kafka_audit.engines.replica_placement import keys_for_buckets

    buckets = [0, 1, 2, 2, 4, 0, 3, 1, 4, 4]
    keys = keys_for_buckets(buckets, 5)
    assert len(set(keys)) == len(keys)
    frame = spark.createDataFrame([(k,) for k in keys], "k int").repartition(5, "k")
    landed = dict(frame.select("k", F.spark_partition_id().alias("p")).collect())
    assert [landed[k] for k in keys] == buckets


def test_the_partition_step_needs_no_sort_or_shuffle_of_its_own(any_spark):
    """The replicas' rows reach ``applyInArrow`` in the order the job sorted them (batches in log
    order): Spark plans no second exchange or sort between that sort and the grouped step."""
    from kafka_audit.audit.plan import ScanPlan
    from kafka_audit.engines.spark_job import build_frames

    found = discover([str(FIXTURES / "faulty")])
    options = replace(options_of(FIXTURES / "faulty"), shuffle_partitions=3)  # a small input gets one
    frames = build_frames(any_spark, ScanPlan.build(found, options))
    plan = _physical_plan(frames.replica_rows)
    grouped = plan[plan.index("FlatMapGroupsInArrow"):]
    assert grouped.count("Sort [") == 1 and "segment_base_offset" in grouped.split("Sort [")[1].split("]")[0]
    assert grouped.count("Exchange hashpartitioning(place") == 1


def test_a_small_inputs_job_is_one_stage(any_spark):
    """One slot of tasks and one partition of replicas: both are coalesced, not shuffled, so the
    job runs as one Spark stage (no exchange), still sorted once before the grouped step."""
    from kafka_audit.audit.plan import ScanPlan
    from kafka_audit.engines.spark_job import build_frames

    found = discover([str(FIXTURES / "faulty")])
    frames = build_frames(any_spark, ScanPlan.build(found, options_of(FIXTURES / "faulty")))
    plan = _physical_plan(frames.replica_rows)
    assert frames.segment_tasks == 1
    assert "Exchange" not in plan
    assert plan[plan.index("FlatMapGroupsInArrow"):].count("Sort [") == 1


def _physical_plan(frame) -> str:
    import contextlib
    import io

    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        frame.explain()
    return text.getvalue()


def test_progress_comes_from_spark_without_accumulators(any_spark):
    """The status tracker (classic) or the Connect progress handler feeds the progress; at the end
    every segment task, byte and partition is done."""
    found = discover([str(FIXTURES / "healthy")])
    seen = []
    run_scan(any_spark, found, ScanOptions(), on_progress=lambda p: seen.append(
        (p.segments_done, p.segments_total, p.bytes_done, p.bytes_total, p.partitions_done, p.partitions_total)))
    assert seen and seen[-1][1] > 0 and seen[-1][5] == len(found.partitions)
    assert seen[-1][0::2] == seen[-1][1::2]
    assert all(done <= total for row in seen for done, total in zip(row[0::2], row[1::2]))


def test_progress_counts_the_segment_stage_and_the_stages_after_it():
    from kafka_audit.audit.results import Progress
    from kafka_audit.engines.spark_progress import _count_done

    progress = Progress(segments_total=40, bytes_total=4000, partitions_total=6)
    _count_done(progress, {3: (2, 2), 4: (5, 10)}, 10)  # stage 3: the tasks' own shuffle
    assert (progress.segments_done, progress.bytes_done, progress.partitions_done) == (20, 2000, 0)
    _count_done(progress, {3: (2, 2), 4: (10, 10), 6: (1, 4)}, 10)
    assert (progress.segments_done, progress.bytes_done, progress.partitions_done) == (40, 4000, 1)


@pytest.mark.parametrize("server, expected", [("connect_url", 2), ("configured_connect_url", 3)])
def test_default_parallelism_on_a_default_and_on_a_configured_connect_server(request, server, expected):
    """A Connect server started with Spark's defaults (``local[2]``, as managed endpoints run) has
    no ``spark.default.parallelism`` to read: the job counts a range's partitions, in a query that
    Spark 4's analyzer accepts; a configured server's setting (3) is read as given."""
    from kafka_audit.engines.spark_parallelism import default_parallelism
    from kafka_audit.engines.spark_session import create_connect_session

    session = create_connect_session(request.getfixturevalue(server))
    try:
        assert default_parallelism(session) == expected
    finally:
        session.stop()


def test_a_split_segment_s_indexes_checked_apart_give_the_same_findings(any_spark, tmp_path):
    """A segment cut into byte ranges, of a replica replayed after the shuffle, has its indexes
    checked in a group of its own beside the replay (engines/job_plan.index_checks): the findings are
    the in-process audit's, a broken index entry and a sequence anomaly included."""
    from kafka_audit.audit.plan import partition_metas
    from kafka_audit.engines.job_plan import index_checks

    with LogDirWriter(tmp_path) as d:
        _write_big_partition(d)
        small = d.partition("small", 0)
        for i in range(3):
            small.append(BatchSpec(records=records([b"s%d" % i])))
    index = tmp_path / "big-0" / f"{0:020d}.index"
    data = bytearray(index.read_bytes())
    data[8 * 5 + 4 : 8 * 5 + 8] = (int.from_bytes(data[8 * 5 + 4 : 8 * 5 + 8], "big") + 1).to_bytes(4, "big")
    index.write_bytes(bytes(data))  # the sixth entry points one byte past its batch
    found = discover([str(tmp_path)])
    options = replace(ScanOptions(), split_bytes=8 * 1024, shuffle_partitions=2)
    reference = audit_in_process(found, options)
    assert sorted(f.check for f in reference.findings) == ["index_mismatch", "out_of_order_sequence"]
    tasks = plan_tasks(found, options.split_bytes)
    packing = pack_tasks(tasks, 2)
    assert list(index_checks(tasks, packing.whole, partition_metas(found, options))) == [
        (("big", 0, "big-0"), "big-0/00000000000000000000.log")
    ]
    result = run_scan(any_spark, found, options)
    assert as_dicts(result) == as_dicts(reference)
    assert counts(result) == counts(reference)
