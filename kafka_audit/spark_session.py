"""Starting and stopping the SparkSession the audit runs on: Spark's console noise kept off the
user's screen, its scratch files and log in a temporary directory, never in the audited dirs."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

SPARK_LOG = "spark.log"


def create_spark_session(master: str = "local[*]", conf: dict[str, str] | None = None, scratch: str | None = None):
    """A SparkSession for the audit, with Spark's console noise kept off the user's screen.

    The JVM's stderr (log4j warnings, stage progress bars, Python worker tracebacks) goes to
    ``spark.log`` in the ``scratch`` directory (a new temporary one by default), never into the
    audited directories; so do ``spark.local.dir`` and the warehouse. ``conf`` is applied last,
    so ``--conf`` can override any of these.

    The driver JVM runs with ``-XX:TieredStopAtLevel=1`` (the C1 compiler only): in this job the
    JVM only schedules tasks and moves bytes between the Python workers, the shuffle files and
    the driver, which C1's code does as well, while C2 spent about 3 s of CPU compiling during
    each scan of 1 GiB, taken from the Python workers on a small machine (local mode: the driver
    JVM is the executor). Measured by ``bench/run.py``: a cold ``local[2]`` scan of 1 GiB went
    from 5.4-6.4 s to 4.9-5.2 s.
    """
    from pyspark.sql import SparkSession

    scratch = scratch or tempfile.mkdtemp(prefix="kafka-audit-spark-")
    builder = (
        SparkSession.builder.master(master)
        .appName("kafka-audit")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.local.dir", scratch)
        .config("spark.sql.warehouse.dir", os.path.join(scratch, "warehouse"))
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={scratch} -XX:TieredStopAtLevel=1")
        .config("spark.python.worker.reuse", "true")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with _stderr_to(os.path.join(scratch, SPARK_LOG)):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextmanager
def spark_session(master: str = "local[*]", conf: dict[str, str] | None = None) -> Iterator[Any]:
    """A session in a fresh scratch directory, stopped and cleaned up on exit. On an error the
    scratch directory (and its ``spark.log``) is kept and named in the exception's notes."""
    scratch = tempfile.mkdtemp(prefix="kafka-audit-spark-")
    try:
        spark = create_spark_session(master, conf, scratch)
    except BaseException as exc:
        exc.add_note(f"Spark's log: {os.path.join(scratch, SPARK_LOG)}")
        raise
    failed = False
    try:
        yield spark
    except BaseException as exc:
        failed = True
        exc.add_note(f"Spark's log: {os.path.join(scratch, SPARK_LOG)}")
        raise
    finally:
        spark.stop()
        if not failed:
            shutil.rmtree(scratch, ignore_errors=True)


@contextmanager
def _stderr_to(path: str) -> Iterator[None]:
    """Point file descriptor 2 at ``path`` while the JVM starts: it keeps that stderr for life."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


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
