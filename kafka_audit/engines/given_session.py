"""What ``kafka_audit.scan`` does to a SparkSession it is given, for the call only: its Python
workers run this interpreter where the session is local and its user named no other
(:func:`kafka_audit.engines.preflight.set_workers_python`), and Spark's own log lines below ERROR
(log4j's WARN lines on the console) stay out of the call's output unless asked for."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kafka_audit.engines.preflight import set_workers_python

# The level Spark's root logger is set to during a call (SparkContext.setLogLevel), as the
# sessions the audit starts have it.
QUIET_LEVEL = "ERROR"


@contextmanager
def given_session(spark, spark_warnings: bool = False) -> Iterator[None]:
    """The workers' Python and, unless ``spark_warnings``, Spark's log level set for the block
    and restored after it. Spark Connect sessions are left as they are (the server owns both)."""
    try:
        context = spark.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect sessions have no SparkContext
        yield
        return
    python = set_workers_python(spark, started=False)
    level = None
    if not spark_warnings:
        level = str(context._jvm.org.apache.logging.log4j.LogManager.getRootLogger().getLevel().toString())
        context.setLogLevel(QUIET_LEVEL)
    try:
        yield
    finally:
        if level is not None:
            context.setLogLevel(level)
        if python is not None:
            context.pythonExec = python
