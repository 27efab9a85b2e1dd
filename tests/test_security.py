"""Issue 27, SPEC section 1 (``--spark-secret-file``): a local scan listens on loopback only; a
secret turns on Spark's authentication and encryption without reaching a command line; scratch
folders are private and gone on every way out; a kept failure log is 0600 and named.

The authenticated cluster: tests/test_cluster_auth.py. Secrets in every output: tests/test_secret_leaks.py.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.engines.local import audit_in_process
from kafka_audit.engines.preflight import DAEMON_MODULE
from kafka_audit.engines.spark_security import AUTHENTICATION, is_local_master, loopback_settings
from kafka_audit.log.log_dir import discover
from tests.conftest import FIXTURES, REPO
from tests.support.process_tree import is_loopback

SECRET = "kafka-audit-test-secret-5c1e0f"
RUN_TIMEOUT_S = 240


def write_secret(folder: Path, secret: str = SECRET) -> Path:
    path = folder / "spark.secret"
    path.write_text(secret + "\n")
    path.chmod(0o600)
    return path


def test_only_local_masters_are_held_to_loopback():
    for master in ("local", "local[1]", "local[*]", "local[4, 2]", "local[*,3]"):
        assert is_local_master(master), master
        assert loopback_settings(master) == {"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"}
    for master in ("spark://127.0.0.1:7077", "yarn", "k8s://https://h:443", "local-cluster[2,1,1024]", "localhost"):
        assert not is_local_master(master) and loopback_settings(master) == {}, master


def test_loopback_addresses():
    assert all(map(is_loopback, ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "192.0.2.2", "::ffff:192.0.2.2", "fd00::2"]))


@pytest.mark.spark
@pytest.mark.parametrize("with_secret", [False, True], ids=["default", "spark-secret-file"])
def test_a_local_scan_listens_on_loopback_only(tmp_path, with_secret):
    """Read from the scan's own progress hook, with the driver JVM and PySpark's worker daemon up:
    every listening socket of the process tree is on a loopback address; the UI (0.0.0.0:4040 by
    default) is not there. With a secret, it is on no command line or environment of the tree."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    command = [sys.executable, "-m", "tests.support.process_tree", str(FIXTURES / "faulty")]
    if with_secret:
        command.append(str(write_secret(tmp_path)))
    environment = {**os.environ, "TMPDIR": str(temporary)}
    environment.pop("SPARK_LOCAL_IP", None)  # nothing outside the scan keeps it on loopback
    done = subprocess.run(command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    # PySpark's worker daemon, run from the compiled package (preflight.DAEMON_MODULE)
    assert "java" in seen["processes"] and any(DAEMON_MODULE in line for line in seen["command_lines"])
    java = [listener for listener in seen["listeners"] if listener["process"] == "java"]
    assert len(java) >= 2  # at least the driver's RPC server and its block manager
    assert [listener for listener in seen["listeners"] if not is_loopback(listener["address"])] == []
    assert not any(listener["port"] == 4040 for listener in seen["listeners"])
    if with_secret:
        assert not any(SECRET in text for text in seen["command_lines"] + seen["environments"])
    assert seen["findings"] == len(audit_in_process(discover([str(FIXTURES / "faulty")]), ScanOptions()).findings) > 0
    scratch = {name: mode for name, mode in seen["scratch"].items() if name.startswith("kafka-audit-spark-")}
    assert list(scratch.values()) == [0o700]
    assert list(temporary.iterdir()) == []  # removed after success


@pytest.mark.spark
def test_a_secret_turns_on_authentication_and_encryption(tmp_path):
    """The settings reach the JVM's configuration; the secret is set there, not on a command line."""
    program = (
        "import sys\n"
        "from kafka_audit.engines.spark_session import spark_session\n"
        f"with spark_session('local[1]', secret={SECRET!r}) as spark:\n"
        "    conf = spark.sparkContext.getConf()\n"
        f"    print(*(conf.get(key) for key in {sorted(AUTHENTICATION)!r}))\n"
        f"    print(conf.get('spark.authenticate.secret') == {SECRET!r})\n"
        "    print(spark.sparkContext.parallelize(range(10), 2).sum())\n"
    )
    done = subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          env={**os.environ, "TMPDIR": str(tmp_path)}, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["true true true", "True", "45"]
    assert list(tmp_path.iterdir()) == []


def run_scan(*args, tmp: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "kafka_audit", "scan", *map(str, args)]
    environment = {**os.environ, "TMPDIR": str(tmp), **(env or {})}
    return subprocess.run(command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)


@pytest.mark.parametrize(
    "content, reason",
    [(None, "No such file or directory"), ("", "the file is empty"), ("\n", "the file is empty"), (b"\xff\xfe", "not UTF-8 text")],
)
def test_a_secret_file_that_cannot_be_used_is_one_line_exit_2(tmp_path, content, reason):
    path = tmp_path / "secret"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    done = run_scan(FIXTURES / "healthy", "--quiet", "--spark-secret-file", path, tmp=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"kafka-audit: --spark-secret-file {path}: {reason}\n")


def test_a_secret_file_is_refused_with_spark_connect(tmp_path):
    done = run_scan(FIXTURES / "healthy", "--remote", "sc://127.0.0.1:1", "--spark-secret-file", write_secret(tmp_path),
                    tmp=tmp_path)
    assert done.returncode == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1
    assert "--spark-secret-file secures a classic session (--master)" in done.stderr and SECRET not in done.stderr


def test_the_local_engine_reads_no_secret(tmp_path):
    """No Spark, nothing to secure: the file is not even opened (it does not exist here)."""
    done = run_scan(FIXTURES / "healthy", "--engine", "local", "--quiet", "--spark-secret-file", tmp_path / "none", tmp=tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.spark
def test_a_failed_run_keeps_only_its_log_0600_named_in_the_exit_2_line(tmp_path):
    done = run_scan(FIXTURES / "healthy", "--quiet", "--conf", "spark.driver.memory=lots", tmp=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    kept = Path(line.rsplit("; Spark's log: ", 1)[1])
    assert [p.name for p in tmp_path.iterdir()] == [kept.name]  # the scratch folder is gone
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and "Invalid maximum heap size" in kept.read_text()


@pytest.mark.spark
def test_an_exception_inside_the_session_removes_the_scratch_folder(tmp_path):
    program = (
        "from kafka_audit.engines.spark_session import spark_session, SparkFailure\n"
        "try:\n"
        "    with spark_session('local[1]') as spark:\n"
        "        raise ValueError('not Spark')\n"
        "except SparkFailure as failure:\n"
        "    print(failure)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          env={**os.environ, "TMPDIR": str(tmp_path)}, check=False)
    assert done.returncode == 0, done.stderr
    kept = Path(done.stdout.strip().rsplit("; Spark's log: ", 1)[1])
    assert done.stdout.startswith("not Spark; Spark's log: ")
    assert [p.name for p in tmp_path.iterdir()] == [kept.name]
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
