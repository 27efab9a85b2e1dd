"""The driver JVM's class-data-sharing archive (CDS, JEP 310/350): Spark's driver loads and
verifies thousands of classes from 280 jars at every start; mapped from an archive of the classes
it loaded last time, a ready session takes 2.0 s instead of 4.7 s (``scan fixtures``, 2-core VM,
JDK 17, PySpark 4.3). One archive per Java runtime, PySpark install (its path and jars) and driver class path, in the
user's cache directory; recorded by a first run (its JVM writes it as it exits, which that run waits for:
:mod:`kafka_audit.engines.spark_processes`), then mapped by every later one.

An archive is 120-160 MB, so the cache is pruned at every start (:func:`prune`): it keeps the
archive this run maps, drops those whose PySpark install is gone, keeps the
:data:`KEEP_ARCHIVES` most recently used ones, and removes recordings left by dead JVMs.
"""

from __future__ import annotations

import contextlib
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
_CDS_MAGIC_SIZE = 4
# The JDKs that record an archive at exit (JDK-8215311, JDK 13) and that create it themselves
# (-XX:+AutoCreateSharedArchive, JDK-8261455, JDK 19).
_JDK_ARCHIVE_AT_EXIT = 13
_JDK_AUTO_ARCHIVE = 19


# A recording whose JVM still seems alive after this long is given up (its process id reused).
_STALE_S = 86400
# A recording without its JVM's process id, untouched this long, has no JVM writing it.
_UNMARKED_STALE_S = 600
# Archives kept in the cache, the one a run maps included, most recently used first: one per
# PySpark install in use. Four covers a developer's few environments (this project's worktrees
# and main, a PySpark upgrade) at about 600 MB; an archive evicted costs one run without it
# (about 2.7 s) and is recorded again. Those of installs that no longer exist go first.
KEEP_ARCHIVES = 4
# Beside each archive: the PySpark install it was made for (its ``__file__``); its mtime is the
# archive's last use.
_INSTALL = ".install"
_RECORDING = re.compile(r"^(?P<archive>spark-driver-.+\.jsa)\.\d+" + re.escape(_PARTIAL) + "$")


@dataclass(frozen=True)
class ClassDataSharing:
    """The driver JVM's class-data-sharing options, and the archive this run records, if any.

    ``partial``: no archive exists yet; this run's JVM writes one there as it exits
    (``-XX:ArchiveClassesAtExit``, JDK 13+), which the session's end waits for before it moves
    the archive into place (:func:`finish_recording`); what a JVM of an older run or another
    program left is adopted by a later run (:func:`_adopt_finished_recordings`)."""

    java_options: str
    partial: Path | None = None
    # The JVM writes an archive as it exits: ``partial``, or (JDK 19+) the missing ``archive``.
    records: bool = False
    archive: Path | None = None


def class_data_sharing(conf: dict[str, str] | None = None, record: bool = True) -> ClassDataSharing:
    """The class-data-sharing options for the driver JVM that Spark will start.

    The archive lives in the user's cache directory (``$XDG_CACHE_HOME/kafka-audit`` or
    ``~/.cache/kafka-audit``), one per Java runtime, PySpark install and driver class path (an
    archive only serves the class path it was made with). On JDK 19+ the JVM creates and checks it
    itself (``-XX:+AutoCreateSharedArchive``). On JDK 13-18 the first run (when ``record``, and
    no other run is recording) has its JVM record the archive at exit, which the session's end
    waits for; later runs map it (``-XX:SharedArchiveFile``). A JVM that cannot use an archive (changed
    jars, another JVM) ignores it with a warning in Spark's log."""
    java = _java_runtime()
    folder = _cache_dir()
    if java is None or folder is None:
        return ClassDataSharing("")
    version, major = java
    import pyspark

    extra = (conf or {}).get("spark.driver.extraClassPath", "")
    digest = hashlib.sha1("\0".join((version, pyspark.__file__, _jars_stamp(pyspark.__file__), extra)).encode()).hexdigest()[:12]
    archive = folder / f"spark-driver-{pyspark.__version__}-java-{version}-{digest}.jsa"
    recording = _adopt_finished_recordings(folder, archive)
    prune(folder, archive)
    if major >= _JDK_AUTO_ARCHIVE:
        _note_use(archive, pyspark.__file__)
        missing = not archive.is_file()
        return ClassDataSharing(f"-XX:+AutoCreateSharedArchive -XX:SharedArchiveFile={archive}", None, missing, archive)
    if archive.is_file():
        _note_use(archive, pyspark.__file__)
        return ClassDataSharing(f"-XX:SharedArchiveFile={archive}")
    if not record or recording or major < _JDK_ARCHIVE_AT_EXIT:
        return ClassDataSharing("")
    partial = archive.with_name(f"{archive.name}.{os.getpid()}{_PARTIAL}")
    return ClassDataSharing(f"-XX:ArchiveClassesAtExit={partial}", partial, records=True)


def _jars_stamp(pyspark_file: str) -> str:
    """When the install's ``jars`` folder was last written (its inode and time): a reinstall of
    PySpark at the same path writes new jars, whose classes an archive of the old ones cannot
    serve (the JVM refuses it: "The top archive failed to load", with a warning on stderr)."""
    try:
        found = os.stat(os.path.join(os.path.dirname(pyspark_file), "jars"))
    except OSError:
        return ""
    return f"{found.st_ino}:{found.st_mtime_ns}"


def _adopt_finished_recordings(folder: Path, archive: Path) -> bool:
    """Move every archive in ``folder`` whose recording JVM has exited into place (if whole and
    none is there yet), drop the rest of what dead JVMs left; True while one still records
    ``archive``.

    A recording is ``<archive>.<pid>.partial`` with the recording JVM's process id beside it in
    ``<partial>.jvm``; one whose JVM never started (no id, untouched for 10 minutes), or seems to
    run for more than a day (its process id taken by another process), is dropped or adopted as
    if it had ended."""
    recording = False
    found = folder.glob(f"*.jsa.*{_PARTIAL}*")
    for partial in {path.with_name(path.name.removesuffix(_JVM_MARKER)) for path in found}:
        named = _RECORDING.match(partial.name)
        if named is None:
            continue
        target = partial.with_name(named.group("archive"))
        marker = partial.with_name(partial.name + _JVM_MARKER)
        try:
            jvm = int(marker.read_text())
        except (OSError, ValueError):
            jvm = None
        try:
            if jvm is not None and (not _alive(jvm) or time.time() - marker.stat().st_mtime > _STALE_S):
                if _complete_archive(partial) and not target.exists():
                    os.replace(partial, target)
                else:
                    partial.unlink(missing_ok=True)
                marker.unlink()
            elif jvm is not None or time.time() - partial.stat().st_mtime < _UNMARKED_STALE_S:
                recording = recording or target == archive
            else:
                partial.unlink()
        except OSError:
            recording = recording or target == archive  # another run is adopting it
    return recording


def prune(folder: Path, current: Path, keep: int = KEEP_ARCHIVES) -> list[Path]:
    """Remove the archives ``folder`` need not keep, ``current`` (this run's) never: those whose
    PySpark install no longer exists, then all but the ``keep`` - 1 most recently used others
    (last use: the mtime of the note :func:`_note_use` leaves, else the archive's own). A JVM
    that maps a removed archive keeps its mapping. Returns the archives removed."""
    others = []
    for archive in folder.glob("spark-driver-*.jsa"):
        if archive == current:
            continue
        note = archive.with_name(archive.name + _INSTALL)
        try:
            install = note.read_text(encoding="utf-8")
            used = note.stat().st_mtime
        except OSError:
            install, used = None, _mtime(archive)
        others.append((install is not None and not os.path.exists(install), used, archive))
    others.sort(key=lambda item: (item[0], -item[1]))
    removed = []
    for index, (gone, _, archive) in enumerate(others):
        if gone or index >= keep - 1:
            with contextlib.suppress(OSError):  # another run removed it first
                archive.unlink()
                removed.append(archive)
            with contextlib.suppress(OSError):
                archive.with_name(archive.name + _INSTALL).unlink()
    for note in folder.glob(f"spark-driver-*.jsa{_INSTALL}"):  # notes of archives removed by hand
        if not note.with_name(note.name.removesuffix(_INSTALL)).exists():
            with contextlib.suppress(OSError):
                note.unlink()
    return removed


def _note_use(archive: Path, install: str) -> None:
    """Note beside ``archive`` the PySpark install it serves; the note's mtime is its last use."""
    with contextlib.suppress(OSError):
        archive.with_name(archive.name + _INSTALL).write_text(install, encoding="utf-8")


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _complete_archive(path: Path) -> bool:
    """Whether ``path`` holds a whole CDS archive: HotSpot writes the header, which starts with
    the archive's magic number (CDS_ARCHIVE_MAGIC / CDS_DYNAMIC_ARCHIVE_MAGIC, native byte
    order), after every region, so a JVM killed while writing leaves no magic."""
    try:
        with open(path, "rb") as archive:
            head = archive.read(_CDS_MAGIC_SIZE)
    except OSError:
        return False
    return len(head) == _CDS_MAGIC_SIZE and int.from_bytes(head, sys.byteorder) in _CDS_MAGIC


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
    if found is None or major is None:
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


def finish_recording(sharing: ClassDataSharing, recorded: bool) -> None:
    """After a JVM that recorded ``sharing``'s archive has ended: :func:`_finish_partial`, or
    (JDK 19+, written in place) an archive the JVM did not finish, removed."""
    if sharing.partial is not None:
        _finish_partial(sharing.partial, recorded)
    elif sharing.records and sharing.archive is not None and not (recorded and _complete_archive(sharing.archive)):
        with contextlib.suppress(OSError):
            sharing.archive.unlink(missing_ok=True)


def _finish_partial(partial: Path, recorded: bool) -> None:
    """After the recording JVM has ended: a whole archive (``recorded``: its JVM exited well)
    moved into place when none is there yet, else removed with its marker. A JVM killed while
    writing leaves no magic (:func:`_complete_archive`), so a cut-short file is never adopted."""
    named = _RECORDING.match(partial.name)
    with contextlib.suppress(OSError):
        if recorded and named is not None and _complete_archive(partial):
            target = partial.with_name(named.group("archive"))
            if not target.exists():
                os.replace(partial, target)
        partial.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        partial.with_name(partial.name + _JVM_MARKER).unlink(missing_ok=True)
