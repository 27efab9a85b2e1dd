"""The Spark session's quicker start: the driver JVM's class-data-sharing archive in the user's
cache directory (recorded once, adopted when its JVM is gone, then mapped by every later run)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kafka_audit import jvm_class_archive
from kafka_audit.jvm_class_archive import class_data_sharing


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
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return done.stdout.strip()


def test_a_finished_recording_is_adopted_and_mapped(cache):
    sharing = class_data_sharing({})
    sharing.partial.write_bytes(_ARCHIVE)
    sharing.partial.with_name(sharing.partial.name + ".jvm").write_text(_finished_jvm())
    mapped = class_data_sharing({})
    archive = _option(mapped, "SharedArchiveFile")
    assert archive is not None and archive == str(sharing.partial).rsplit(".", 2)[0]
    assert sorted(p.name for p in cache.iterdir()) == [archive.rsplit("/", 1)[1]]
    assert open(archive, "rb").read() == _ARCHIVE


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
