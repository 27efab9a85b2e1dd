"""The processes a Spark session of ours starts, and how they end with the command (SPEC section 1:
an interrupt at any moment, start-up included, leaves no process behind, and no process outlives
the command).

PySpark's ``launch_gateway`` runs ``spark-submit``, a shell script that runs Spark's launcher (a
short-lived JVM) and then becomes the driver JVM; the driver starts PySpark's worker daemon, which
forks the Python workers into a process group of its own. Here ``spark-submit`` is started in a
session of its own (``start_new_session``), so that every one of those processes carries the
driver's process id as its session id, whatever group it moved to: ending the session
(:func:`kill_session`) ends them all, even when a signal cut ``launch_gateway`` short before it
returned the process.

:class:`Interrupts` is the one piece of process-wide state these sessions use: the SIGINT and
SIGTERM handlers, installed while a session lives and restored after.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from kafka_audit.engines.jvm_class_archive import ClassDataSharing, finish_recording

# How long the processes of a killed session are given to disappear (SIGKILL: milliseconds).
_KILL_WAIT_S = 10.0
# How long a start cut short by a signal is given to fail once its JVM is killed.
_START_WAIT_S = 15.0
# A JVM that ends after the session's stop: a few tenths of a second, measured; then it is killed.
_JVM_EXIT_S = 3.0
# A JVM writing the class archive as it exits: 15-50 s measured (2-core VM, JDK 17).
_RECORDING_S = 300.0


class Interrupts:
    """SIGINT and SIGTERM while a Spark session of ours lives. The first signal sets ``event`` and
    raises KeyboardInterrupt in the main thread, unless ``shielded`` (the session is being torn
    down: the teardown reads ``event`` and cuts its waits short); later ones are only noted, so
    that no second KeyboardInterrupt cuts the teardown itself short."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.shielded = False

    def _handle(self, signum: int, frame: object) -> None:
        first = not self.event.is_set()
        self.event.set()
        if first and not self.shielded:
            raise KeyboardInterrupt

    @contextmanager
    def installed(self) -> Iterator[Interrupts]:
        """The handlers, on SIGINT and SIGTERM, while the block runs (main thread only: elsewhere
        signals are the main thread's business)."""
        main = threading.current_thread() is threading.main_thread()
        previous = {sig: signal.signal(sig, self._handle) for sig in (signal.SIGINT, signal.SIGTERM)} if main else {}
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _stat(pid: str) -> tuple[str, int, int] | None:
    """State, parent and session of process ``pid`` (``/proc/PID/stat``; the name, in
    parentheses, may hold anything, so the fields are read after its last ``)``)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0].decode("ascii", "replace"), int(fields[1]), int(fields[3])


def _processes() -> Iterator[tuple[int, str, int, int]]:
    """Every process: id, state, parent, session."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    for name in names:
        if name.isdigit():
            found = _stat(name)
            if found is not None:
                yield int(name), *found


def session_leaders() -> set[int]:
    """The children of this process that lead a session of their own: the ``spark-submit``
    processes started with ``start_new_session``."""
    me = os.getpid()
    return {pid for pid, _, parent, session in _processes() if parent == me and session == pid}


def session_members(leader: int) -> list[int]:
    """The live processes (zombies aside) of ``leader``'s session."""
    return [pid for pid, state, _, session in _processes() if session == leader and state != "Z"]


def kill_session(leader: int) -> None:
    """SIGKILL every process of ``leader``'s session until none is left (a process forked in the
    meantime is killed on the next round), within :data:`_KILL_WAIT_S`. The leader, our child,
    is reaped by its ``Popen`` (``launch_gateway`` polls it; :func:`end_jvm` waits for it)."""
    deadline = time.monotonic() + _KILL_WAIT_S
    while time.monotonic() < deadline:
        members = session_members(leader)
        if not members:
            return
        for pid in members:
            with suppress(OSError):  # gone already, or no longer ours (a reused id)
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


def end_jvm(process, wait_s: float, interrupts: Interrupts, note: str | None = None) -> bool:
    """Let the driver JVM ``process`` (a ``Popen``, its stdin PySpark's pipe) exit on its own:
    its stdin is closed, which ``PythonGatewayServer`` reads as the end of the Python driver, and
    it is given ``wait_s`` (with ``note`` on stderr first), or until a signal. True when it
    exited with status 0 in time; the caller kills the rest of its session either way."""
    if note is not None:
        import sys

        print(note, file=sys.stderr, flush=True)
    try:
        if process.stdin is not None:
            process.stdin.close()
    except OSError:
        pass
    deadline = time.monotonic() + wait_s
    while process.poll() is None and time.monotonic() < deadline:
        if interrupts.event.wait(0.05):
            return False
    return process.poll() == 0


def start_apart(start: Callable[[], Any]) -> Any:
    """``start()`` on a thread of its own while this one waits, so that a signal cuts the wait
    at once, and PySpark, seeing another thread, installs no SIGINT handler of its own (which
    calls into the JVM from the interrupted call's connection). On an interrupt every JVM session
    the start launched is killed, until the thread has ended: whatever it was doing fails then."""
    before = session_leaders()
    outcome: dict[str, Any] = {}
    # Not Thread.join: a KeyboardInterrupt inside join can leave is_alive() False while the
    # thread still runs (CPython gh-90882); an Event's wait has no such state.
    ended = threading.Event()

    def run() -> None:
        try:
            outcome["session"] = start()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            outcome["error"] = exc
        finally:
            ended.set()

    threading.Thread(target=run, name="spark-start", daemon=True).start()
    try:
        while not ended.wait(0.05):
            pass
    except BaseException:
        deadline = time.monotonic() + _START_WAIT_S
        while time.monotonic() < deadline:
            for leader in session_leaders() - before:
                kill_session(leader)
            if ended.wait(0.1):
                break
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["session"]


def end_launched_jvm(before: set[int], sharing: ClassDataSharing, interrupts: Interrupts, note: str) -> None:
    """End the driver JVM a session launched (none of ``before``, the sessions this process led
    before) and all its session: left to exit on its own first unless interrupted (with ``note``
    when it records the class archive of ``sharing``, which it writes as it exits), then killed.
    A recording that did not end well is removed; a whole one moved into place. PySpark is left
    ready to launch a new JVM."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    launched = session_leaders() - before
    if process is not None:  # already reaped, its session still holds the worker daemon
        launched.add(process.pid)
    quiet_accumulator_server(SparkContext._active_spark_context)
    recorded = False
    if process is not None and not interrupts.event.is_set():
        wait_s, said = (_RECORDING_S, note) if sharing.records else (_JVM_EXIT_S, None)
        recorded = end_jvm(process, wait_s, interrupts, said) and sharing.records
    for leader in launched:
        kill_session(leader)
    if process is not None:
        process.wait()
    finish_recording(sharing, recorded)
    if gateway is not None:
        _forget(gateway)


def quiet_accumulator_server(context) -> None:
    """PySpark's accumulator server (a ``socketserver``) of a context whose JVM is about to go:
    its handler fails on the connection the killed JVM drops, and ``socketserver`` prints each
    failure as a traceback on stderr; those are silenced, and the server shut down on a thread of
    its own (its ``shutdown`` waits for its polling loop)."""
    server = getattr(context, "_accumulatorServer", None)
    if server is None:
        return
    context._accumulatorServer = None
    server.handle_error = lambda request, client_address: None
    threading.Thread(target=server.shutdown, name="accumulator-server-shutdown", daemon=True).start()


def _forget(gateway) -> None:
    """PySpark's record of a JVM that is gone, dropped (its connections closed), so that a later
    session in this process launches a new one."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    with suppress(Exception):  # connections to a dead JVM
        gateway.close()
    with SparkContext._lock:
        SparkContext._gateway = None
        SparkContext._jvm = None
        SparkContext._active_spark_context = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
