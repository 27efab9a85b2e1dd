"""The executor preflight (kafka_audit/engines/preflight.py) on a classic local session and on a Spark
Connect server; the cluster cases (executors without kafka_audit, data they cannot see) are in
tests/test_cluster.py."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys

import pytest

import kafka_audit
from kafka_audit.engines.preflight import ExecutorEnvironmentError, check_executors, probe
from tests.conftest import FIXTURES
from tests.support.spark_cluster import ConnectServer
from tests.support.venvs import python_lacking


def test_the_probe_reports_each_difference_from_the_driver(tmp_path):
    report = json.loads(probe([str(tmp_path), str(tmp_path / "gone"), str(tmp_path / "gone2")], "0.0.0-other", [2, 7], 0.0))
    assert report["errors"] == [
        f"runs Python {sys.version_info[0]}.{sys.version_info[1]} ({sys.executable}), the driver Python 2.7",
        f"has kafka_audit {kafka_audit.__version__}, the driver 0.0.0-other",
        f"cannot see {tmp_path / 'gone'} (No such file or directory), nor 1 more of the 3 input folders",
    ]


def test_the_probe_warns_without_the_compiled_screen(tmp_path, monkeypatch):
    """An executor installed without a C compiler runs the audit (every batch in full): a warning."""
    real = importlib.import_module

    def without_screen(name, *args):
        if name == "kafka_audit.record._record_screen":
            raise ImportError("built for another platform")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", without_screen)
    report = json.loads(probe([str(tmp_path)], kafka_audit.__version__, list(sys.version_info[:2]), 0.0))
    assert report["errors"] == []
    assert report["warnings"] == [
        "has no compiled record screen (ImportError: built for another platform): it validates every batch in full, "
        "slower, with the same findings"
    ]


@pytest.mark.spark
def test_a_classic_session_passes_and_names_a_path_it_cannot_see(spark, tmp_path):
    found = check_executors(spark, [str(tmp_path)])
    assert len(found.executors) == 1
    with pytest.raises(ExecutorEnvironmentError) as failure:
        check_executors(spark, [str(tmp_path / "gone")])
    # A local session's executor is the driver's host; its Python worker (the pid named) may differ.
    assert str(failure.value).endswith(f" cannot run the audit: cannot see {tmp_path / 'gone'} (No such file or directory)")


@pytest.mark.spark
def test_a_local_session_on_this_python_is_probed_here_without_a_job(spark, tmp_path, monkeypatch):
    """``local[...]`` with Python workers on this interpreter: the probe runs in this process;
    with another Python path (another environment, maybe) the probe job runs as before."""
    import socket

    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup())
    found = check_executors(spark, [str(tmp_path)])
    assert set(tracker.getJobIdsForGroup()) == before
    assert found.executors == [f"{socket.gethostname()} (pid {os.getpid()})"]
    with pytest.raises(ExecutorEnvironmentError, match="cannot see"):
        check_executors(spark, [str(tmp_path / "gone")])
    folder = os.path.dirname(sys.executable)
    other = next((os.path.join(folder, name) for name in ("python3", "python", f"python3.{sys.version_info[1]}")
                  if os.path.join(folder, name) != sys.executable and os.path.exists(os.path.join(folder, name))), None)
    if other is None:
        pytest.skip("no second name for this interpreter")
    monkeypatch.setattr(spark.sparkContext, "pythonExec", other)
    check_executors(spark, [str(tmp_path)])
    assert set(tracker.getJobIdsForGroup()) > before


@pytest.fixture(scope="module")
def python_without_crc32c(tmp_path_factory):
    return python_lacking(tmp_path_factory.mktemp("venv"), "crc32c")


@pytest.mark.spark
def test_the_api_checks_a_given_sessions_executors_and_names_what_they_lack(spark, python_without_crc32c, monkeypatch):
    """``kafka_audit.scan`` on a user's classic session whose Python workers run an environment
    without crc32c: one ``ExecutorEnvironmentError`` line naming the executor and the module, raised
    before the job (which would fail inside a task with a Python traceback)."""
    monkeypatch.setattr(spark.sparkContext, "pythonExec", str(python_without_crc32c))
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup())
    with pytest.raises(kafka_audit.ExecutorEnvironmentError) as failure:
        kafka_audit.scan(FIXTURES / "healthy", spark=spark)
    (line,) = str(failure.value).splitlines()
    assert line.endswith(
        f" cannot run the audit: lacks crc32c ({python_without_crc32c}: ModuleNotFoundError: No module named 'crc32c'); "
        f"set PYSPARK_PYTHON (or spark.pyspark.python) to a Python with kafka-audit {kafka_audit.__version__} on every executor"
    )
    assert len(set(tracker.getJobIdsForGroup()) - before) <= 3  # the probe's rounds, no scan job
    monkeypatch.undo()
    result = kafka_audit.scan(FIXTURES / "healthy", spark=spark)
    result.unpersist()
    assert result.summary["segments"] > 0


@pytest.fixture(scope="module")
def connect(tmp_path_factory):
    for module in ("grpc", "grpc_status", "pandas", "pyarrow"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"Spark Connect's client needs {module}")
    server = ConnectServer(tmp_path_factory.mktemp("connect"))
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.mark.spark
def test_a_spark_connect_session_runs_the_probe_as_a_dataframe_job(connect, tmp_path):
    from pyspark.sql import SparkSession

    environment = dict(os.environ)  # PySpark marks the process as in Connect mode (SPARK_CONNECT_MODE_ENABLED)
    session = SparkSession.builder.remote(connect.url).create()  # beside the classic test session
    try:
        found = check_executors(session, [str(tmp_path)])
        assert len(found.executors) == 1 and found.warnings == []
        with pytest.raises(ExecutorEnvironmentError) as failure:
            check_executors(session, [str(tmp_path / "gone")])
        assert str(failure.value).endswith(f"cannot run the audit: cannot see {tmp_path / 'gone'} (No such file or directory)")
    finally:
        session.stop()
        os.environ.clear()
        os.environ.update(environment)  # later tests' processes start classic sessions
