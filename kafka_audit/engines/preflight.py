"""Before the Spark job: can every executor run this audit? (SPEC section 5)

A small job runs :func:`probe` on each executor: it imports kafka_audit and compares its version and
the Python minor version with the driver's, looks for the compiled record screen, and ``stat``s the
input paths. Without this, a missing package or another Python on the executors surfaces as a Py4J
error whose cause is only in the executors' logs, and data the executors cannot see as a scan of
zero bytes. A failure is one line naming the executor and the cause. An executor without the
compiled record screen (installed without a C compiler) can run the audit: it validates every
batch in full, slower, with the same findings; that is a warning, not a failure.

On a ``local[...]`` master whose Python workers run this very interpreter (the default of the
sessions the audit starts or is given, :func:`set_workers_python`), the executor
is this process's JVM on this machine and its workers see the files this process sees: the probe
runs here instead, which spares the session a job (about 0.3 s of a small scan).

The probe is shipped by value (cloudpickle), not by reference to this module, so that it runs and
reports even where kafka_audit cannot be imported. It runs as a one-column DataFrame job with a
Python UDF, which a classic session and a Spark Connect session both execute.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import kafka_audit
from kafka_audit.engines.spark_errors import SparkFailure, exception_text, executor_of, root_cause
from kafka_audit.engines.spark_security import is_local_master

# The module whose code the job's tasks run (imports everything they need).
JOB_MODULE = "kafka_audit.engines.spark_job"
# How long executors may take to register with a cluster manager before the preflight runs: the
# setting Spark's own scheduler waits for its executors by (CoarseGrainedSchedulerBackend), 30 s
# by default, so that ``--conf`` can lengthen it for executors that are slow to start.
EXECUTOR_WAIT_SETTING = "spark.scheduler.maxRegisteredResourcesWaitingTime"
EXECUTOR_WAIT_DEFAULT = "30s"
# Where a user names the Python the executors run: PySpark reads the variable, Spark the setting.
PYTHON_VARIABLE = "PYSPARK_PYTHON"
PYTHON_SETTING = "spark.pyspark.python"
# The Python worker daemon of a local session whose workers run this interpreter.
DAEMON_SETTING = "spark.python.daemon.module"
DAEMON_MODULE = "kafka_audit.engines.pyspark_daemon"
# SparkContext.pythonExec when PYSPARK_PYTHON was not set as the context started (context.py).
_PYSPARK_DEFAULT_PYTHON = "python3"
_PYTHON_HINT = (
    f"set {PYTHON_VARIABLE} (or {PYTHON_SETTING}) to a Python with kafka-audit {kafka_audit.__version__} on every executor"
)
# Rounds of probe tasks to reach every executor (tasks go where the scheduler puts them).
_ROUNDS = 3
# A probe task lasts at least this long on a cluster, so that one executor cannot take them all.
_TASK_SECONDS = 0.3


class ExecutorEnvironmentError(SparkFailure):
    """An executor cannot run the audit: the message (one line) names it and what it lacks.
    ``kafka_audit.ExecutorEnvironmentError`` (SPEC section 5), raised by the CLI's Spark engine
    (exit 2) and by ``kafka_audit.scan`` on a given session alike."""


@dataclass(slots=True)
class Preflight:
    """What the probes found: executors seen, and warnings worth a line on stderr."""

    executors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def probe(
    paths: list[str], driver_version: str, driver_python: list[int], linger: float, job_module: str = JOB_MODULE
) -> str:
    """Executor side (standard library only until kafka_audit is known to import): one JSON report.
    ``job_module`` is imported as the job's tasks import it, so that a missing dependency of the
    audit (not only of the package's top level) is found here rather than inside a task."""
    import importlib
    import os
    import socket
    import sys
    import time

    started = time.monotonic()
    cwd = os.getcwd()
    # A standalone worker runs each executor in <work dir>/<app id>/<executor id>.
    executor = os.path.basename(cwd)
    where = f"executor {executor} on {socket.gethostname()}" if executor.isdigit() else f"{socket.gethostname()} (pid {os.getpid()})"
    report: dict[str, Any] = {"where": where, "errors": [], "warnings": []}
    python = list(sys.version_info[:2])
    report["python"] = python != driver_python  # errors that another Python would cure
    if python != driver_python:
        report["errors"].append(
            f"runs Python {python[0]}.{python[1]} ({sys.executable}), the driver Python "
            f"{driver_python[0]}.{driver_python[1]}"
        )
    try:
        module = importlib.import_module("kafka_audit")
    except Exception as exc:  # noqa: BLE001 - any import failure is the report
        report["python"] = True
        report["errors"].append(f"cannot import kafka_audit with {sys.executable} ({type(exc).__name__}: {exc})")
    else:
        version = getattr(module, "__version__", None)
        if version != driver_version:
            report["python"] = True
            report["errors"].append(f"has kafka_audit {version}, the driver {driver_version}")
        try:  # what the job's tasks run, with its dependencies (crc32c, pyarrow, the codecs)
            importlib.import_module(job_module)
        except Exception as exc:  # noqa: BLE001 - any import failure is the report
            report["python"] = True
            lacks = f"lacks {exc.name}" if isinstance(exc, ModuleNotFoundError) and exc.name else "cannot import the job"
            report["errors"].append(f"{lacks} ({sys.executable}: {type(exc).__name__}: {exc})")
        try:
            importlib.import_module("kafka_audit.record._record_screen")
        except Exception as exc:  # noqa: BLE001 - missing, or built for another platform
            report["warnings"].append(
                f"has no compiled record screen ({type(exc).__name__}: {exc}): it validates every batch in full, "
                "slower, with the same findings"
            )
    unseen = []
    for path in paths:
        try:
            os.stat(path)
        except OSError as exc:
            unseen.append(f"{path} ({exc.strerror or exc})")
    if unseen:
        more = f", nor {len(unseen) - 1} more of the {len(paths)} input folders" if len(unseen) > 1 else ""
        report["errors"].append(f"cannot see {unseen[0]}{more}")
    time.sleep(max(0.0, linger - (time.monotonic() - started)))
    return json.dumps(report)


def set_workers_python(spark, started: bool) -> str | None:
    """Choose the Python the audit's workers run. On a session this process ``started``: the one
    the user named (:data:`PYTHON_VARIABLE`, else :data:`PYTHON_SETTING`, which PySpark itself
    leaves to ``spark-submit``), else this interpreter. On a given ``local[...]`` session whose
    user chose none (``pythonExec`` still PySpark's default, the ``python3`` on the PATH, which
    lacks kafka-audit when this one runs from a virtual environment that is not activated): this
    interpreter too. Anything else (a cluster, Spark Connect) is left as it is. The choice is PySpark's
    ``SparkContext.pythonExec``, read as each Python function is created; returns the one it
    replaced (None: nothing changed)."""
    context = _classic_context(spark)
    if context is None:
        return None
    named = os.environ.get(PYTHON_VARIABLE) or context.getConf().get(PYTHON_SETTING, None)
    chosen = named or context.pythonExec != _PYSPARK_DEFAULT_PYTHON
    if not started and (chosen or not context.master.startswith("local")):
        return None
    previous = context.pythonExec
    context.pythonExec = named or sys.executable
    return previous


def workers_daemon_settings(master: str, conf: dict[str, str] | None) -> dict[str, str]:
    """PySpark's worker daemon run from the installed package's compiled modules
    (:mod:`kafka_audit.engines.pyspark_daemon`), on a local master whose workers run this
    interpreter (:func:`set_workers_python`), which has kafka-audit: the first job's Python
    workers start in about 1 s less. A cluster's executors, or a Python the user named, keep
    PySpark's own daemon (an executor without kafka-audit gets the preflight's message)."""
    named = os.environ.get(PYTHON_VARIABLE) or (conf or {}).get(PYTHON_SETTING)
    if named or not is_local_master(master):
        return {}
    return {DAEMON_SETTING: DAEMON_MODULE}


def check_executors(spark, paths: list[str]) -> Preflight:
    """Run :func:`probe` on every executor of ``spark``; raise :class:`ExecutorEnvironmentError` on the
    first executor that cannot run the audit. ``paths`` are absolute."""
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    expected, count = _executors(spark)
    linger = _TASK_SECONDS if expected > 1 else 0.0
    args = (list(paths), kafka_audit.__version__, list(sys.version_info[:2]), linger)
    if _workers_run_this_python(spark):
        run_round = lambda: [probe(*args)]  # noqa: E731
    elif _classic_context(spark):
        run_round = _rdd_round(spark, args, count)
    else:
        run_round = _dataframe_round(spark, args, count)
    result = Preflight()
    seen: dict[str, dict] = {}
    for _ in range(_ROUNDS):
        try:
            reports = run_round()
        except Exception as exc:  # the worker could not even start: another Python, no pyspark
            raise ExecutorEnvironmentError(f"{_job_failure(exc)}; {_PYTHON_HINT}") from None
        for text in reports:
            report = json.loads(text)
            seen.setdefault(report["where"], report)
        if len(seen) >= expected:
            break
    for where, report in sorted(seen.items()):
        if report["errors"]:
            hint = f"; {_PYTHON_HINT}" if report.get("python") else ""
            raise ExecutorEnvironmentError(f"{where} cannot run the audit: {'; '.join(report['errors'])}{hint}")
        result.warnings.extend(f"{where} {warning}" for warning in report["warnings"])
    result.executors = sorted(seen)
    return result


def _workers_run_this_python(spark) -> bool:
    """Whether the executors are this process's JVM (a ``local[...]`` master) and their Python
    workers this interpreter: the same path, not merely the same binary (a virtual environment's
    Python is its base interpreter's, with other packages)."""
    context = _classic_context(spark)
    if context is None or not context.master.startswith("local"):
        return False
    python = context.getConf().get("spark.pyspark.python", None) or context.pythonExec
    found = shutil.which(python)
    return found is not None and os.path.abspath(found) == os.path.abspath(sys.executable)


def _rdd_round(spark, args: tuple, count: int):
    """Classic session: ``count`` probe tasks as an RDD job (the Python workers it starts are
    the ones the audit's own job then reuses)."""
    context = spark.sparkContext
    return lambda: context.parallelize(range(count), count).map(lambda _: probe(*args)).collect()


def _dataframe_round(spark, args: tuple, count: int):
    """Spark Connect: ``count`` probe tasks as a one-column DataFrame with a Python UDF."""
    import warnings

    from pyspark.sql.functions import udf

    with warnings.catch_warnings():  # PySpark's pandas version notice, printed on each UDF
        warnings.simplefilter("ignore", FutureWarning)
        run = udf(lambda _: probe(*args), "string")
    return lambda: [row[0] for row in spark.range(0, count, 1, count).select(run("id")).collect()]


# Block managers the driver knows once one executor is up: the driver's own and the executor's.
_DRIVER_AND_ONE_EXECUTOR = 2


def _executors(spark) -> tuple[int, int]:
    """(executors expected, probe tasks per round). On a classic session with a cluster manager,
    wait (bounded) for executors to register; on Spark Connect the server's count is not known."""
    context = _classic_context(spark)
    if context is None:
        return 1, 2
    if context.master.startswith("local"):
        return 1, 1
    status = context._jsc.sc().getExecutorMemoryStatus
    wait_s = context._jvm.org.apache.spark.network.util.JavaUtils.timeStringAsSec(
        context.getConf().get(EXECUTOR_WAIT_SETTING, EXECUTOR_WAIT_DEFAULT)
    )
    deadline = time.monotonic() + wait_s
    while status().size() < _DRIVER_AND_ONE_EXECUTOR:  # the driver's block manager is one of them
        if time.monotonic() > deadline:
            raise ExecutorEnvironmentError(
                f"no executor registered with {context.master} within {wait_s} s "
                f"(no worker, or none with the cores and memory asked for)"
            )
        time.sleep(0.2)
    executors = status().size() - 1
    return executors, max(executors, context.defaultParallelism)


def _classic_context(spark):
    try:
        return spark.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect sessions have no SparkContext
        return None


def _job_failure(exc: Exception) -> str:
    """The probe job failed before any probe ran: the Python worker's own error, and where."""
    text = exception_text(exc)
    cause = root_cause(text) or type(exc).__name__
    where = executor_of(text)
    return f"{where or 'an executor'} cannot run the audit: {cause[:300]}"
