"""Secrets never leak (issue 27): a canary given through every secret-bearing option
(tests/support/secret_options.py) appears in no output of any command and format the CLI has (read
from the app: every command that takes PATHs, every value of its ``--format`` enum), in no file a
run leaves (the report, ``--output-parquet`` data and metadata, a ``$GITHUB_STEP_SUMMARY``, the
kept ``spark.log`` of a failed run), and in no progress line, failing runs included.

One property over the canary. Its examples run the local engine in this process (every command and
format each); the explicit examples run ``kafka-audit`` processes with a terminal for the progress
display: a Spark scan that succeeds, one turned away by a secured master (a wrong secret), and a
store that cannot be reached.
"""

from __future__ import annotations

import errno
import inspect
import io
import os
import pty
import string
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from rich.console import Console
from typer.testing import CliRunner

from kafka_audit.cli.app import app
from kafka_audit.report.progress import STARTING_SPARK
from tests.conftest import FIXTURES
from tests.support.secret_options import secret_arguments
from tests.support.spark_cluster import SLOW_START_S, StandaloneCluster, authenticated, free_port

DATA = FIXTURES / "faulty"
RUN_TIMEOUT_S = 240
# Letters and digits: no format escapes them, so a leak cannot hide behind an escape.
CANARIES = st.text(string.ascii_letters + string.digits, min_size=8, max_size=24).map(lambda text: f"CANARY{text}")


@dataclass(frozen=True)
class AuditCommand:
    name: str
    formats: tuple[str, ...]  # empty: the command has no --format
    options: frozenset[str]


def audit_commands() -> list[AuditCommand]:
    """The app's commands that audit PATHs, each with the values its ``--format`` takes."""
    import typer.main

    from kafka_audit.api.options import command_options

    group = typer.main.get_command(app)
    found = []
    for info in app.registered_commands:
        parameters = inspect.signature(info.callback, eval_str=True).parameters  # report's is scan's, less --format
        if "paths" not in parameters:
            continue
        name = info.name or info.callback.__name__
        taken = [option.choices() for option in command_options(name) if option.name == "format" and option.choices]
        formats = tuple(taken[0]) if taken else ()
        options = frozenset(opt for param in group.commands[name].params for opt in getattr(param, "opts", ()))
        found.append(AuditCommand(name, formats, options))
    return found


COMMANDS = audit_commands()


@dataclass(frozen=True)
class Run:
    """How the canary is given: ``inprocess`` (every command and format on the local engine),
    ``spark`` (a ``local[1]`` scan), ``wrong-secret`` (a master with another secret),
    ``bad-endpoint`` (an S3 endpoint where nothing listens)."""

    kind: str = "inprocess"


class SecuredMaster:
    """A standalone master with authentication on, started on first use, stopped by PID."""

    def __init__(self, root: Path) -> None:
        self.root, self.cluster = root, None

    def url(self) -> str:
        if self.cluster is None:
            self.cluster = StandaloneCluster(
                self.root, workers=0, properties=authenticated("the-cluster-s-own-secret"), start_timeout_s=SLOW_START_S
            )
            self.cluster.start()
        return self.cluster.url

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()


@pytest.fixture(scope="module")
def secured_master(tmp_path_factory):
    master = SecuredMaster(tmp_path_factory.mktemp("secured-master"))
    try:
        yield master
    finally:
        master.stop()


def leaks(texts: list[str], outputs: dict[str, bytes], folder: Path) -> list[str]:
    """Where any of ``texts`` is seen: the named outputs, and every file under ``folder``."""
    found = [name for name, content in outputs.items() if any(t.encode() in content for t in texts)]
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if any(t.encode() in path.read_bytes() for t in texts):
            found.append(str(path.relative_to(folder)))
    return found


def run_in_process(canary: str, root: Path) -> None:
    """Every command and format on the local engine, progress display on."""
    runner = CliRunner()
    for command in COMMANDS:
        for fmt in command.formats or (None,):
            out = root / f"{command.name}-{fmt}"
            (out / "tmp").mkdir(parents=True)
            given, texts = secret_arguments(canary, root, set(command.options))
            args = [command.name, str(DATA), "--engine", "local", *given]
            args += ["--format", fmt] if fmt else []
            args += ["--output-parquet", str(out / "parquet")] if "--output-parquet" in command.options else []
            args += ["--output", str(out / "report")] if "--output" in command.options and not fmt else []
            screen = Console(file=io.StringIO(), force_terminal=True, width=150)
            with mock.patch("kafka_audit.api.runner._progress_console", return_value=screen):
                done = runner.invoke(app, args, env={"GITHUB_STEP_SUMMARY": str(out / "step-summary"), "TMPDIR": str(out / "tmp")})
            if done.exit_code == 2 and command.name != "scan":  # a format only scan writes: refused in one line
                assert len(done.stderr.splitlines()) == 1, (args, done.stderr)
            else:
                assert done.exit_code in (0, 1), (args, done.output, done.exception)
                assert screen.file.getvalue()  # the progress display ran
            outputs = {"stdout": done.stdout.encode(), "stderr": done.stderr.encode(), "progress": screen.file.getvalue().encode()}
            assert leaks(texts, outputs, out) == [], (command.name, fmt)


def run_process(args: list[str], out: Path) -> tuple[int, bytes, bytes]:
    """``kafka-audit ARGS`` with stderr on a terminal (the progress display draws there)."""
    (out / "tmp").mkdir(parents=True)
    env = {**os.environ, "TMPDIR": str(out / "tmp"), "GITHUB_STEP_SUMMARY": str(out / "step-summary")}
    env.pop("_SPARK_AUTH_SECRET", None)
    leader, follower = pty.openpty()
    terminal = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError as exc:  # EIO: the process closed its end
                if exc.errno == errno.EIO:
                    return
                raise
            if not chunk:
                return
            terminal.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        done = subprocess.run([sys.executable, "-m", "kafka_audit", *args], cwd=out, env=env, stdout=subprocess.PIPE,
                              stderr=follower, stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT_S, check=False)
    finally:
        os.close(follower)
        reader.join(timeout=30)
        os.close(leader)
    return done.returncode, done.stdout, bytes(terminal)


def run_spark(canary: str, root: Path, run: Run, master: SecuredMaster) -> None:
    out = root / run.kind
    scan = next(command for command in COMMANDS if command.name == "scan")
    given, texts = secret_arguments(canary, root, set(scan.options))
    args = ["scan", str(DATA), "--format", "json", "--output-parquet", str(out / "parquet"), *given]
    if run.kind == "wrong-secret":
        args[1:2] = [str(DATA)]
        args += ["--master", master.url(), "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1"]
    elif run.kind == "bad-endpoint":
        args[1:2] = ["s3://audit/fixtures/faulty"]
        args += ["--storage-option", f"endpoint_url=http://127.0.0.1:{free_port()}"]
    else:
        args += ["--master", "local[1]"]
    code, stdout, terminal = run_process(args, out)
    assert code == (1 if run.kind == "spark" else 2), terminal.decode(errors="replace")
    if run.kind == "spark":
        assert any((out / "parquet").rglob("*.parquet")) and STARTING_SPARK.encode() in terminal
    if run.kind == "wrong-secret":
        assert any((out / "tmp").glob("kafka-audit-spark-*.log"))  # the kept log is searched too
    assert leaks(texts, {"stdout": stdout, "terminal": terminal}, out) == []


@pytest.mark.spark
@pytest.mark.cluster
@settings(
    max_examples=3,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: each example runs whole scans
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(canary=CANARIES, run=st.just(Run()))
@example(canary="CANARYspark0run", run=Run("spark"))
@example(canary="CANARYwrong0secret", run=Run("wrong-secret"))
@example(canary="CANARYbad0endpoint", run=Run("bad-endpoint"))
def test_no_secret_reaches_any_output(tmp_path_factory, secured_master, canary, run):
    root = tmp_path_factory.mktemp("leaks")
    if run.kind == "inprocess":
        run_in_process(canary, root)
    else:
        run_spark(canary, root, run, secured_master)


def test_every_command_that_audits_paths_is_covered():
    """The list the property runs over comes from the app: a new command or format joins it."""
    names = {command.name for command in COMMANDS}
    assert {"scan", "producers", "timeline", "report"} <= names and "dump" not in names
    assert all(command.formats for command in COMMANDS if command.name != "report")
    assert all({"--storage-option", "--spark-secret-file"} <= command.options for command in COMMANDS)
