"""The driver JVM's class-data-sharing archive (CDS, JEP 310/350): Spark's driver loads and
verifies thousands of classes from 280 jars at every start; mapped from an archive of the classes
it loaded last time, a ready session takes 2.0 s instead of 4.7 s (``scan fixtures``, 2-core VM,
JDK 17, PySpark 4.3). One archive per Java runtime, PySpark install and driver class path, in the
user's cache directory; recorded by a first run, then mapped by every later one.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# A class archive being recorded, and the file holding its recording JVM's process id.
_PARTIAL = ".partial"
_JVM_MARKER = ".jvm"
# HotSpot's cds.h: CDS_ARCHIVE_MAGIC, CDS_DYNAMIC_ARCHIVE_MAGIC.
_CDS_MAGIC = (0xF00BABA2, 0xF00BABA8)


# A recording whose JVM still seems alive after this long is given up (its process id reused).
_STALE_S = 86400


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
    ``<partial>.jvm``; one whose JVM never started, or seems to run for more than a day (its
    process id taken by another process), is dropped or adopted as if it had ended."""
    recording = False
    found = archive.parent.glob(f"{glob.escape(archive.name)}.*{_PARTIAL}*")
    for partial in {path.with_name(path.name.removesuffix(_JVM_MARKER)) for path in found}:
        marker = partial.with_name(partial.name + _JVM_MARKER)
        try:
            jvm = int(marker.read_text())
        except (OSError, ValueError):
            jvm = None
        try:
            if jvm is not None and (not _alive(jvm) or time.time() - marker.stat().st_mtime > _STALE_S):
                if _complete_archive(partial) and not archive.exists():
                    os.replace(partial, archive)
                else:
                    partial.unlink(missing_ok=True)
                marker.unlink()
            elif jvm is not None or time.time() - partial.stat().st_mtime < _STALE_S:
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


def mark_recording_jvm(partial: Path) -> None:
    """Note the process id of the JVM that records ``partial`` (see :func:`_adopt_finished_recordings`)."""
    from pyspark import SparkContext

    process = getattr(SparkContext._gateway, "proc", None)
    if process is not None:
        with contextlib.suppress(OSError):
            partial.with_name(partial.name + _JVM_MARKER).write_text(str(process.pid))
