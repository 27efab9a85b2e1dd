"""PySpark's worker daemon (``pyspark.daemon``), run from the installed PySpark package's compiled
modules rather than from the zipped copy of the same package that Spark puts first on the
workers' path. A local session of ours names this module as ``spark.python.daemon.module``
(``preflight.workers_daemon_settings``).

Spark starts ``python -m <spark.python.daemon.module> pyspark.worker`` with ``PYTHONPATH`` led by
``$SPARK_HOME/python/lib/pyspark.zip`` and ``py4j-*-src.zip`` (``PythonUtils.sparkPythonPath``,
``PythonWorkerFactory``). In a pip install of PySpark, ``SPARK_HOME`` is the installed package
itself, so those zips hold the modules that lie, compiled, beside them; but Python compiles a
zip's modules from source at every import (``zipimport`` writes no bytecode cache). Importing
``pyspark.daemon`` and ``pyspark.worker`` cost 1.4-1.7 CPU s from the zips and 0.3 s from the
package (2-core VM), paid by the daemon of every session and again by each forked worker for the
modules it imports after the fork (the Arrow serializers, ``pyspark.sql``): the first job waited
2.7 s for its Python workers to start.

Only the zips inside an installed ``pyspark`` package are moved, and to the end of the path (a
module missing from the package is still found in them); a ``SPARK_HOME`` of a Spark
distribution apart from the package keeps its own zips first. Nothing else of the daemon
changes: ``pyspark.daemon`` runs as ``__main__`` with the same arguments.
"""

from __future__ import annotations

import os
import runpy
import sys
from importlib.machinery import PathFinder

_PACKAGE = "pyspark"
_DAEMON = "pyspark.daemon"


def _bundled_zips(path: list[str]) -> tuple[list[str], str | None]:
    """The entries of ``path`` that are zips in ``<package>/python/lib`` of an installed
    ``pyspark`` package (a directory with ``__init__.py``; the first such package only), and
    that package's directory."""
    found: list[str] = []
    package: str | None = None
    for entry in path:
        lib = os.path.dirname(entry)
        home = os.path.dirname(os.path.dirname(lib))
        if (
            entry.endswith(".zip")
            and os.path.basename(lib) == "lib"
            and os.path.basename(os.path.dirname(lib)) == "python"
            and os.path.basename(home) == _PACKAGE
            and os.path.isfile(os.path.join(home, "__init__.py"))
            and package in (None, home)
        ):
            found.append(entry)
            package = home
    return found, package


def compiled_first(path: list[str]) -> list[str]:
    """``path`` with the installed PySpark package's own zips moved to its end, when the package
    that ``import pyspark`` then finds is the one they came from; else ``path`` unchanged."""
    zips, package = _bundled_zips(path)
    if package is None:
        return list(path)
    reordered = [entry for entry in path if entry not in zips] + zips
    origin = getattr(PathFinder.find_spec(_PACKAGE, reordered), "origin", None)
    same = origin is not None and os.path.realpath(origin) == os.path.realpath(os.path.join(package, "__init__.py"))
    return reordered if same else list(path)


def main() -> None:
    """Run ``pyspark.daemon`` as ``__main__`` (its arguments: the worker module) from the compiled
    package."""
    sys.path[:] = compiled_first(sys.path)
    runpy.run_module(_DAEMON, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
