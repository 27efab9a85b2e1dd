"""The Python worker daemon of a local session: PySpark's own daemon, run from the installed
package's compiled modules rather than from the zipped copy Spark puts first on the path."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pyspark

from kafka_audit.engines.jvm_class_archive import ClassDataSharing
from kafka_audit.engines.preflight import DAEMON_MODULE, DAEMON_SETTING, PYTHON_SETTING, PYTHON_VARIABLE, workers_daemon_settings
from kafka_audit.engines.pyspark_daemon import compiled_first, forget_importers
from kafka_audit.engines.spark_session import INTERPRETED_EXPRESSIONS, _session_settings

PACKAGE = Path(pyspark.__file__).parent
ZIPS = [str(PACKAGE / "python" / "lib" / "pyspark.zip"), *map(str, (PACKAGE / "python" / "lib").glob("py4j-*-src.zip"))]


def _install(root: Path) -> tuple[Path, list[str]]:
    """A pip-like install under ``root``: site/pyspark/__init__.py and the package's zips."""
    package = root / "site" / "pyspark"
    lib = package / "python" / "lib"
    lib.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    zips = [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip")]
    for name, module in zip(zips, ("pyspark/__init__.py", "py4j/__init__.py")):
        with zipfile.ZipFile(name, "w") as archive:
            archive.writestr(module, "")
    return package.parent, zips


def test_the_installed_packages_zips_and_jars_leave_the_path(tmp_path):
    site, zips = _install(tmp_path)
    (site / "py4j").mkdir()
    (site / "py4j" / "__init__.py").write_text("")
    jar = str(site / "pyspark" / "jars" / "spark-core_2.13-4.3.0.jar")
    other = str(tmp_path / "elsewhere")
    assert compiled_first([*zips, jar, other, str(site)]) == [other, str(site)]


def test_a_zip_whose_package_is_found_nowhere_else_stays_at_the_end(tmp_path):
    site, zips = _install(tmp_path)
    other = str(tmp_path / "elsewhere")
    assert compiled_first([*zips, other, str(site)]) == [other, str(site), zips[1]]


def test_forgetting_a_removed_entry_drops_its_importers_and_those_inside_it(tmp_path, monkeypatch):
    jar, kept = str(tmp_path / "spark-core.jar"), str(tmp_path / "site")
    cache = {jar: object(), jar + os.sep + "org": object(), kept: object(), jar + "x": object()}
    monkeypatch.setattr(sys, "path_importer_cache", dict(cache))
    forget_importers({jar})
    assert set(sys.path_importer_cache) == {kept, jar + "x"}


def test_the_zips_of_a_spark_distribution_apart_from_the_package_stay_first(tmp_path):
    lib = tmp_path / "spark-4.0.0-bin" / "python" / "lib"
    lib.mkdir(parents=True)
    path = [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip"), str(tmp_path)]
    assert compiled_first(path) == path


def test_the_zips_stay_first_when_another_pyspark_would_be_imported(tmp_path):
    site, zips = _install(tmp_path / "install")
    shadow = tmp_path / "shadow"
    (shadow / "pyspark").mkdir(parents=True)
    (shadow / "pyspark" / "__init__.py").write_text("")
    path = [*zips, str(shadow), str(site)]
    assert compiled_first(path) == path


def test_the_real_install_imports_pyspark_compiled_from_the_package(tmp_path):
    """As Spark starts the daemon: PYTHONPATH led by the installed PySpark's zips."""
    probe = (
        "import sys\n"
        "from kafka_audit.engines.pyspark_daemon import compiled_first, forget_importers\n"
        "sys.path[:] = compiled_first(sys.path)\n"
        "import pyspark.daemon\n"
        "print(pyspark.__file__)\n"
        "print(pyspark.daemon.__cached__ or '')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(ZIPS)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path, check=True)
    imported, cached = done.stdout.splitlines()
    assert Path(imported) == PACKAGE / "__init__.py"
    assert cached.endswith(".pyc")


def test_only_a_local_master_running_this_python_gets_the_daemon(monkeypatch):
    monkeypatch.delenv(PYTHON_VARIABLE, raising=False)
    assert workers_daemon_settings("local[2]", None) == {DAEMON_SETTING: DAEMON_MODULE}
    assert workers_daemon_settings("spark://127.0.0.1:7077", None) == {}
    assert workers_daemon_settings("local[2]", {PYTHON_SETTING: "/usr/bin/python3"}) == {}
    monkeypatch.setenv(PYTHON_VARIABLE, "/usr/bin/python3")
    assert workers_daemon_settings("local[2]", None) == {}


def test_a_users_conf_names_another_daemon(monkeypatch, tmp_path):
    monkeypatch.delenv(PYTHON_VARIABLE, raising=False)
    settings = _session_settings("local[1]", {DAEMON_SETTING: "pyspark.daemon"}, str(tmp_path), ClassDataSharing(""), None)
    assert settings[DAEMON_SETTING] == "pyspark.daemon"


def test_only_a_local_session_interprets_its_expressions(tmp_path):
    local = _session_settings("local[2]", None, str(tmp_path), ClassDataSharing(""), None)
    cluster = _session_settings("spark://127.0.0.1:7077", None, str(tmp_path), ClassDataSharing(""), None)
    assert {key: local[key] for key in INTERPRETED_EXPRESSIONS} == INTERPRETED_EXPRESSIONS
    assert not set(INTERPRETED_EXPRESSIONS) & set(cluster)
    given = _session_settings("local[2]", {"spark.sql.codegen.wholeStage": "true"}, str(tmp_path), ClassDataSharing(""), None)
    assert given["spark.sql.codegen.wholeStage"] == "true"


def test_the_sessions_workers_run_pyspark_from_the_package(spark):
    """A real local session: its Python workers (forked by the daemon) import PySpark's compiled
    modules, not the zip's."""
    files = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("pyspark.worker").worker.__file__).collect()
    assert files == [str(PACKAGE / "worker.py")]
    assert spark.sparkContext.getConf().get(DAEMON_SETTING) == DAEMON_MODULE


def test_the_sessions_workers_keep_no_importer_of_pysparks_zips_or_jars(spark):
    """A worker re-reads every zip or jar importer in its cache when its first task adds a folder
    to its path (``importlib.invalidate_caches``): none is left there."""
    found = spark.sparkContext.parallelize([0], 1).map(
        lambda _: [
            key
            for key, importer in __import__("sys").path_importer_cache.items()
            if importer is not None and (key.endswith((".zip", ".jar")) or ".jar" + os.sep in key)
        ]
    ).collect()
    assert found == [[]]
