"""``kafka_audit.scan`` on PySpark from a virtual environment's Python that is not activated (its
``bin`` not on the PATH, no ``PYSPARK_PYTHON``): on a local session the call starts, and on one it
is given, the executors' Python workers run this interpreter, and no Spark WARN line reaches the
call's output (SPEC section 5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import FIXTURES, REPO

pytestmark = pytest.mark.spark

TIMEOUT_S = 600
DATA = FIXTURES / "producer-errors"
CALLS = ("started", "given")
# The script prints these lines on stderr before each call, and before it starts a session of its
# own (whose start-up lines are the user's, not the call's).
CALL_MARK = "--- kafka_audit.scan on a {} session"
OWN_SESSION = "--- the script's own session"

SCRIPT = f"""
import json, sys
from kafka_audit import scan
from pyspark.sql import SparkSession

data, broker_log = sys.argv[1], sys.argv[2]
checks = {{}}
print({CALL_MARK.format("started")!r}, file=sys.stderr, flush=True)
result = scan(data, master="local[1]", broker_logs=[broker_log])
checks["started"] = sorted(f["check"] for f in result.findings)
print({OWN_SESSION!r}, file=sys.stderr, flush=True)
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
print({CALL_MARK.format("given")!r}, file=sys.stderr, flush=True)
result = scan(data, spark, broker_logs=[broker_log])
checks["given"] = sorted(f["check"] for f in result.findings)
print(json.dumps(checks))
"""


def _not_activated() -> dict[str, str]:
    """This environment as a shell without the virtual environment has it: no ``VIRTUAL_ENV``,
    its ``bin`` off the PATH, no Python chosen for PySpark."""
    venv_bin = os.path.dirname(sys.executable)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and os.path.abspath(p) != venv_bin)
    return env


def test_the_api_runs_on_local_spark_from_a_venv_python_that_is_not_activated(tmp_path):
    expected = json.loads((DATA / "EXPECTED.json").read_text())
    broker_log = FIXTURES / "broker-logs" / "producer-errors.server.log"
    env = {**_not_activated(), "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(DATA), str(broker_log)], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    want = sorted(f["check"] for f in expected["findings"])
    assert json.loads(done.stdout.splitlines()[-1]) == dict.fromkeys(CALLS, want)
    started = done.stderr.split(CALL_MARK.format("started"), 1)[1].split(OWN_SESSION, 1)[0]
    given = done.stderr.split(CALL_MARK.format("given"), 1)[1]
    for output in (started, given):
        assert [line for line in output.splitlines() if " WARN " in line or "pandas" in line] == []
