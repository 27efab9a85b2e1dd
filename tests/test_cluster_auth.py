"""``--spark-secret-file`` on a Spark standalone cluster whose master and worker run with
authentication and RPC encryption on (issue 27; Spark's docs/security.md: outside YARN and
Kubernetes, the daemons and the applications share ``spark.authenticate.secret``). Each case is a
``kafka-audit scan`` process; the expected findings come from the local engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.support.spark_cluster import SLOW_START_S, StandaloneCluster, authenticated

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

SECRET = "cluster-secret-7d41a9e2"
SCAN_TIMEOUT_S = 240


@pytest.fixture(scope="module")
def secured_cluster(tmp_path_factory):
    """A master and one worker on 127.0.0.1 that accept only applications holding ``SECRET``."""
    root = tmp_path_factory.mktemp("secured-cluster")
    started = StandaloneCluster(root, workers=1, properties=authenticated(SECRET), start_timeout_s=SLOW_START_S)
    try:
        started.start()
        yield started
    finally:
        started.stop()


def scan(cluster: StandaloneCluster, tmp: Path, *args, secret: str | None = None, env: dict | None = None):
    """``kafka-audit scan`` of fixtures/faulty on the cluster, with ``secret`` in a 0600 file."""
    command = [
        sys.executable, "-m", "kafka_audit", "scan", str(FIXTURES / "faulty"), "--format", "json", "--quiet",
        "--master", cluster.url,
        "--conf", "spark.driver.host=127.0.0.1",
        "--conf", "spark.driver.bindAddress=127.0.0.1",
        "--conf", "spark.executor.memory=512m",
        # An executor JVM takes over Spark's default 30 s to start on a loaded two-core machine.
        "--conf", "spark.scheduler.maxRegisteredResourcesWaitingTime=150s",
        *args,
    ]
    if secret is not None:
        path = tmp / "spark.secret"
        path.write_text(secret + "\n")
        path.chmod(0o600)
        command += ["--spark-secret-file", str(path)]
    environment = {k: v for k, v in os.environ.items() if k != "_SPARK_AUTH_SECRET"}
    environment.update({"SPARK_LOCAL_IP": "127.0.0.1", "TMPDIR": str(tmp), **(env or {})})
    return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=SCAN_TIMEOUT_S, check=False)


def local_report() -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "kafka_audit", "scan", str(FIXTURES / "faulty"), "--engine", "local", "--format", "json", "--quiet"],
        capture_output=True, text=True, timeout=SCAN_TIMEOUT_S, check=False,
    )
    assert done.returncode == 1, done.stderr
    return json.loads(done.stdout)


def test_the_cluster_s_secret_gives_the_local_findings(secured_cluster, tmp_path):
    done = scan(secured_cluster, tmp_path, secret=SECRET)
    assert done.returncode == 1, done.stderr
    report, expected = json.loads(done.stdout), local_report()
    assert report["summary"]["engine"] == "spark"
    assert report["findings"] == expected["findings"] != []
    assert report["summary"]["bytes_read"] == expected["summary"]["bytes_read"] > 0
    assert SECRET not in done.stdout + done.stderr
    assert list(tmp_path.glob("kafka-audit-spark-*")) == []


def test_the_secret_from_spark_s_environment_variable(secured_cluster, tmp_path):
    done = scan(secured_cluster, tmp_path, env={"_SPARK_AUTH_SECRET": SECRET})
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["findings"] == local_report()["findings"]


@pytest.mark.parametrize(
    "secret, reason",
    [
        (None, "requires authentication: give the cluster's shared secret with --spark-secret-file (or _SPARK_AUTH_SECRET)"),
        ("not-the-" + SECRET, "refused the authentication: the secret given (--spark-secret-file or _SPARK_AUTH_SECRET) "
         "is not the cluster's"),
    ],
    ids=["no-secret", "wrong-secret"],
)
def test_without_the_secret_the_scan_fails_in_one_line(secured_cluster, tmp_path, secret, reason):
    done = scan(secured_cluster, tmp_path, secret=secret)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"kafka-audit: Spark failed: the Spark master {secured_cluster.url} {reason}; Spark's log: ")
    kept = Path(line.rsplit("; Spark's log: ", 1)[1])
    assert [p.name for p in tmp_path.glob("kafka-audit-spark-*")] == [kept.name]
    assert SECRET not in kept.read_text() and (secret is None or secret not in kept.read_text() + line)


def test_the_python_api_takes_the_secret_file_too(secured_cluster, tmp_path):
    """``kafka_audit.scan(..., master=..., spark_secret_file=...)``: the session it starts holds
    the cluster's secret, as the CLI's does."""
    path = tmp_path / "spark.secret"
    path.write_text(SECRET + "\n")
    path.chmod(0o600)
    code = (
        "import json, sys, kafka_audit\n"
        "conf = {'spark.driver.host': '127.0.0.1', 'spark.driver.bindAddress': '127.0.0.1',\n"
        "        'spark.executor.memory': '512m', 'spark.scheduler.maxRegisteredResourcesWaitingTime': '150s'}\n"
        "r = kafka_audit.scan(sys.argv[1], master=sys.argv[2], conf=conf, spark_secret_file=sys.argv[3])\n"
        "print(json.dumps([f for f in r.findings]))\n"
    )
    environment = {k: v for k, v in os.environ.items() if k != "_SPARK_AUTH_SECRET"}
    environment.update({"SPARK_LOCAL_IP": "127.0.0.1", "TMPDIR": str(tmp_path)})
    done = subprocess.run(
        [sys.executable, "-c", code, str(FIXTURES / "faulty"), secured_cluster.url, str(path)],
        env=environment, capture_output=True, text=True, timeout=SCAN_TIMEOUT_S, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == local_report()["findings"] != []
    assert SECRET not in done.stdout + done.stderr


def test_the_api_refuses_a_secret_file_it_cannot_apply(tmp_path):
    import kafka_audit

    with pytest.raises(ValueError, match="secured by its own settings"):
        kafka_audit.scan(FIXTURES / "faulty", remote="sc://127.0.0.1:1", spark_secret_file=tmp_path / "none")
