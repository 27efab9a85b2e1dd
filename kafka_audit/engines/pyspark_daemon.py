"""PySpark's worker daemon (``pyspark.daemon``), run from the installed PySpark package's compiled
modules rather than from the zipped copy of the same package that Spark puts first on the
workers' path. A local session of ours names this module as ``spark.python.daemon.module``
(``preflight.workers_daemon_settings``).

Spark starts ``python -m <spark.python.daemon.module> pyspark.worker`` with ``PYTHONPATH`` led by
``$SPARK_HOME/python/lib/pyspark.zip`` and ``py4j-*-src.zip``, then the ``spark-core`` jar
(``PythonUtils.sparkPythonPath``, ``PythonWorkerFactory``). In a pip install of PySpark,
``SPARK_HOME`` is the installed package itself, so those zips hold the modules that lie, compiled,
beside them; but Python compiles a zip's modules from source at every import (``zipimport``
writes no bytecode cache). Importing ``pyspark.daemon`` and ``pyspark.worker`` cost 1.4-1.7 CPU s
from the zips and 0.3 s from the package (2-core VM), paid by the daemon of every session and
again by each forked worker for the modules it imports after the fork (the Arrow serializers,
``pyspark.sql``): the first job waited 2.7 s for its Python workers to start.

The zips and jars of an installed ``pyspark`` package are taken off the path (and out of
``sys.path_importer_cache``) when the package is what ``import pyspark`` then finds: a jar there
holds no Python module, and the package holds what its zips hold (a zip whose top-level package,
``py4j``, is found nowhere else stays, at the end). Each worker's first task adds a directory to
its path and so calls ``importlib.invalidate_caches()`` (``pyspark.worker_util.setup_spark_files``),
which in CPython 3.11 re-reads the directory of every zip or jar importer in that cache, in
Python: the ``spark-core`` jar's 6,000 entries twice and the zip's 1,500, 0.1-0.3 s of each
worker's start. A ``SPARK_HOME`` of a Spark distribution apart from the package keeps its own
path. Nothing else of the daemon changes: ``pyspark.daemon`` runs as ``__main__`` with the same
arguments.
"""

from __future__ import annotations

import os
import runpy
import sys
from importlib.machinery import PathFinder

_PACKAGE = "pyspark"
_DAEMON = "pyspark.daemon"


def _installed_package(path: list[str]) -> str | None:
    """The directory of the installed ``pyspark`` package (with ``__init__.py``) whose
    ``python/lib`` holds a zip on ``path`` (the first such package)."""
    for entry in path:
        lib = os.path.dirname(entry)
        home = os.path.dirname(os.path.dirname(lib))
        if (
            entry.endswith(".zip")
            and os.path.basename(lib) == "lib"
            and os.path.basename(os.path.dirname(lib)) == "python"
            and os.path.basename(home) == _PACKAGE
            and os.path.isfile(os.path.join(home, "__init__.py"))
        ):
            return home
    return None


def _bundled(entry: str, package: str) -> bool:
    """Whether ``entry`` is one of ``package``'s zips (``python/lib/*.zip``) or jars (``jars/*.jar``)."""
    folder, name = os.path.split(entry)
    return (folder == os.path.join(package, "python", "lib") and name.endswith(".zip")) or (
        folder == os.path.join(package, "jars") and name.endswith(".jar")
    )


def compiled_first(path: list[str]) -> list[str]:
    """``path`` without the installed PySpark package's own zips and jars, when the package that
    ``import pyspark`` then finds is the one they came from; a zip that alone provides its
    top-level package (``py4j``) is kept, at the end. Else ``path`` unchanged."""
    package = _installed_package(path)
    if package is None:
        return list(path)
    bundled = [entry for entry in path if _bundled(entry, package)]
    kept = [entry for entry in path if entry not in bundled]
    origin = getattr(PathFinder.find_spec(_PACKAGE, kept), "origin", None)
    if origin is None or os.path.realpath(origin) != os.path.realpath(os.path.join(package, "__init__.py")):
        return list(path)
    needed = [zip_ for zip_ in bundled if zip_.endswith(".zip") and not _found_elsewhere(zip_, kept)]
    return kept + needed


def _found_elsewhere(zip_: str, path: list[str]) -> bool:
    """Whether the top-level package of PySpark's zip ``zip_`` (``py4j-*-src.zip``: ``py4j``;
    ``pyspark.zip``: ``pyspark``) is found on ``path``."""
    name = os.path.basename(zip_).split("-", 1)[0].removesuffix(".zip")
    return PathFinder.find_spec(name, path) is not None


def forget_importers(removed: set[str]) -> None:
    """Drop the cached importers of the path entries ``removed`` and of any folder inside them
    (``jar/org``: a namespace package's portion), so that no ``invalidate_caches`` reads them."""
    for key in list(sys.path_importer_cache):
        if key in removed or any(key.startswith(entry + os.sep) for entry in removed):
            del sys.path_importer_cache[key]


def main() -> None:
    """Run ``pyspark.daemon`` as ``__main__`` (its arguments: the worker module) from the compiled
    package, with the bundled zips and jars off the path (:func:`compiled_first`)."""
    before = list(sys.path)
    sys.path[:] = compiled_first(before)
    forget_importers(set(before) - set(sys.path))
    runpy.run_module(_DAEMON, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
