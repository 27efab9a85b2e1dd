"""The Spark session's quicker start: the driver JVM's class-data-sharing archive in the user's
cache directory (recorded once, adopted when its JVM is gone, then mapped by every later run)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_audit.engines import jvm_class_archive
from kafka_audit.engines.jvm_class_archive import ClassDataSharing, class_data_sharing, finish_recording, prune


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if jvm_class_archive._java_runtime() is None:
        pytest.skip("no java on the PATH")
    major = jvm_class_archive._java_runtime()[1]
    if major >= 19 or major < 13:
        pytest.skip(f"Java {major}: the JVM manages its archive itself, or has none")
    return tmp_path / "kafka-audit"


def _option(sharing, name: str) -> str | None:
    for option in sharing.java_options.split():
        if option.startswith(f"-XX:{name}="):
            return option.split("=", 1)[1]
    return None


def test_the_first_run_records_the_archive_in_the_cache_dir(cache):
    sharing = class_data_sharing({})
    partial = _option(sharing, "ArchiveClassesAtExit")
    assert partial is not None and str(sharing.partial) == partial
    assert sharing.partial.parent == cache and sharing.partial.name.endswith(".partial")
    assert class_data_sharing({}, record=False).java_options == ""


def test_a_recording_whose_jvm_is_still_running_is_not_recorded_again(cache):
    sharing = class_data_sharing({})
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        sharing.partial.with_name(sharing.partial.name + ".jvm").write_text(str(running.pid))
        assert class_data_sharing({}).java_options == ""
    finally:
        running.kill()
        running.wait()


# What HotSpot writes first in a dynamic archive: CDS_DYNAMIC_ARCHIVE_MAGIC in native byte order.
_ARCHIVE = (0xF00BABA8).to_bytes(4, sys.byteorder) + b"archive bytes"


def _finished_jvm() -> str:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=False)
    return done.stdout.strip()


def test_a_finished_recording_is_adopted_and_mapped(cache):
    sharing = class_data_sharing({})
    sharing.partial.write_bytes(_ARCHIVE)
    sharing.partial.with_name(sharing.partial.name + ".jvm").write_text(_finished_jvm())
    mapped = class_data_sharing({})
    archive = _option(mapped, "SharedArchiveFile")
    assert archive is not None and archive == str(sharing.partial).rsplit(".", 2)[0]
    name = archive.rsplit("/", 1)[1]
    assert sorted(p.name for p in cache.iterdir()) == [name, name + ".install"]  # and the install it serves
    assert Path(archive).read_bytes() == _ARCHIVE


def test_an_archive_cut_short_is_dropped_and_recorded_again(cache):
    """A JVM killed while writing leaves a file without its header: it is not adopted."""
    sharing = class_data_sharing({})
    sharing.partial.write_bytes(bytes(4096))
    sharing.partial.with_name(sharing.partial.name + ".jvm").write_text(_finished_jvm())
    again = class_data_sharing({})
    assert _option(again, "SharedArchiveFile") is None
    assert _option(again, "ArchiveClassesAtExit") is not None
    assert [p.name for p in cache.iterdir()] == []


def test_the_archive_is_per_driver_class_path(cache):
    plain = class_data_sharing({})
    extended = class_data_sharing({"spark.driver.extraClassPath": "/opt/extra.jar"})
    assert plain.partial.name.split(".jsa")[0] != extended.partial.name.split(".jsa")[0]


def test_an_unwritable_cache_dir_means_no_archive(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert class_data_sharing({}).java_options == ""


# -- pruning the cache: archives of other installs, recordings left by dead JVMs -----------------


def _archive(folder, name: str, used: float, install: str | None = None):
    """An archive in ``folder`` last used at ``used`` (the note's mtime, or the archive's own)."""
    path = folder / f"spark-driver-4.3.0-java-17-{name}.jsa"
    path.write_bytes(_ARCHIVE)
    os.utime(path, (used, used))
    if install is not None:
        note = path.with_name(path.name + ".install")
        note.write_text(install)
        os.utime(note, (used, used))
    return path


def _names(folder) -> list[str]:
    return sorted(p.name.removeprefix("spark-driver-4.3.0-java-17-") for p in folder.glob("spark-driver-*"))


def test_prune_keeps_the_current_archive_and_the_most_recently_used_others(tmp_path):
    now = time.time()
    existing = tmp_path / "pyspark" / "__init__.py"
    existing.parent.mkdir()
    existing.write_text("")
    current = _archive(tmp_path, "current", now - 9000, str(existing))  # the oldest, but this run's
    for age in range(1, 6):
        _archive(tmp_path, f"age{age}", now - age * 1000, str(existing) if age % 2 else None)
    removed = prune(tmp_path, current, keep=3)
    assert sorted(p.name for p in removed) == sorted(f"spark-driver-4.3.0-java-17-age{a}.jsa" for a in (3, 4, 5))
    assert _names(tmp_path) == ["age1.jsa", "age1.jsa.install", "age2.jsa", "current.jsa", "current.jsa.install"]


def test_prune_removes_the_archives_of_installs_that_are_gone_first(tmp_path):
    now = time.time()
    current = _archive(tmp_path, "current", now, str(tmp_path))
    _archive(tmp_path, "gone", now, str(tmp_path / "deleted-venv" / "pyspark" / "__init__.py"))
    _archive(tmp_path, "old", now - 5000, str(tmp_path))
    _archive(tmp_path, "unknown", now - 9000)  # made before notes were kept: judged by its age only
    assert [p.name.split("-")[-1] for p in prune(tmp_path, current, keep=3)] == ["gone.jsa"]
    assert _names(tmp_path) == ["current.jsa", "current.jsa.install", "old.jsa", "old.jsa.install", "unknown.jsa"]
    (tmp_path / "spark-driver-4.3.0-java-17-old.jsa").unlink()  # removed by hand: its note follows
    prune(tmp_path, current, keep=3)
    assert _names(tmp_path) == ["current.jsa", "current.jsa.install", "unknown.jsa"]


def test_recordings_of_any_archive_left_by_dead_jvms_are_adopted_or_removed(tmp_path):
    """A whole recording whose JVM exited becomes its archive; one cut short, or without a JVM
    process id and untouched for 10 minutes, is removed; one whose JVM runs is left alone."""
    current = tmp_path / "spark-driver-4.3.0-java-17-current.jsa"
    old = time.time() - 3600

    def recording(name: str, content: bytes, jvm: str | None):
        partial = tmp_path / f"spark-driver-4.3.0-java-17-{name}.jsa.123{'' if jvm else '4'}.partial"
        partial.write_bytes(content)
        os.utime(partial, (old, old))
        if jvm is not None:
            partial.with_name(partial.name + ".jvm").write_text(jvm)

    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        recording("whole", _ARCHIVE, _finished_jvm())
        recording("cut", bytes(4096), _finished_jvm())
        recording("unmarked", _ARCHIVE, None)
        recording("running", b"", str(running.pid))
        assert jvm_class_archive._adopt_finished_recordings(tmp_path, current) is False
        assert _names(tmp_path) == ["running.jsa.123.partial", "running.jsa.123.partial.jvm", "whole.jsa"]
        assert (tmp_path / "spark-driver-4.3.0-java-17-whole.jsa").read_bytes() == _ARCHIVE
        running_archive = tmp_path / "spark-driver-4.3.0-java-17-running.jsa"
        assert jvm_class_archive._adopt_finished_recordings(tmp_path, running_archive) is True
    finally:
        running.kill()
        running.wait()


def test_class_data_sharing_prunes_the_cache_and_notes_the_install_it_maps(cache):
    import pyspark

    sharing = class_data_sharing({})
    current = Path(str(sharing.partial).rsplit(".", 2)[0])
    current.write_bytes(_ARCHIVE)
    gone = _archive(cache, "gone", time.time(), str(cache / "no-such-venv" / "pyspark" / "__init__.py"))
    assert _option(class_data_sharing({}), "SharedArchiveFile") == str(current)
    assert not gone.exists()
    assert current.with_name(current.name + ".install").read_text() == pyspark.__file__


def test_a_pyspark_reinstalled_at_the_same_path_gets_a_new_archive(cache, tmp_path, monkeypatch):
    """The archive is made for the install's jars: new jars at the same path (a reinstall) need a
    new one (the JVM refuses the old one, warning "The top archive failed to load")."""
    import pyspark

    install = tmp_path / "site-packages" / "pyspark"
    (install / "jars").mkdir(parents=True)
    monkeypatch.setattr(pyspark, "__file__", str(install / "__init__.py"))
    before = class_data_sharing({}).partial.name.split(".jsa")[0]
    assert class_data_sharing({}).partial.name.split(".jsa")[0] == before  # nothing changed
    (install / "jars").rename(install / "old-jars")
    (install / "jars").mkdir()  # what pip does: the old files removed, new ones written
    assert class_data_sharing({}).partial.name.split(".jsa")[0] != before


def test_a_recording_is_moved_into_place_only_when_its_jvm_ended_well_and_wrote_it_whole(tmp_path):
    """The end of the session that recorded (its JVM waited for): a whole archive from a JVM that
    exited well becomes the archive; one cut short by a signal, or without its magic, is removed,
    and the recording's marker goes either way."""
    def recording(name: str, content: bytes) -> ClassDataSharing:
        partial = tmp_path / f"spark-driver-4.3.0-java-17-{name}.jsa.77.partial"
        partial.write_bytes(content)
        partial.with_name(partial.name + ".jvm").write_text("77")
        return ClassDataSharing("", partial, records=True)

    finish_recording(recording("whole", _ARCHIVE), recorded=True)
    finish_recording(recording("interrupted", _ARCHIVE), recorded=False)
    finish_recording(recording("torn", bytes(4096)), recorded=True)
    assert _names(tmp_path) == ["whole.jsa"]
    in_place = tmp_path / "spark-driver-4.3.0-java-17-auto.jsa"  # JDK 19+: written where it is mapped
    in_place.write_bytes(bytes(4096))
    finish_recording(ClassDataSharing("", None, records=True, archive=in_place), recorded=False)
    assert _names(tmp_path) == ["whole.jsa"]
