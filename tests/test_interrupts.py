"""Signals at any moment of a Spark scan (SPEC section 1): SIGINT or SIGTERM, from the start of
``kafka-audit scan fixtures --engine spark`` to its end, the JVM's launch and the session's start
included, ends it with exit 130 and one line on stderr (or 0/1 when it had already finished), and
leaves no process (launcher, driver JVM, PySpark's worker daemon and workers), no scratch file and
no partial class archive.

Every process of a run is found by an environment marker it inherits, whatever session, group or
parent it has (:func:`tests.support.process_tree.marked`). The ten points are spread from 0.1 s
to the length of an uninterrupted run, counted from the moment the command handles SIGTERM
(``SigCgt`` in ``/proc/PID/status``): before that, the interpreter itself is starting and
importing the ``site`` packages, which no code of the command can guard."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafka_audit.engines.spark_session import RECORDING_NOTE
from tests.conftest import FIXTURES, REPO
from tests.support.process_tree import marked

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc to find the processes"),
]

MARK = "KAFKA_AUDIT_INTERRUPT_TEST"
POINTS = 10
FIRST_S = 0.1
COMMAND_TIMEOUT_S = 300
INTERRUPTED = "kafka-audit: interrupted"


@dataclass
class Run:
    returncode: int
    stderr: str
    seconds: float  # from the moment the command handles SIGTERM to its exit
    left: list[str]  # processes still alive with the run's marker
    partials: list[Path]  # class-archive recordings of this run left in the cache
    signals_at_stop: str = ""  # the command's blocked, ignored and caught signals as it was sent one


def _cache(env: dict[str, str]) -> Path:
    """The class-archive cache the run uses (``jvm_class_archive._cache_dir``'s rule)."""
    return Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kafka-audit"


def _signal_masks(pid: int) -> str:
    """``SigBlk``, ``SigIgn`` and ``SigCgt`` of process ``pid`` (empty once it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return ""
    return " ".join(line.replace("\t", "") for line in status.splitlines() if line.startswith(("SigBlk", "SigIgn", "SigCgt")))


def _handles_sigterm(pid: int) -> bool:
    """Whether process ``pid`` has a handler on SIGTERM (or is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) >> (signal.SIGTERM - 1) & 1)


def _scan(tmp: Path, stop: signal.Signals | None = None, at: float = 0.0, cache: Path | None = None,
          after_line: str | None = None) -> Run:
    """``kafka-audit scan fixtures --engine spark`` in a session of its own with ``TMPDIR`` at
    ``tmp``, sent ``stop`` ``at`` seconds after it handles SIGTERM (or once it printed
    ``after_line`` on stderr); whatever it leaves is found, then killed."""
    token = uuid.uuid4().hex
    env = {**os.environ, "TMPDIR": str(tmp), MARK: token, **({"XDG_CACHE_HOME": str(cache)} if cache else {})}
    command = [sys.executable, "-m", "kafka_audit", "scan", str(FIXTURES), "--engine", "spark"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               cwd=REPO, start_new_session=True)
    try:
        deadline = time.monotonic() + COMMAND_TIMEOUT_S
        while not _handles_sigterm(process.pid) and time.monotonic() < deadline:
            time.sleep(0.002)
        started = time.monotonic()
        seen = ""
        if after_line is not None and process.stderr is not None:
            while (line := process.stderr.readline()) and after_line not in line:
                seen += line
            seen += line
        elif stop is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=at)
        signals_at_stop = ""
        if stop is not None and process.poll() is None:
            signals_at_stop = _signal_masks(process.pid)
            process.send_signal(stop)
        _, err = process.communicate(timeout=COMMAND_TIMEOUT_S)
        seconds = time.monotonic() - started
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    left = marked(MARK, token)
    for line in left:  # the test's own cleanup, after the evidence is taken
        with contextlib.suppress(OSError):
            os.kill(int(line.split()[0]), signal.SIGKILL)
    partials = sorted(_cache(env).glob(f"*.jsa.{process.pid}.partial*"))
    return Run(process.returncode, seen + err, seconds, left, partials, signals_at_stop)


def _assert_nothing_left(run: Run, tmp: Path) -> None:
    assert run.left == []
    assert sorted(os.listdir(tmp)) == []
    assert run.partials == []


@pytest.fixture(scope="module")
def full_length(tmp_path_factory) -> float:
    """The length of an uninterrupted run, with the class archive in place (a first run on this
    machine records it, and is run again to be timed)."""
    for _ in range(2):
        tmp = tmp_path_factory.mktemp("uninterrupted")
        run = _scan(tmp)
        assert run.returncode == 1  # the fixtures hold findings
        _assert_nothing_left(run, tmp)
        if RECORDING_NOTE not in run.stderr:
            return run.seconds
    return run.seconds


@pytest.mark.parametrize("point", range(POINTS))
def test_a_signal_at_any_moment_ends_the_scan_with_exit_130_and_leaves_nothing(tmp_path, full_length, point):
    """SIGINT at the even points, SIGTERM at the odd ones."""
    stop = signal.SIGINT if point % 2 == 0 else signal.SIGTERM
    at = FIRST_S + (full_length - FIRST_S) * point / (POINTS - 1)
    run = _scan(tmp_path, stop, at)
    if run.returncode != 130:  # the run had already finished
        assert run.returncode == 1 and at > full_length / 2, run
    else:
        assert run.stderr.splitlines() == [INTERRUPTED]
    _assert_nothing_left(run, tmp_path)


def test_a_signal_while_the_class_archive_is_written_removes_the_recording(tmp_path):
    """The first run of a cache waits for its JVM to write the class archive, with a line on
    stderr; a signal then kills that JVM, and its partial archive goes with it."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    cache = tmp_path / "cache"
    run = _scan(scratch, signal.SIGTERM, cache=cache, after_line=RECORDING_NOTE)
    assert (run.returncode, run.stderr.splitlines()) == (130, [RECORDING_NOTE, INTERRUPTED])
    _assert_nothing_left(run, scratch)
    assert sorted(path.name for path in (cache / "kafka-audit").iterdir()) == []
