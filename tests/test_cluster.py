"""The CLI on a real Spark standalone cluster (a master and two one-core workers on 127.0.0.1,
started from the installed PySpark): a relative PATH, executors that cannot see the data, and
executors whose Python lacks kafka_audit. Each case is a ``kafka-audit scan`` process, as a user
runs it; the expected findings come from the in-process engine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kafka_audit
from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.engines.local import audit_in_process
from kafka_audit.log.log_dir import discover
from tests.conftest import FIXTURES
from tests.support.spark_cluster import StandaloneCluster, can_hide_folders
from tests.support.venvs import python_lacking
from tests.test_remote import BUCKET, CASES, s3  # noqa: F401  (s3: the moto server fixture)

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

# Longest a scan process may take on a loaded two-core machine before the test gives up on it.
SCAN_TIMEOUT_S = 240


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if not can_hide_folders():
        pytest.skip("unshare -m with a tmpfs mount is not available: cannot hide data from a worker")
    root = tmp_path_factory.mktemp("cluster")
    hidden = root / "hidden"
    hidden.mkdir()
    started = StandaloneCluster(root, workers=2, hidden={2: hidden})
    try:
        started.start()
        yield started
    finally:
        started.stop()


def scan(cluster: StandaloneCluster, *args, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    command = [
        sys.executable, "-m", "kafka_audit", "scan", *map(str, args),
        "--master", cluster.url,
        "--conf", "spark.driver.host=127.0.0.1",
        "--conf", "spark.driver.bindAddress=127.0.0.1",
        "--conf", "spark.executor.memory=512m",
        "--quiet",
    ]
    environment = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "TMPDIR": str(cwd), **(env or {})}
    return subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=SCAN_TIMEOUT_S, check=False)


def test_a_relative_path_is_read_by_executors_whatever_their_working_folder(cluster, tmp_path):
    shutil.copytree(FIXTURES / "faulty", tmp_path / "data", symlinks=True)
    done = scan(cluster, "data", "--format", "json", cwd=tmp_path)
    expected = audit_in_process(discover([str(tmp_path / "data")]), ScanOptions())
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["summary"]["bytes_read"] == report["summary"]["bytes_found"] == expected.summary["bytes_found"] > 0
    assert report["summary"]["segments_unreadable"] == expected.summary["segments_unreadable"]
    assert report["summary"]["findings_by_check"] == expected.summary["findings_by_check"]
    assert [f["segment"] for f in report["findings"]] == [f.segment for f in expected.findings]
    assert all(not f["segment"] or not os.path.isabs(f["segment"]) for f in report["findings"])


def test_executors_that_cannot_see_the_data_stop_the_scan(cluster, tmp_path):
    """Worker 2 runs in a mount namespace where the data folder is hidden under an empty tmpfs."""
    data = cluster.hidden[2] / "data"
    shutil.copytree(FIXTURES / "healthy", data)
    try:
        done = scan(cluster, data, "--format", "json", cwd=tmp_path)
    finally:
        shutil.rmtree(data)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("kafka-audit: Spark failed: executor ")
    assert f"cannot run the audit: cannot see {data} (No such file or directory), nor " in line
    assert "Spark's log: " in line


@pytest.fixture(scope="module")
def venv_without_kafka_audit(tmp_path_factory) -> Path:
    """A virtual environment of the same Python that has PySpark but not kafka_audit."""
    return python_lacking(tmp_path_factory.mktemp("venv"), "kafka_audit")


def test_executors_without_kafka_audit_are_named_with_the_cause(cluster, tmp_path, venv_without_kafka_audit):
    shutil.copytree(FIXTURES / "healthy", tmp_path / "data")
    done = scan(cluster, "data", cwd=tmp_path, env={"PYSPARK_PYTHON": str(venv_without_kafka_audit)})
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("kafka-audit: Spark failed: executor ")
    assert (
        f"cannot run the audit: cannot import kafka_audit with {venv_without_kafka_audit} "
        "(ModuleNotFoundError: No module named 'kafka_audit')" in line
    )
    # What to set comes before the log's path that every Spark failure line ends with.
    assert ("; set PYSPARK_PYTHON (or spark.pyspark.python) to a Python with kafka-audit "
            f"{kafka_audit.__version__} on every executor; Spark's log: ") in line


def test_an_s3_scan_on_the_cluster_equals_the_local_scan(cluster, s3, tmp_path):  # noqa: F811
    """Executors on two workers read the objects of a local S3 server by ranged reads, with the
    endpoint and credentials given as --storage-option (they travel with the tasks): the report
    equals the in-process audit of the same files on disk."""
    case = "fixtures/faulty"
    options = [arg for key, value in s3.storage_options().items() for arg in ("--storage-option", f"{key}={value}")]
    done = scan(cluster, f"s3://{BUCKET}/{case}", "--format", "json", *options, cwd=tmp_path)
    local = subprocess.run(
        [sys.executable, "-m", "kafka_audit", "scan", str(CASES[case]), "--engine", "local", "--format", "json", "--quiet"],
        capture_output=True, text=True, timeout=SCAN_TIMEOUT_S, check=False,
    )
    assert done.returncode == local.returncode == 1, done.stderr
    remote, expected = json.loads(done.stdout), json.loads(local.stdout)
    assert remote["summary"]["engine"] == "spark" and expected["summary"]["engine"] == "local"
    assert remote["findings"] == expected["findings"] != []
    assert remote["summary"]["batches"] == expected["summary"]["batches"] > 0
    assert remote["summary"]["bytes_read"] == remote["summary"]["bytes_found"] == expected["summary"]["bytes_found"]
