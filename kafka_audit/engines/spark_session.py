"""Starting and stopping the SparkSession the audit runs on: Spark's console noise kept off the
user's screen, its scratch files and log in a temporary directory, never in the audited dirs.

Start-up, measured on ``scan fixtures`` (a 2-core VM, JDK 17, PySpark 4.3): about 4.7 s from
the JVM's launch to a ready session, most of it loading and verifying Spark's classes from 280
jars, 1 s for the first job (the Python workers' start) and 1 s to stop. What is cut here:

- class-data sharing (:mod:`kafka_audit.engines.jvm_class_archive`): the driver JVM maps an archive of
  the classes it loaded last time instead of loading them again: ready session 4.7 s -> 2.0 s;
- the stop does not wait for PySpark's accumulator server to notice (:func:`_stop`): 0.9 -> 0.15 s;
- on a local master, PySpark's worker daemon imports PySpark's compiled modules rather than the
  zipped copy Spark puts first on its path, compiled from source at every start
  (:mod:`kafka_audit.engines.pyspark_daemon`): the first job's Python workers start in 0.6 s
  rather than 2.7 s, and 1.4 CPU s less (``bench/spark_fixed_cost.py``);
- on a local master, expressions are interpreted, not compiled (:data:`INTERPRETED_EXPRESSIONS`);
- no UI, no Hive catalog, no console progress bar.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from kafka_audit.engines.jvm_class_archive import ClassDataSharing, class_data_sharing, mark_recording_jvm
from kafka_audit.engines.preflight import set_workers_python, workers_daemon_settings
from kafka_audit.engines.spark_errors import (
    MASTER_ANSWER_S,
    MASTER_CONNECTED,
    MASTER_CONNECTED_LOGGER,
    MASTER_FAILURE,
    SparkFailure,
    check_master_reachable,
    describe,
    not_accepted,
)
from kafka_audit.engines.spark_processes import (
    Interrupts,
    end_launched_jvm,
    quiet_accumulator_server,
    session_leaders,
    start_apart,
)
from kafka_audit.engines.spark_security import AUTHENTICATION, SECRET_SETTING, is_local_master, loopback_settings

SPARK_LOG = "spark.log"
APP_NAME = "kafka-audit"
# How long the log of a driver that failed to register is left to settle before its JVM is stopped.
_SETTLE_S = 1.0
# The JVM's own log lines (class-data sharing warnings among them) go to its stderr, which is
# Spark's log: by default they would go to stdout, into the report.
_JVM_LOG = "-Xlog:disable -Xlog:all=warning:stderr"
# A local session's expressions are interpreted, not compiled to Java by Janino (whole-stage code
# generation off; SQLConf's CODEGEN_FACTORY_MODE for CodeGeneratorWithInterpretedFallback): its job
# moves a few rows per segment, so compiled code never repays its compilation, and Janino's signed
# jar keeps its 340 classes out of the class archive. Fixtures, paired runs: 0.3-0.8 CPU s less.
INTERPRETED_EXPRESSIONS = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
# Said on stderr while the first Spark run waits for its JVM to write the class archive.
RECORDING_NOTE = (
    "kafka-audit: writing the Spark driver's class archive (first Spark run only, up to a minute); "
    "later runs start faster"
)


def create_spark_session(
    master: str = "local[*]",
    conf: dict[str, str] | None = None,
    scratch: str | None = None,
    sharing: ClassDataSharing | None = None,
    secret: str | None = None,
):
    """A SparkSession for the audit, with Spark's console noise kept off the user's screen.

    The JVM's stderr (log4j warnings, stage progress bars, Python worker tracebacks) goes to
    ``spark.log`` in the ``scratch`` directory (a new private temporary one by default), never
    into the audited directories; so do ``spark.local.dir`` and the warehouse. With a local
    master every listener binds to 127.0.0.1; a ``secret`` turns on Spark's authentication and
    encryption (:mod:`kafka_audit.engines.spark_security`). ``conf`` is applied last, so
    ``--conf`` can override any of these. The JVM's own temporary files go to ``scratch`` too
    (``java.io.tmpdir``), and it keeps no ``/tmp/hsperfdata_*`` file (``-XX:-UsePerfData``), so
    that a JVM killed by a signal leaves no file behind.

    The driver JVM runs with ``-XX:TieredStopAtLevel=1`` (the C1 compiler only): in this job the
    JVM only schedules tasks and moves bytes between the Python workers, the shuffle files and
    the driver, which C1's code does as well, while C2 spent about 3 s of CPU compiling during
    each scan of 1 GiB, taken from the Python workers on a small machine (local mode: the driver
    JVM is the executor). Measured by ``bench/run.py``: a cold ``local[2]`` scan of 1 GiB went
    from 5.4-6.4 s to 4.9-5.2 s. ``sharing`` (default: :func:`class_data_sharing` without
    recording) adds the class-data-sharing options.
    """
    from pyspark.sql import SparkSession

    scratch = scratch or private_scratch()
    sharing = sharing if sharing is not None else class_data_sharing(conf, record=False)
    settings = _session_settings(master, conf, scratch, sharing, secret)
    builder = SparkSession.builder.master(master).appName(APP_NAME)
    for key, value in settings.items():
        builder = builder.config(key, value)
    unreachable = check_master_reachable(master)
    if unreachable:
        raise SparkFailure(unreachable)
    # Py4J logs every call that a dead or interrupted JVM cuts short with a traceback of its own;
    # the exception the call raises says the same once.
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    log = private_log(scratch)
    with _output_to(log), _give_up_on_master(master, log) as gave_up:
        try:
            spark = start_apart(lambda: _start(builder, master, settings, secret))
        except Exception:
            if gave_up.is_set():
                with open(log, encoding="utf-8", errors="replace") as text:
                    content = text.read()
                raise SparkFailure(not_accepted(content, master, secret is not None)) from None
            raise
    spark.sparkContext.setLogLevel("ERROR")
    set_workers_python(spark, started=True)
    return spark


def _session_settings(
    master: str, conf: dict[str, str] | None, scratch: str, sharing: ClassDataSharing, secret: str | None
) -> dict[str, str]:
    """The session's settings (see :func:`create_spark_session`), ``conf`` applied last."""
    java_options = (
        f"-Dderby.system.home={scratch} -Djava.io.tmpdir={scratch} -XX:-UsePerfData -XX:TieredStopAtLevel=1 "
        f"{_JVM_LOG} {sharing.java_options}"
    )
    return {
        "spark.ui.showConsoleProgress": "false",
        "spark.ui.enabled": "false",
        "spark.local.dir": scratch,
        "spark.sql.warehouse.dir": os.path.join(scratch, "warehouse"),
        "spark.driver.extraJavaOptions": java_options.strip(),
        "spark.python.worker.reuse": "true",
        "spark.sql.catalogImplementation": "in-memory",
        **loopback_settings(master),
        **workers_daemon_settings(master, conf),
        **(INTERPRETED_EXPRESSIONS if is_local_master(master) else {}),
        **(AUTHENTICATION if secret is not None else {}),
        **(conf or {}),
    }


def _start(builder, master: str, settings: dict[str, str], secret: str | None):
    """The session, on a driver JVM started with ``settings`` on its ``spark-submit`` command line
    (as PySpark does) in a process session of its own (:mod:`kafka_audit.engines.spark_processes`).
    The secret is set after the start, so that it reaches the JVM's configuration through the
    authenticated Py4J connection and never a command line that every user can read."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is None:
        launch = SparkConf(loadDefaults=False).setMaster(master).setAppName(APP_NAME).setAll(list(settings.items()))
        gateway = launch_gateway(launch, popen_kwargs={"start_new_session": True})
        SparkContext._ensure_initialized(gateway=gateway)
    if secret is not None:
        builder = builder.config(SECRET_SETTING, secret)
    return builder.getOrCreate()


def private_scratch() -> str:
    """A new scratch directory only this user can enter (0700, as :func:`tempfile.mkdtemp`
    makes it): Spark's shuffle and spill files in it hold log data."""
    scratch = tempfile.mkdtemp(prefix="kafka-audit-spark-")
    os.chmod(scratch, 0o700)
    return scratch


def private_log(scratch: str) -> str:
    """``spark.log`` in ``scratch``, created readable by this user only (0600): kept after a
    failure, it may quote the audited data."""
    path = os.path.join(scratch, SPARK_LOG)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    os.chmod(path, 0o600)
    return path


@contextmanager
def spark_session(master: str = "local[*]", conf: dict[str, str] | None = None, secret: str | None = None) -> Iterator[Any]:
    """A session in a fresh private scratch directory, ended on every way out: success, failure,
    Ctrl-C, SIGTERM (:class:`Interrupts`, from the JVM's launch on), exception. When the block
    has ended, the processes it started (the driver JVM, PySpark's worker daemon and workers)
    and the directory are gone (:func:`_end`).

    A failure to start or to run becomes a :class:`SparkFailure` naming the root cause and
    Spark's log, kept in a file of its own (0600) beside the removed directory. On Ctrl-C or
    SIGTERM the JVM is killed without Py4J's tracebacks and KeyboardInterrupt goes on, also for a
    signal that comes while the session ends.

    The first session of a Java runtime and PySpark install records the class archive of
    :func:`class_data_sharing`: its JVM writes it as it exits, which this block waits for, with
    a line on stderr (:data:`RECORDING_NOTE`); the later ones start from it."""
    from pyspark import SparkContext

    scratch = private_scratch()
    log = os.path.join(scratch, SPARK_LOG)
    interrupts = Interrupts()
    before = session_leaders() if SparkContext._gateway is None else None  # None: a JVM not ours
    spark = None
    sharing = ClassDataSharing("")
    with interrupts.installed(), _quiet_root_logger():
        try:
            sharing = class_data_sharing(conf)
            spark = _started(master, conf, scratch, sharing, secret, interrupts)
            if sharing.partial is not None:
                mark_recording_jvm(sharing.partial)
            try:
                yield spark
            except Exception as exc:
                if interrupts.event.is_set():  # an error the interrupted call left behind: still Ctrl-C
                    raise KeyboardInterrupt from None
                if isinstance(exc, SparkFailure):
                    raise SparkFailure(f"{exc}; Spark's log: {_keep(log)}") from None
                raise SparkFailure(describe(exc, _keep(log))) from None  # a job failure
        finally:
            interrupts.shielded = True
            if spark is not None and not interrupts.event.is_set():
                _stop(spark)
            if before is not None:
                end_launched_jvm(before, sharing, interrupts, RECORDING_NOTE)
            shutil.rmtree(scratch, ignore_errors=True)
    if interrupts.event.is_set():  # a signal while the session ended
        raise KeyboardInterrupt


def _started(master, conf, scratch: str, sharing: ClassDataSharing, secret: str | None, interrupts: Interrupts):
    """:func:`create_spark_session`, its failures a :class:`SparkFailure` that names Spark's log
    (kept), unless refused before a JVM was started, or cut short by a signal (KeyboardInterrupt)."""
    log = os.path.join(scratch, SPARK_LOG)
    try:
        return create_spark_session(master, conf, scratch, sharing, secret)
    except Exception as exc:
        if interrupts.event.is_set():
            raise KeyboardInterrupt from None
        if not isinstance(exc, SparkFailure):
            raise SparkFailure(describe(exc, _keep(log))) from None
        if not os.path.exists(log):  # refused before a JVM was started: no log to keep
            raise
        raise SparkFailure(f"{exc}; Spark's log: {_keep(log)}") from None


@contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """Py4J reports each call a signal or a dead JVM cut short with ``logging.exception`` on the
    root logger (40 lines of tracebacks after a Ctrl-C); the exception the call raises says the
    same once. A handler on the root logger keeps logging's last-resort printer quiet."""
    root = logging.getLogger()
    silence = logging.NullHandler()
    root.addHandler(silence)
    try:
        yield
    finally:
        root.removeHandler(silence)


def _keep(log: str) -> str:
    """Move a failed run's ``spark.log`` out of the scratch directory (removed next, with the
    shuffle and spill files that hold log data) to a file of its own, still 0600, and name it.
    A JVM still writing to the log keeps writing to that file."""
    descriptor, kept = tempfile.mkstemp(prefix="kafka-audit-spark-", suffix=".log")
    os.close(descriptor)
    try:
        os.replace(log, kept)
    except OSError:  # another file system: the log is copied, permission bits included
        shutil.copy2(log, kept)
    return kept


@contextmanager
def _give_up_on_master(master: str, log: str) -> Iterator[threading.Event]:
    """Stop the JVM being started when it has not registered with a standalone master within
    MASTER_ANSWER_S of coming up, or as soon as it logs that it could not connect: Spark itself
    tries three times 20 s and waits for over a minute. Registration is seen in ``spark.log``
    (``StandaloneSchedulerBackend``'s "Connected to Spark cluster", logged at INFO: its logger is
    set to INFO as soon as the JVM answers). The event tells that the JVM was stopped."""
    gave_up = threading.Event()
    if not master.startswith("spark://"):
        yield gave_up
        return
    from pyspark import SparkContext

    done = threading.Event()

    def registered_or_failed() -> tuple[bool, bool]:
        try:
            with open(log, encoding="utf-8", errors="replace") as text:
                content = text.read()
        except OSError:
            return False, False
        return MASTER_CONNECTED in content, MASTER_FAILURE in content

    def watch() -> None:
        while SparkContext._jvm is None:
            if done.wait(0.05):
                return
        try:
            jvm = SparkContext._jvm
            jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
                MASTER_CONNECTED_LOGGER, jvm.org.apache.logging.log4j.Level.INFO
            )
        except Exception:  # noqa: BLE001 - the JVM went away: getOrCreate reports it
            return
        deadline = time.monotonic() + MASTER_ANSWER_S
        while not done.wait(0.25):
            connected, failed = registered_or_failed()
            if connected:
                return
            if failed or time.monotonic() > deadline:
                if done.wait(_SETTLE_S):  # the lines logged right after a failure tell its cause
                    return
                process = getattr(SparkContext._gateway, "proc", None)
                if process is not None:
                    gave_up.set()
                    process.kill()
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield gave_up
    finally:
        done.set()
        watcher.join()
        if gave_up.is_set():
            SparkContext._gateway = None
            SparkContext._jvm = None


def _stop(spark) -> None:
    """``spark.stop()`` without its wait for PySpark's accumulator server: the server's
    ``shutdown()`` waits for its polling loop to notice (0.78 s of a 0.92 s stop, measured), so
    it is shut down on a daemon thread of its own; the JVM side stops as usual."""
    quiet_accumulator_server(spark.sparkContext)
    with suppress(Exception):  # after Ctrl-C the JVM may be gone: nothing left to stop
        spark.stop()


@contextmanager
def _output_to(path: str) -> Iterator[None]:
    """Point file descriptors 1 and 2 at ``path`` while the JVM starts: it keeps that stdout and
    stderr for life. Nothing the JVM prints reaches the report or the user's terminal."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    with open(path, "ab") as log:
        for fd in saved:
            os.dup2(log.fileno(), fd)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)


SPARK_CONNECT_PORT = 15002


def create_connect_session(url: str, conf: dict[str, str] | None = None):
    """A new Spark Connect session on ``url`` (``sc://HOST:PORT``, with optional ``/;key=value``
    parameters such as a token). The server is tried first with a plain TCP connection (5 s), so
    an unreachable address is one clear error rather than the client's minutes of retries."""
    import socket
    from urllib.parse import urlparse

    from pyspark.sql import SparkSession

    parsed = urlparse(url)
    if parsed.scheme != "sc" or not parsed.hostname:
        raise ValueError(f"--remote {url!r} is not a Spark Connect URL (sc://HOST:PORT)")
    port = parsed.port or SPARK_CONNECT_PORT
    try:
        socket.create_connection((parsed.hostname, port), timeout=5).close()
    except OSError as exc:
        raise ConnectionError(
            f"cannot reach the Spark Connect server at {parsed.hostname}:{port} ({exc.strerror or exc})"
        ) from None
    builder = SparkSession.builder.remote(url)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return builder.create()


@contextmanager
def connect_session(url: str, conf: dict[str, str] | None = None) -> Iterator[Any]:
    """A Spark Connect session of our own, closed on exit (the server keeps running)."""
    spark = create_connect_session(url, conf)
    try:
        yield spark
    finally:
        spark.stop()
