"""Starting and stopping the SparkSession the audit runs on: Spark's console noise kept off the
user's screen, its scratch files and log in a temporary directory, never in the audited dirs.

Start-up, measured on ``scan fixtures`` (a 2-core VM, JDK 17, PySpark 4.3): about 4.7 s from
the JVM's launch to a ready session, most of it loading and verifying Spark's classes from 280
jars, 1 s for the first job (the Python workers' start) and 1 s to stop. What is cut here:

- class-data sharing (:func:`class_data_sharing`): the driver JVM maps an archive of the classes
  it loaded last time instead of loading them again: ready session 4.7 s -> 2.0 s;
- the stop does not wait for PySpark's accumulator server to notice (:func:`_stop`): 0.9 -> 0.15 s;
- no UI, no Hive catalog, no console progress bar.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
import contextlib
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SPARK_LOG = "spark.log"
# The JVM's own log lines (class-data sharing warnings among them) go to its stderr, which is
# Spark's log: by default they would go to stdout, into the report.
_JVM_LOG = "-Xlog:disable -Xlog:all=warning:stderr"
# A class archive being recorded, and the file holding its recording JVM's process id.
_PARTIAL = ".partial"
_JVM_MARKER = ".jvm"
# HotSpot's cds.h: CDS_ARCHIVE_MAGIC, CDS_DYNAMIC_ARCHIVE_MAGIC.
_CDS_MAGIC = (0xF00BABA2, 0xF00BABA8)


@dataclass(frozen=True)
class ClassDataSharing:
    """The driver JVM's class-data-sharing options, and the archive this run records, if any.

    ``partial``: no archive exists yet; this run's JVM writes one there as it exits
    (``-XX:ArchiveClassesAtExit``, JDK 13+), after the command has ended, and a later run moves
    it into place once that JVM is gone (:func:`_adopt_finished_recordings`)."""

    java_options: str
    partial: Path | None = None


def class_data_sharing(conf: dict[str, str] | None = None, record: bool = True) -> ClassDataSharing:
    """The class-data-sharing options for the driver JVM that Spark will start.

    The archive lives in the user's cache directory (``$XDG_CACHE_HOME/kafka-audit`` or
    ``~/.cache/kafka-audit``), one per Java runtime, PySpark install and driver class path (an
    archive only serves the class path it was made with). On JDK 19+ the JVM creates and checks it
    itself (``-XX:+AutoCreateSharedArchive``). On JDK 13-18 the first run (when ``record``, and
    no other run is recording) has its JVM record the archive at exit, after the command's own
    end; later runs map it (``-XX:SharedArchiveFile``). A JVM that cannot use an archive (changed
    jars, another JVM) ignores it with a warning in Spark's log."""
    java = _java_runtime()
    folder = _cache_dir()
    if java is None or folder is None:
        return ClassDataSharing("")
    version, major = java
    import pyspark

    extra = (conf or {}).get("spark.driver.extraClassPath", "")
    digest = hashlib.sha1("\0".join((version, pyspark.__file__, extra)).encode()).hexdigest()[:12]
    archive = folder / f"spark-driver-{pyspark.__version__}-java-{version}-{digest}.jsa"
    if major >= 19:
        return ClassDataSharing(f"-XX:+AutoCreateSharedArchive -XX:SharedArchiveFile={archive}")
    recording = _adopt_finished_recordings(archive)
    if archive.is_file():
        return ClassDataSharing(f"-XX:SharedArchiveFile={archive}")
    if not record or recording or major < 13:
        return ClassDataSharing("")
    partial = archive.with_name(f"{archive.name}.{os.getpid()}{_PARTIAL}")
    return ClassDataSharing(f"-XX:ArchiveClassesAtExit={partial}", partial)


def _adopt_finished_recordings(archive: Path) -> bool:
    """Move an archive whose recording JVM has exited into place; True while one still records.

    A recording is ``<archive>.<pid>.partial`` with the recording JVM's process id beside it in
    ``<partial>.jvm``; one whose JVM never started is dropped after a day."""
    recording = False
    found = archive.parent.glob(f"{glob.escape(archive.name)}.*{_PARTIAL}*")
    for partial in {path.with_name(path.name.removesuffix(_JVM_MARKER)) for path in found}:
        marker = partial.with_name(partial.name + _JVM_MARKER)
        try:
            jvm = int(marker.read_text())
        except (OSError, ValueError):
            jvm = None
        try:
            if jvm is not None and not _alive(jvm):
                if _complete_archive(partial) and not archive.exists():
                    os.replace(partial, archive)
                else:
                    partial.unlink(missing_ok=True)
                marker.unlink()
            elif jvm is not None or time.time() - partial.stat().st_mtime < 86400:
                recording = True
            else:
                partial.unlink()
        except OSError:
            recording = True  # another run is adopting it
    return recording


def _complete_archive(path: Path) -> bool:
    """Whether ``path`` holds a whole CDS archive: HotSpot writes the header, which starts with
    the archive's magic number (CDS_ARCHIVE_MAGIC / CDS_DYNAMIC_ARCHIVE_MAGIC, native byte
    order), after every region, so a JVM killed while writing leaves no magic."""
    try:
        with open(path, "rb") as archive:
            head = archive.read(4)
    except OSError:
        return False
    return len(head) == 4 and int.from_bytes(head, sys.byteorder) in _CDS_MAGIC


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _java_runtime() -> tuple[str, int] | None:
    """The version (``release`` file's JAVA_RUNTIME_VERSION) and major version of the ``java``
    that spark-submit runs (``$JAVA_HOME/bin/java``, else the one on the PATH)."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        return None
    release = Path(os.path.realpath(java)).parent.parent / "release"
    try:
        text = release.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = re.search(r'^JAVA_RUNTIME_VERSION="?([^"\n]+)', text, re.M) or re.search(
        r'^JAVA_VERSION="?([^"\n]+)', text, re.M
    )
    major = re.match(r"(?:1\.)?(\d+)", found.group(1)) if found else None
    if major is None:
        return None
    return re.sub(r"[^\w.+-]", "_", found.group(1)), int(major.group(1))


def _cache_dir() -> Path | None:
    """``$XDG_CACHE_HOME/kafka-audit`` (default ``~/.cache/kafka-audit``), created if need be;
    None when it cannot be written."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "kafka-audit"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK) else None


def create_spark_session(
    master: str = "local[*]",
    conf: dict[str, str] | None = None,
    scratch: str | None = None,
    sharing: ClassDataSharing | None = None,
):
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
    from 5.4-6.4 s to 4.9-5.2 s. ``sharing`` (default: :func:`class_data_sharing` without
    recording) adds the class-data-sharing options.
    """
    from pyspark.sql import SparkSession

    scratch = scratch or tempfile.mkdtemp(prefix="kafka-audit-spark-")
    sharing = sharing if sharing is not None else class_data_sharing(conf, record=False)
    java_options = f"-Dderby.system.home={scratch} -XX:TieredStopAtLevel=1 {_JVM_LOG} {sharing.java_options}"
    builder = (
        SparkSession.builder.master(master)
        .appName("kafka-audit")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.local.dir", scratch)
        .config("spark.sql.warehouse.dir", os.path.join(scratch, "warehouse"))
        .config("spark.driver.extraJavaOptions", java_options.strip())
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.catalogImplementation", "in-memory")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with _output_to(os.path.join(scratch, SPARK_LOG)):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextmanager
def spark_session(master: str = "local[*]", conf: dict[str, str] | None = None) -> Iterator[Any]:
    """A session in a fresh scratch directory, stopped and cleaned up on exit. On an error the
    scratch directory (and its ``spark.log``) is kept and named in the exception's notes.

    The first session of a Java runtime and PySpark install records the class archive of
    :func:`class_data_sharing` (its JVM writes it after this process has exited); the later
    ones start from it."""
    scratch = tempfile.mkdtemp(prefix="kafka-audit-spark-")
    sharing = class_data_sharing(conf)
    try:
        spark = create_spark_session(master, conf, scratch, sharing)
    except BaseException as exc:
        exc.add_note(f"Spark's log: {os.path.join(scratch, SPARK_LOG)}")
        raise
    if sharing.partial is not None:
        _mark_recording_jvm(sharing.partial)
    failed = False
    try:
        yield spark
    except BaseException as exc:
        failed = True
        exc.add_note(f"Spark's log: {os.path.join(scratch, SPARK_LOG)}")
        raise
    finally:
        _stop(spark)
        if not failed:
            shutil.rmtree(scratch, ignore_errors=True)


def _stop(spark) -> None:
    """``spark.stop()`` without its wait for PySpark's accumulator server: the server's
    ``shutdown()`` waits for its polling loop to notice (0.78 s of a 0.92 s stop, measured), so
    it is shut down on a daemon thread of its own; the JVM side stops as usual."""
    context = spark.sparkContext
    server = getattr(context, "_accumulatorServer", None)
    if server is not None:
        context._accumulatorServer = None
        threading.Thread(target=server.shutdown, name="accumulator-server-shutdown", daemon=True).start()
    spark.stop()


def _mark_recording_jvm(partial: Path) -> None:
    """Note the process id of the JVM that records ``partial`` (see :func:`_adopt_finished_recordings`)."""
    from pyspark import SparkContext

    process = getattr(SparkContext._gateway, "proc", None)
    if process is not None:
        with contextlib.suppress(OSError):
            partial.with_name(partial.name + _JVM_MARKER).write_text(str(process.pid))


@contextmanager
def _output_to(path: str) -> Iterator[None]:
    """Point file descriptors 1 and 2 at ``path`` while the JVM starts: it keeps that stdout and
    stderr for life. Nothing the JVM prints reaches the report, and a JVM that outlives this
    process (writing its class archive) does not hold the user's pipe open."""
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
