"""Spark failing to start or to run, and Ctrl-C, through ``kafka-audit scan`` processes: one line
on stderr with the root cause and the kept log, exit 2 (SPEC section 1); 130 on Ctrl-C."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO
from tests.support.spark_cluster import free_port

pytestmark = pytest.mark.spark

SCAN_TIMEOUT_S = 180
_LOG = re.compile(r"; Spark's log: (?P<path>\S+)$")


def scan(*args, tmp: Path, env: dict | None = None, timeout: float = SCAN_TIMEOUT_S) -> subprocess.CompletedProcess:
    environment = {**os.environ, "TMPDIR": str(tmp), "SPARK_LOCAL_IP": "127.0.0.1", **(env or {})}
    command = [sys.executable, "-m", "kafka_audit", "scan", str(FIXTURES / "healthy"), "--quiet", *map(str, args)]
    return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=timeout, cwd=REPO, check=False)


def one_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    return line


def test_an_invalid_master_url_names_spark_s_reason(tmp_path):
    line = one_line(scan("--master", "bogus://x", tmp=tmp_path))
    assert line.startswith(
        "kafka-audit: Spark failed: SparkException: Master must either be yarn or start with spark, k8s, or local; "
    )
    assert Path(_LOG.search(line)["path"]).is_file()


def test_an_invalid_driver_memory_names_the_jvm_s_reason(tmp_path):
    line = one_line(scan("--conf", "spark.driver.memory=lots", tmp=tmp_path))
    assert line.startswith("kafka-audit: Spark failed: Invalid maximum heap size: -Xmxlots; Spark's log: ")


def test_a_master_that_refuses_connections_fails_at_once(tmp_path):
    port = free_port()  # bound and released: nothing listens there
    started = time.monotonic()
    line = one_line(scan("--master", f"spark://127.0.0.1:{port}", tmp=tmp_path))
    assert line == f"kafka-audit: Spark failed: cannot reach the Spark master at 127.0.0.1:{port} (Connection refused)"
    assert list(tmp_path.glob("kafka-audit-spark-*")) == []  # no JVM started, no log kept
    assert time.monotonic() - started < SCAN_TIMEOUT_S  # bounded; the figure is in the report, not asserted


def test_a_master_that_never_answers_fails_after_the_bound(tmp_path):
    """A port that takes TCP connections and never speaks Spark's RPC: Spark alone waits over a
    minute; the scan gives up 20 s after the driver's JVM is up."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        port = silent.getsockname()[1]
        line = one_line(scan("--master", f"spark://127.0.0.1:{port}", "--conf", "spark.driver.host=127.0.0.1", tmp=tmp_path))
    assert line.startswith(
        f"kafka-audit: Spark failed: the Spark master spark://127.0.0.1:{port} did not accept the application within 20 s"
    )
    assert Path(_LOG.search(line)["path"]).is_file()


def _other_python_minor() -> str | None:
    """A Python interpreter of another minor version on this machine, if there is one."""
    mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
    candidates = [shutil.which(f"python3.{minor}") for minor in range(8, 15)]
    candidates += [str(p) for p in Path.home().glob(".pyenv/versions/3.*/bin/python3")]
    for path in filter(None, candidates):
        try:
            version = subprocess.run(
                [path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True, timeout=30, check=False
            ).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            continue
        if version and version != mine and tuple(map(int, version.split("."))) >= (3, 9):
            return path
    return None


def test_executors_on_another_python_minor_name_the_mismatch(tmp_path):
    other = _other_python_minor()
    if other is None:
        pytest.skip("no Python of another minor version on this machine")
    venv = tmp_path / "venv"
    subprocess.run([other, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()
    import sysconfig

    Path(site, "spark-only.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # PySpark is pure Python
    line = one_line(scan("--master", "local[1]", tmp=tmp_path, env={"PYSPARK_PYTHON": str(venv / "bin" / "python")}))
    assert "cannot run the audit: PySparkRuntimeError: [PYTHON_VERSION_MISMATCH] Python in worker has different version" in line
    assert line.startswith("kafka-audit: Spark failed: ") and "; Spark's log: " in line


def _descendants(pid: int) -> list[str]:
    """Command lines of the processes below ``pid``."""
    children: dict[int, list[int]] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            commands[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(commands.get(child, ""))
            todo.append(child)
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to see the Python workers start")
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_during_a_scan_is_one_line_exit_130_and_no_scratch_left(tmp_path, stop):
    """Ctrl-C, and SIGTERM (a service manager, ``timeout``) the same way: the scratch folder goes."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    data = tmp_path / "data"
    for copy in range(8):  # enough partitions that the job is still running when Ctrl-C comes
        shutil.copytree(FIXTURES / "healthy", data / f"copy{copy}")
    env = {**os.environ, "TMPDIR": str(scratch)}
    process = subprocess.Popen(
        [sys.executable, "-m", "kafka_audit", "scan", str(data), "--quiet", "--master", "local[2]"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
    )
    try:
        deadline = time.monotonic() + SCAN_TIMEOUT_S
        while time.monotonic() < deadline and process.poll() is None:
            if any("pyspark.worker" in command for command in _descendants(process.pid)):  # the worker daemon's argument
                break  # the Python workers are up: a job is running
            time.sleep(0.2)
        assert process.poll() is None, process.stderr.read()
        process.send_signal(stop)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    assert (process.returncode, err, out) == (130, "kafka-audit: interrupted\n", "")
    assert list(scratch.iterdir()) == []
