"""``scan --engine local|spark`` (SPEC section 1): the same findings on both engines through the CLI,
no pyspark on the local path, the progress display's phases and the whole command's wall time."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time

import pytest
from rich.console import Console
from typer.testing import CliRunner

from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.cli.app import app
from kafka_audit.engines import spark_session as spark_session_module
from kafka_audit.engines.run import Engine, run_audit
from kafka_audit.log.log_dir import discover
from kafka_audit.report.progress import AUDITING, REPLAYING, STARTING_SPARK, PhaseDisplay
from tests.conftest import FIXTURES, REPO
from tests.support.audit_run import corpus_dir

# The summary fields that differ between two runs of the same audit.
_RUN_FIELDS = ("wall_time_s", "mb_per_s", "engine")


@pytest.fixture
def shared_session(spark, monkeypatch):
    """``scan`` gets the shared session instead of starting one."""

    @contextlib.contextmanager
    def session(master, conf, secret=None):
        yield spark

    monkeypatch.setattr(spark_session_module, "spark_session", session)


def _scan_json(*args: str) -> dict:
    done = CliRunner().invoke(app, ["scan", *args, "--format", "json", "--fail-on", "never"])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def _without_run_fields(report: dict) -> dict:
    return {**report, "summary": {k: v for k, v in report["summary"].items() if k not in _RUN_FIELDS}}


@pytest.mark.spark
@pytest.mark.parametrize("fixture", ["faulty", "healthy", "producer-errors"])
def test_local_and_spark_engines_give_the_same_report(shared_session, fixture):
    path = str(FIXTURES / fixture)
    local = _scan_json(path, "--engine", "local")
    spark = _scan_json(path)  # the default engine is spark
    assert (local["summary"]["engine"], spark["summary"]["engine"]) == ("local", "spark")
    if fixture != "healthy":
        assert local["findings"]
    assert _without_run_fields(local) == _without_run_fields(spark)


def test_a_local_scan_imports_nothing_of_pyspark(tmp_path):
    probe = (
        "import json, sys\n"
        "from kafka_audit.cli.app import main\n"
        "try:\n"
        f"    main(['scan', {str(FIXTURES / 'producer-errors')!r}, '--engine', 'local', '--format', 'json',"
        f" '--output', {str(tmp_path / 'report.json')!r}])\n"
        "except SystemExit as stop:\n"
        "    print(json.dumps({'code': stop.code, 'modules': sorted(m for m in sys.modules"
        " if m.split('.')[0] in ('pyspark', 'py4j'))}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome == {"code": 1, "modules": []}
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["summary"]["engine"] == "local"
    assert [f["check"] for f in report["findings"]] == [
        "epoch_bump", "new_epoch_nonzero_sequence", "out_of_order_sequence"
    ]


def test_the_table_panel_names_the_engine():
    done = CliRunner().invoke(app, ["scan", str(FIXTURES / "healthy"), "--engine", "local"])
    assert done.exit_code == 0, done.output
    assert "engine" in done.stdout and "local" in done.stdout


def test_the_local_engine_shows_its_phases():
    screen = io.StringIO()
    found = discover([str(FIXTURES / "producer-errors")])
    with PhaseDisplay(Console(file=screen, force_terminal=True, width=150)) as display:
        result = run_audit(found, ScanOptions(), Engine.local, display=display)
    shown = screen.getvalue()
    partitions = len(found.partitions)
    assert AUDITING in shown and f"{found.segment_count}/{found.segment_count} segment tasks" in shown
    assert REPLAYING in shown and f"{partitions}/{partitions} partitions" in shown
    assert STARTING_SPARK not in shown
    assert result.summary["engine"] == "local"


@pytest.mark.spark
def test_the_spark_engine_shows_starting_spark_from_the_first_moment(spark, monkeypatch):
    screen = io.StringIO()
    seen_while_starting: list[str] = []

    @contextlib.contextmanager
    def slow_session(master, conf, secret=None):
        time.sleep(0.3)  # the display refreshes while the session starts
        seen_while_starting.append(screen.getvalue())
        yield spark

    monkeypatch.setattr(spark_session_module, "spark_session", slow_session)
    found = discover([str(FIXTURES / "healthy")])
    with PhaseDisplay(Console(file=screen, force_terminal=True, width=150)) as display:
        result = run_audit(found, ScanOptions(), Engine.spark, "local[2]", display=display)
    assert STARTING_SPARK in seen_while_starting[0] and AUDITING not in seen_while_starting[0]
    shown = screen.getvalue()
    assert f"{found.segment_count}/{found.segment_count} segment tasks" in shown
    assert REPLAYING in shown and f"{len(found.partitions)}/{len(found.partitions)} partitions" in shown
    assert result.summary["engine"] == "spark"


def test_the_wall_time_covers_the_whole_command(monkeypatch):
    """Time spent before the audit (here: a slow discovery, as Spark's start is) is in the summary."""
    real_discover = discover

    def slow_discover(*args, **kwargs):
        time.sleep(0.5)
        return real_discover(*args, **kwargs)

    monkeypatch.setattr("kafka_audit.log.log_dir.discover", slow_discover)
    report = _scan_json(str(FIXTURES / "healthy"), "--engine", "local")
    assert report["summary"]["wall_time_s"] >= 0.5


def test_engine_is_checked_like_any_option():
    done = CliRunner().invoke(app, ["scan", str(FIXTURES / "healthy"), "--engine", "flink"])
    assert done.exit_code == 2


def test_the_display_leaves_stdout_and_stderr_alone():
    """PySpark's warnings while the session starts go to Spark's log, not through the display."""
    before = (sys.stdout, sys.stderr)
    with PhaseDisplay(Console(file=io.StringIO(), force_terminal=True)):
        assert (sys.stdout, sys.stderr) == before


@pytest.mark.spark
def test_engines_agree_on_a_kafka_4_log_dir(shared_session):
    """The log dir's feature levels and its internal records' count reach the summary through
    the Spark job as through the local engine (the segment step's stats, the driver's levels)."""
    path = str(corpus_dir("real-broker-4") / "consumer-group-848" / "data")
    local, spark = _scan_json(path, "--engine", "local"), _scan_json(path)
    assert (spark["summary"]["metadata_version"], spark["summary"]["transaction_version"]) == (29, 2)
    assert spark["summary"]["internal_records_unknown"] == 0
    assert _without_run_fields(local) == _without_run_fields(spark)
