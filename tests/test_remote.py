"""Remote inputs (SPEC sections 1 and 5): a local S3 API server (moto's server mode on 127.0.0.1)
holding copies of the fixtures and of the real-broker corpus; scanning ``s3://`` must give what
scanning the local copy gives. Also the range reader, index-based splits of remote segments, the
tiered-storage layout, and the one-line errors of stores that cannot be reached."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import kafka_audit
from kafka_audit.audit.log_dir_facts import with_inferred_compaction
from kafka_audit.audit.plan import plan_tasks
from kafka_audit.audit.scan_options import ScanOptions, reference_time_problem, scan_options
from kafka_audit.cli.app import main
from kafka_audit.engines.local import audit_in_process
from kafka_audit.io import storage
from kafka_audit.io.storage import StorageSettings
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.log_dir import discover
from kafka_audit.record.file_records import FileRecords
from kafka_audit.record.range_buffer import RangeBuffer
from kafka_audit.record.record_batch import RecordBatch
from kafka_audit.rules.findings import Finding
from kafka_audit.rules.validation.log_validator import ValidationConfig
from tests.conftest import FIXTURES
from tests.support.audit_run import BUNDLED
from tests.support.s3_server import CREDENTIALS, S3Server, upload_tree
from tests.support.writer import LogDirWriter, Producer, records

BUCKET = "audit"
FIXTURE_DIRS = ["healthy", "faulty", "producer-errors"]
REAL_BROKER = BUNDLED / "real-broker"
REAL_BROKER_CASES = sorted(p.parent.name for p in REAL_BROKER.glob("*/data"))
assert REAL_BROKER_CASES, f"bundled corpus {REAL_BROKER} is missing"


def _options_of(log_dir: Path) -> ScanOptions:
    """The scan options a fixture's EXPECTED.json names (the real-broker dirs use the defaults)."""
    expected = log_dir / "EXPECTED.json"
    if not expected.is_file():
        return ScanOptions()
    given = json.loads(expected.read_text())["options"]
    named = ("max_message_bytes", "timestamp_before_max_ms", "timestamp_after_max_ms", "reference_time",
             "transaction_timeout_ms")
    return scan_options(compacted_topics=given.get("compacted_topics", ()), **{n: given[n] for n in named if n in given})


def _cases() -> list[tuple[str, Path]]:
    cases = [(f"fixtures/{name}", FIXTURES / name) for name in FIXTURE_DIRS]
    cases += [(f"real-broker/{name}", REAL_BROKER / name / "data") for name in REAL_BROKER_CASES]
    return cases


CASES = dict(_cases())


@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    """The S3 server, its bucket holding a copy of every case, stopped by PID at the end."""
    server = S3Server(tmp_path_factory.mktemp("moto") / "moto.log").start()
    mirrors = tmp_path_factory.mktemp("mirrors")
    try:
        fs = server.filesystem()
        fs.mkdir(BUCKET)
        for key, local in list(CASES.items()):
            upload_tree(fs, local, f"{BUCKET}/{key}")
            # The local side of every comparison is a copy of exactly what was uploaded: a store
            # holds regular files only (a broken symbolic link of a fixture has no upload).
            mirror = mirrors / key
            for path in sorted(local.rglob("*")):
                if path.is_file():
                    target = mirror / path.relative_to(local)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, target)
            CASES[key] = mirror
        yield server
    finally:
        server.stop()


def _comparable(result) -> tuple:
    """Findings, counts and notes: everything but the paths as typed and the timings."""
    # Also the counts keyed by path (``segment_bytes``): the paths differ by their prefix.
    # The store's request counts are a URI scan's alone (test_the_summary_counts_the_requests_...).
    skipped = ("paths", "wall_time_s", "mb_per_s", "segment_bytes", "requests", "bytes_fetched", "requests_per_s",
               "fetched_mb_per_s")
    summary = {k: v for k, v in result.summary.items() if k not in skipped}
    return [f.to_dict() for f in result.findings], summary, sorted(result.notes)


def _scan(paths: list[str], options: ScanOptions, storage_options: dict | None = None):
    with StorageContext(StorageSettings.of(storage_options)) as request:
        return audit_in_process(discover(paths, storage=request), options)


@pytest.mark.parametrize("case", sorted(CASES))
def test_s3_scan_equals_the_local_scan(s3, case):
    local_dir = CASES[case]
    options = _options_of(local_dir)
    local = _scan([str(local_dir)], options)
    remote = _scan([f"s3://{BUCKET}/{case}"], options, s3.storage_options())
    assert remote.summary["segments"] == local.summary["segments"] > 0
    assert remote.summary["batches"] == local.summary["batches"] > 0
    assert _comparable(remote) == _comparable(local)


def test_the_summary_counts_the_requests_the_store_answered(s3):
    """For URI inputs the summary's ``requests`` and ``bytes_fetched`` (SPEC section 3) are the
    requests the server logged and the bytes of the objects they read; sidecars the listing
    showed empty cost no request; a local scan has no such counts."""
    case = "fixtures/faulty"
    before = len(s3.requests_logged())
    result = _scan([f"s3://{BUCKET}/{case}"], _options_of(CASES[case]), s3.storage_options())
    logged = s3.requests_logged()[before:]
    assert result.summary["requests"] == len(logged) > 0
    prefix = f"GET /{BUCKET}/{case}/"
    reads = [line[len(prefix):] for line in logged if line.startswith(prefix)]
    sizes = [(CASES[case] / key).stat().st_size for key in reads]
    # and the listings: discovery's, and the log dir's own for its feature levels
    # (log/feature_levels.py looks for bootstrap.checkpoint there)
    listings = [line for line in logged if "list-type=2" in line]
    assert len(reads) + len(listings) == len(logged) and 1 <= len(listings) <= 2
    assert result.summary["bytes_fetched"] == sum(sizes) and min(sizes) > 0
    assert any(p.is_file() and p.stat().st_size == 0 for p in CASES[case].rglob("*.index"))  # none of them read
    assert result.summary["requests_per_s"] > 0
    assert "requests" not in _scan([str(CASES[case])], _options_of(CASES[case])).summary


def test_s3a_and_a_single_segment_uri(s3):
    case = "fixtures/faulty"
    partition = sorted(p.name for p in CASES[case].iterdir() if p.is_dir())[0]
    segment = sorted((CASES[case] / partition).glob("*.log"))[0]
    local = _scan([str(CASES[case])], _options_of(CASES[case]))
    remote = _scan([f"s3a://{BUCKET}/{case}"], _options_of(CASES[case]), s3.storage_options())
    assert _comparable(remote) == _comparable(local)
    one = discover([f"s3://{BUCKET}/{case}/{partition}/{segment.name}"], storage=s3.storage())
    (found,) = one.partitions
    assert (found.topic, [s.size for s in found.segments]) == (partition.rsplit("-", 1)[0], [segment.stat().st_size])


@pytest.mark.skipif(not REAL_BROKER_CASES, reason="real-broker corpus not found")
def test_listing_keeps_internal_topics(s3):
    """``__consumer_offsets`` / ``__transaction_state`` start with ``_``: listed all the same."""
    case = next(c for c in CASES if c.startswith("real-broker/") and any(CASES[c].glob("__*")))
    local = {p.topic for p in discover([str(CASES[case])]).partitions}
    remote = {p.topic for p in discover([f"s3://{BUCKET}/{case}"], storage=s3.storage()).partitions}
    assert {t for t in local if t.startswith("__")}
    assert remote == local


def test_a_remote_object_has_no_modification_time_to_take_as_the_brokers_now(s3):
    # A store's object time is the upload's: it is never the default reference time.
    found = discover([f"s3://{BUCKET}/fixtures/healthy"], storage=s3.storage())
    assert found.segment_count > 0
    assert {s.mtime_ms for p in found.partitions for s in p.segments} == {None}


def test_timestamp_bounds_on_remote_objects_need_a_reference_time(s3):
    options = ScanOptions(validation=ValidationConfig(timestamp_after_max_ms=3_600_000))
    problem = reference_time_problem([f"s3://{BUCKET}/fixtures/healthy"], options)
    assert problem and "need --reference-time" in problem
    assert reference_time_problem([str(CASES["fixtures/healthy"])], options) is None
    options.reference_time = 1_700_000_000_000
    assert reference_time_problem([f"s3://{BUCKET}/fixtures/healthy"], options) is None
    with pytest.raises(ValueError, match="need --reference-time"):
        kafka_audit.scan(f"s3://{BUCKET}/fixtures/healthy", timestamp_after_max_ms=3_600_000,
                         storage_options=s3.storage_options())


def _spark_scan(spark, discovery, options: ScanOptions):
    """The Spark engine as the CLI runs it: compaction inferred from the discovery first
    (``audit_in_process`` does that itself)."""
    from kafka_audit.engines.spark_job import run_scan

    return run_scan(spark, discovery, with_inferred_compaction(options, discovery))


@pytest.mark.spark
@pytest.mark.parametrize("case", ["fixtures/faulty", "fixtures/producer-errors"])
def test_s3_scan_on_spark_equals_the_local_scan(s3, spark, case):
    options = _options_of(CASES[case])
    local = _scan([str(CASES[case])], options)
    on_spark = _spark_scan(spark, discover([f"s3://{BUCKET}/{case}"], storage=s3.storage()), options)
    assert _comparable(on_spark) == _comparable(local)


@pytest.mark.spark
@pytest.mark.skipif(not REAL_BROKER_CASES, reason="real-broker corpus not found")
def test_s3_real_broker_corpus_on_spark_equals_the_local_scan(s3, spark):
    paths = [c for c in CASES if c.startswith("real-broker/")]
    local = _scan([str(CASES[c]) for c in paths], ScanOptions())
    remote = _spark_scan(
        spark, discover([f"s3://{BUCKET}/{c}" for c in paths], storage=s3.storage()), ScanOptions()
    )
    assert remote.summary["batches"] == local.summary["batches"] > 0
    assert _comparable(remote) == _comparable(local)


@pytest.mark.spark
def test_cli_scan_of_s3_with_the_endpoint_from_the_environment(s3, tmp_path):
    """The CLI end to end (Spark local[1]): endpoint and dummy credentials from the environment
    (AWS_ENDPOINT_URL), the JSON report equal to the local copy's."""
    case = "fixtures/producer-errors"
    env = {**CREDENTIALS, "AWS_ENDPOINT_URL": s3.endpoint}
    command = [sys.executable, "-m", "kafka_audit", "scan", "--format", "json", "--master", "local[1]", "--quiet"]
    remote = subprocess.run(
        command + [f"s3://{BUCKET}/{case}"], capture_output=True, text=True, timeout=300, env={**_env(), **env}, check=False
    )
    local = subprocess.run(command + [str(CASES[case])], capture_output=True, text=True, timeout=300, env=_env(), check=False)
    assert remote.returncode == local.returncode, remote.stderr
    as_remote, as_local = json.loads(remote.stdout), json.loads(local.stdout)
    assert as_remote["findings"] == as_local["findings"] != []
    assert as_remote["summary"]["batches"] == as_local["summary"]["batches"]
    assert "note" not in remote.stderr
    # Timestamp bounds without --reference-time on objects in a store: said on stderr.
    bounded = subprocess.run(
        command + ["--timestamp-after-max-ms", "3600000", f"s3://{BUCKET}/{case}"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**_env(), **env}, check=False,
    )
    # Timestamp bounds on objects in a store need --reference-time: exit 2, one line.
    assert bounded.returncode == 2 and "need --reference-time" in bounded.stderr
    assert len(bounded.stderr.strip().splitlines()) == 1


def _env() -> dict:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}


CREDENTIALS_OPTIONS = {"key": CREDENTIALS["AWS_ACCESS_KEY_ID"], "secret": CREDENTIALS["AWS_SECRET_ACCESS_KEY"]}


def _storage_args(options: dict) -> list[str]:
    return [arg for key, value in options.items() for arg in ("--storage-option", f"{key}={value}")]


def _run_cli(capsys, *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exited:
        main(["scan", *args])
    return exited.value.code, capsys.readouterr().err


def test_a_missing_prefix_is_a_one_line_exit_2(s3, capsys):
    code, err = _run_cli(capsys, f"s3://{BUCKET}/no/such/dir", *_storage_args(s3.storage_options()))
    assert code == 2
    assert err.strip().splitlines() == [f"kafka-audit: s3://{BUCKET}/no/such/dir: No such file or directory"]


def test_an_unreachable_endpoint_is_a_one_line_exit_2(capsys):
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    options = {**CREDENTIALS_OPTIONS, "endpoint_url": f"http://127.0.0.1:{port}"}
    code, err = _run_cli(
        capsys,
        "s3://bucket/data",
        *_storage_args(options),
        "--storage-option",
        'config_kwargs={"retries": {"max_attempts": 1}, "connect_timeout": 2}',
    )
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith("kafka-audit: s3://bucket/data: ") and "127.0.0.1" in line


@pytest.mark.parametrize(
    ("uri", "cause"),
    [
        ("ftp://host/data", "unsupported URI scheme ftp://"),
        ("gs://bucket/data", "pip install 'kafka-audit[gcs]'"),
        ("abfss://container@account.dfs.core.windows.net/data", "pip install 'kafka-audit[azure]'"),
    ],
)
def test_schemes_without_a_reader_are_one_line_errors(capsys, uri, cause):
    pytest.importorskip("fsspec")
    if "gcs" in cause and _installed("gcsfs") or "azure" in cause and _installed("adlfs"):
        pytest.skip("the library is installed here")
    code, err = _run_cli(capsys, uri)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith(f"kafka-audit: {uri}: ") and cause in line


def test_hdfs_is_reached_through_the_client_and_fails_in_one_line(capsys):
    """No namenode here: the HDFS path goes through fsspec to pyarrow's HadoopFileSystem, which
    stops at libjvm/libhdfs (not installed) or at the refused connection; either way one line."""
    pytest.importorskip("pyarrow")
    code, err = _run_cli(capsys, "hdfs://127.0.0.1:1/logs")
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith("kafka-audit: hdfs://127.0.0.1:1/logs: ")
    assert any(cause in line for cause in ("libjvm", "libhdfs", "Connection refused"))


def _installed(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


class _CountingRanges:
    """A local file served by ranges, each read recorded."""

    def __init__(self, path: Path) -> None:
        self.data = path.read_bytes()
        self.size = len(self.data)
        self.reads: list[tuple[int, int]] = []

    def read(self, start: int, stop: int) -> bytes:
        self.reads.append((start, stop))
        return self.data[start:stop]


def _big_partition(root: Path, batches: int = 400) -> Path:
    with LogDirWriter(root) as d:
        w = d.partition("big", 0)
        p = Producer(77, epoch=0)
        for i in range(batches):
            p.send(w, records([b"v%05d" % i * 40] * 4))
    return root / "big-0" / f"{0:020d}.log"


def test_the_range_buffer_reads_each_byte_once_in_bounded_ranges(tmp_path):
    segment = _big_partition(tmp_path)
    ranges = _CountingRanges(segment)
    chunk = 16 * 1024
    buffer = RangeBuffer(ranges, chunk=chunk, read_ahead=2)
    with FileRecords(segment) as local:
        expected = [b for b in local.batches() if isinstance(b, RecordBatch)]
    from kafka_audit.record.file_records import iter_batches

    buffer.walk(0, None)
    walked = list(iter_batches(buffer.buffer, 0, None, buffer.size, None, buffer.need))
    buffer.close()
    assert walked == expected and len(walked) == 400
    assert ranges.size > 10 * chunk
    assert max(stop - start for start, stop in ranges.reads) <= chunk
    assert sorted(ranges.reads) == [(s, min(s + chunk, ranges.size)) for s in range(0, ranges.size, chunk)]


def test_a_remote_segment_is_split_where_its_index_says(s3, tmp_path):
    """Split points of a remote segment come from its .index (one batch read per point, no walk
    of the object on the driver); the split scan equals the unsplit one and the local one."""
    _big_partition(tmp_path / "logs")
    fs = s3.filesystem()
    upload_tree(fs, tmp_path / "logs", f"{BUCKET}/split")
    remote = discover([f"s3://{BUCKET}/split"], storage=s3.storage())
    local = discover([str(tmp_path / "logs")])
    split = replace(ScanOptions(), split_bytes=8 * 1024)
    remote_tasks = plan_tasks(remote, split.split_bytes)
    local_points = sorted(t.start for t in plan_tasks(local, split.split_bytes))
    assert len(remote_tasks) > 5
    with FileRecords(local.partitions[0].segments[0].path) as segment:
        starts = {b.position for b in segment.batches() if isinstance(b, RecordBatch)}
    assert {t.start for t in remote_tasks} <= starts
    assert len(local_points) > 5
    reference = audit_in_process(local, ScanOptions())
    assert _comparable(audit_in_process(remote, split)) == _comparable(reference)


def test_an_index_entry_that_is_not_a_batch_start_is_not_a_split_point(s3, tmp_path):
    logs = tmp_path / "logs"
    segment = _big_partition(logs)
    index = segment.with_suffix(".index")
    data = bytearray(index.read_bytes())
    data[12:16] = (int.from_bytes(data[12:16], "big") + 5).to_bytes(4, "big")  # second entry's position
    index.write_bytes(bytes(data))
    upload_tree(s3.filesystem(), logs, f"{BUCKET}/bad-index")
    remote = discover([f"s3://{BUCKET}/bad-index"], storage=s3.storage())
    bad_position = int.from_bytes(data[12:16], "big")
    split = replace(ScanOptions(), split_bytes=1024)
    assert bad_position not in {t.start for t in plan_tasks(remote, split.split_bytes)}
    local = audit_in_process(discover([str(logs)]), ScanOptions())
    assert any(f.check == "index_mismatch" for f in local.findings)
    assert _comparable(audit_in_process(remote, split)) == _comparable(local)


TOPIC_ID = "5fEBmixCR5-dMntYSLIr1g"
SEGMENT_IDS = ["oAtiIQ95REujbuzNd_lkLQ", "tvHCaSDsQZWsjr5rbtCjxA"]


def _tiered_copy(log_dir: Path, partition: str, target: Path) -> Path:
    """A partition laid out as Kafka's LocalTieredStorage plugin lays it out
    (RemoteTopicPartitionDirectory, RemoteLogSegmentFileset): ``<topic>-<partition>-<topic id>/``
    holding ``<start offset>-<segment id>.{log,index,timeindex,txnindex,snapshot,
    leader_epoch_checkpoint}``."""
    source = log_dir / partition
    folder = target / f"{partition}-{TOPIC_ID}"
    folder.mkdir(parents=True)
    for segment, uuid in zip(sorted(source.glob("*.log")), SEGMENT_IDS):
        start = int(segment.stem)
        for suffix in (".log", ".index", ".timeindex", ".txnindex"):
            if segment.with_suffix(suffix).is_file():
                shutil.copy(segment.with_suffix(suffix), folder / f"{start}-{uuid}{suffix}")
        (folder / f"{start}-{uuid}.leader_epoch_checkpoint").write_text("0\n1\n0 0\n")
        (folder / f"{start}-{uuid}.snapshot").write_bytes(b"")
    return folder


def test_tiered_storage_layout_is_recognised(s3, tmp_path):
    with LogDirWriter(tmp_path / "broker") as d:
        w = d.partition("orders", 3)
        p = Producer(9, epoch=0)
        for i in range(6):
            p.send(w, records([f"order-{i}"]))
            if i == 2:
                w.roll()
    broker = audit_in_process(discover([str(tmp_path / "broker")]), ScanOptions())
    folder = _tiered_copy(tmp_path / "broker", "orders-3", tmp_path / "tiered")
    found = discover([str(tmp_path / "tiered")])
    (partition,) = found.partitions
    assert (partition.topic, partition.partition) == ("orders", 3)
    assert [s.base_offset for s in partition.segments] == [0, 3]
    assert all(s.index and s.time_index for s in partition.segments)
    assert partition.snapshots == []
    assert len(found.notes) == 2 and all("tiered-storage producer snapshot" in n for n in found.notes)
    tiered = audit_in_process(found, ScanOptions())
    assert tiered.findings == broker.findings == []
    assert tiered.summary["batches"] == broker.summary["batches"] == 6
    upload_tree(s3.filesystem(), tmp_path / "tiered", f"{BUCKET}/tiered")
    remote = _scan([f"s3://{BUCKET}/tiered"], ScanOptions(), s3.storage_options())
    assert _comparable(remote) == _comparable(tiered)
    assert folder.name == f"orders-3-{TOPIC_ID}"


def test_a_segment_gone_after_listing_is_an_unreadable_segment_finding(s3):
    """Listed, then deleted before its task reads it: the scan says what it could not read
    instead of reporting the segment clean."""
    case = "fixtures/healthy"
    upload_tree(s3.filesystem(), CASES[case], f"{BUCKET}/vanishing")
    found = discover([f"s3://{BUCKET}/vanishing"], storage=s3.storage())
    victim = found.partitions[0].segments[0]
    s3.filesystem().rm_file(victim.path)
    result = audit_in_process(found, _options_of(CASES[case]))
    # Only that: its indexes are not verified against a log that could not be read.
    (unreadable,) = result.findings
    assert (unreadable.check, unreadable.segment, unreadable.position, unreadable.severity) == (
        "unreadable_segment",
        victim.display_path,
        0,
        "error",
    )
    assert "No such file or directory" in unreadable.message


def test_one_remote_segment_of_a_folder_does_not_claim_retention(s3, tmp_path):
    """Scanning the last segment of a folder by its URI: the folder is listed through the store
    (not os.listdir, which cannot read a URI), so the earlier segments are named as not scanned,
    as for the local file (test_false_clean), instead of being taken for deleted ones."""
    from tests.test_false_clean import write_three_segments

    folder = write_three_segments(tmp_path)
    names = sorted(p.name for p in folder.glob("*.log"))
    upload_tree(s3.filesystem(), tmp_path, f"{BUCKET}/partial")
    local = _scan([str(folder / names[-1])], ScanOptions())
    remote_discovery = discover([f"s3://{BUCKET}/partial/orders-0/{names[-1]}"], storage=s3.storage())
    (partition,) = remote_discovery.partitions
    assert partition.unscanned_segments == names[:-1] and partition.folder_first_offset == 0
    remote = audit_in_process(remote_discovery, ScanOptions())
    (finding,) = remote.findings
    assert finding.details["unscanned_segments"] == names[:-1]
    assert "were not scanned" in finding.message and "deleted (" not in finding.message
    assert [(f.check, f.message, f.details) for f in remote.findings] == [
        (f.check, f.message, f.details) for f in local.findings
    ]


def test_a_remote_folder_that_cannot_be_listed_is_noted(monkeypatch, tmp_path):
    """A partition folder whose listing fails: discovery says the earlier segments are unknown
    instead of returning without a word."""
    from kafka_audit.log import log_dir
    from tests.test_false_clean import write_three_segments

    folder = write_three_segments(tmp_path)
    last = sorted(folder.glob("*.log"))[-1]

    def refuse(self, path):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(log_dir.LocalTree, "scandir", refuse)
    found = discover([str(last)])
    assert found.partitions[0].unscanned_segments == []
    assert any("could not be listed (Permission denied)" in note for note in found.notes)


@pytest.mark.parametrize("bad", ["novalue", "=x"])
def test_a_storage_option_without_a_key_and_value_is_a_usage_error(capsys, bad):
    code, err = _run_cli(capsys, str(FIXTURES / "healthy"), "--storage-option", bad)
    assert code == 2
    assert err.strip().splitlines() == [
        "kafka-audit: --storage-option number 1 is not KEY=VALUE (its text is not shown: it may hold a secret)"]


def test_storage_option_values_are_typed():
    assert storage.parse_option_value("true") is True
    assert storage.parse_option_value("False") is False
    assert storage.parse_option_value('{"region_name": "eu-west-1"}') == {"region_name": "eu-west-1"}
    assert storage.parse_option_value("00123") == "00123"


def test_file_uris_are_local_paths(tmp_path):
    local = discover([str(FIXTURES / "faulty")])
    as_uri = discover([(FIXTURES / "faulty").as_uri()])
    assert [(p.key, [s.path for s in p.segments]) for p in as_uri.partitions] == [
        (p.key, [s.path for s in p.segments]) for p in local.partitions
    ]


class _FailingRanges(_CountingRanges):
    """Serves the first ``good`` reads, then fails as a dropped connection does."""

    def __init__(self, path: Path, good: int) -> None:
        super().__init__(path)
        self.good = good

    def read(self, start: int, stop: int) -> bytes:
        if len(self.reads) >= self.good:
            raise OSError(104, "Connection reset by peer")
        return super().read(start, stop)


def test_a_read_failing_part_way_is_an_unreadable_segment_after_what_was_read(tmp_path, monkeypatch):
    """Batches before the failure are audited; the rest of the segment is said to be unread."""
    from kafka_audit.audit.segment_audit import SegmentAuditor
    from kafka_audit.record import file_records, range_buffer

    segment = _big_partition(tmp_path)
    (task,) = plan_tasks(discover([str(tmp_path)]))
    monkeypatch.setattr(file_records, "is_remote", lambda path: True)
    monkeypatch.setattr(StorageContext, "range_reader", lambda self, path, size=None: _FailingRanges(segment, 2))
    monkeypatch.setattr(
        file_records, "RangeBuffer", lambda ranges, pages=None: range_buffer.RangeBuffer(ranges, chunk=64 * 1024, read_ahead=0, pages=pages)
    )
    auditor = SegmentAuditor(task, ValidationConfig())
    items = list(auditor.run())
    findings = [i for i in items if isinstance(i, Finding)]
    batches = len(items) - len(findings)
    (unreadable,) = findings
    assert unreadable.check == "unreadable_segment" and "Connection reset by peer" in unreadable.message
    assert 0 < batches < 400
    assert unreadable.details["unread_bytes"] == segment.stat().st_size - unreadable.position
    assert unreadable.position < 2 * 64 * 1024


@pytest.mark.spark
def test_a_remote_segment_split_by_its_index_on_spark(s3, spark, tmp_path):
    _big_partition(tmp_path / "logs")
    upload_tree(s3.filesystem(), tmp_path / "logs", f"{BUCKET}/split-spark")
    remote = discover([f"s3://{BUCKET}/split-spark"], storage=s3.storage())
    split = replace(ScanOptions(), split_bytes=16 * 1024)
    assert len(plan_tasks(remote, split.split_bytes)) > 5
    reference = audit_in_process(discover([str(tmp_path / "logs")]), ScanOptions())
    assert _comparable(_spark_scan(spark, remote, split)) == _comparable(reference)


def test_walked_pages_of_a_remote_segment_are_freed(tmp_path, monkeypatch):
    """Behind the walk the buffer's pages are given back (they read as zeros again), so a large
    object costs a few chunks of memory, not its size."""
    from kafka_audit.record import file_records, range_buffer

    segment = _big_partition(tmp_path)
    monkeypatch.setattr(file_records, "_RELEASE_EVERY", 16 * 1024)
    monkeypatch.setattr(file_records, "is_remote", lambda path: True)
    monkeypatch.setattr(StorageContext, "range_reader", lambda self, path, size=None: _CountingRanges(segment))
    monkeypatch.setattr(
        file_records, "RangeBuffer", lambda ranges, pages=None: range_buffer.RangeBuffer(ranges, chunk=16 * 1024, read_ahead=2, pages=pages)
    )
    with FileRecords(str(segment)) as remote:
        walked = [b for b in remote.batches() if isinstance(b, RecordBatch)]
        first_page = bytes(remote.buffer[: 4096])
        size = remote.size
    assert len(walked) == 400 and size > 10 * 16 * 1024
    assert first_page == bytes(4096)


def test_sidecar_read_ahead_holds_at_most_sixteen_reads_and_drops_leftovers(monkeypatch):
    started: list[str] = []

    def fake_read(path: str, start: int, stop: int) -> bytes:
        started.append(path)
        return path.encode()

    request = StorageContext()
    monkeypatch.setattr(request, "_read_range", fake_read)
    paths = [f"s3://bucket/t-0/{i:020d}.index" for i in range(40)]
    with request, request.prefetching(paths + [None, "/local/file.index"], 100):
        assert len(request._prefetched) == 16
        assert request.read_bytes(paths[0], 100) == paths[0].encode()  # taken: one more may start
        assert len(request._prefetched) == 16
    assert request._prefetched == {} and not request._to_prefetch
    assert set(started) <= set(paths[:17])  # never more than the 16 held and the one taken


def test_cli_local_engine_on_s3_equals_the_local_copy(s3, capsys):
    """``scan --engine local`` of an ``s3://`` PATH with ``--storage-option``: the JSON report's
    findings and counts are the local copy's."""
    case = "fixtures/faulty"
    expected = json.loads((CASES[case] / "EXPECTED.json").read_text())["options"]
    args = ["--engine", "local", "--format", "json", "--quiet", "--fail-on", "never"]
    args += ["--reference-time", str(expected["reference_time"])] if "reference_time" in expected else []

    def run(*extra: str) -> dict:
        with pytest.raises(SystemExit) as exited:
            main(["scan", *args, *extra])
        out, err = capsys.readouterr()
        assert exited.value.code == 0, err
        return json.loads(out)

    remote = run(f"s3://{BUCKET}/{case}", *_storage_args(s3.storage_options()))
    local = run(str(CASES[case]))
    assert remote["findings"] == local["findings"] != []
    for key in ("partitions", "segments", "batches", "records", "bytes", "findings_by_check"):
        assert remote["summary"][key] == local["summary"][key]


def test_a_wide_prefix_is_listed_as_page_chains_side_by_side_with_the_same_keys(s3, monkeypatch):
    """A log dir of many partition folders is listed as several ListObjectsV2 chains at once
    (io/s3_listing.py), cut at folder names; s3fs's own recursive listing is the oracle for the
    keys, and the server's log shows the chains and bounds the requests."""
    from kafka_audit.io import s3_listing

    fs = s3.filesystem()
    root = f"{BUCKET}/wide"
    objects = {f"{root}/t-{n}/{i:020d}.log": bytes(n % 7 + i) for n in range(200) for i in range(3)}
    objects[f"{root}/meta.properties"] = b"version=1\n"
    objects[f"{root}/t-100.txt"] = b"an object beside a folder where a chain may start"
    objects[f"{root}/t-1!/x.log"] = b"a folder sorting between t-1 and t-1/"
    objects[f"{root}/marker/"] = b""
    fs.pipe(objects)
    monkeypatch.setattr(s3_listing, "_PAGE_KEYS", 100)
    monkeypatch.setattr(s3_listing, "FOLDERS_PER_CHAIN", 16)
    before = len(s3.requests_logged())
    found = s3_listing.find(s3.filesystem(), root)
    logged = s3.requests_logged()[before:]
    oracle = fs.find(root, withdirs=True, detail=True)
    # A zero-byte key ending in "/" is a folder marker (the S3 console's "Create folder"): a folder.
    files = {k: v["size"] for k, v in oracle.items() if v["type"] == "file" and not k.endswith("/")}
    assert {k: v["size"] for k, v in found.items() if v["type"] == "file"} == files
    assert len(files) == len(objects) - 1 and found[f"{root}/marker"]["type"] == "directory"
    chains = [line for line in logged if "start-after=" in line]
    assert len(chains) == min(s3_listing.CHAINS, 202 // 16) - 1
    serial_pages = -(-(len(objects)) // 100)
    assert len(logged) <= serial_pages + 1 + len(chains) + 1  # + the delimiter listing, + one page a chain
