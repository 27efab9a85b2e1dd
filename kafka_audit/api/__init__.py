"""``kafka_audit.scan``: the audit as a library call (SPEC section 5), for notebooks and jobs.

Given a SparkSession (classic or Spark Connect) the audit runs there, the result carries the
``findings``, ``batches`` and ``producers`` datasets as DataFrames (persisted MEMORY_AND_DISK on
that session: ``result.unpersist()`` frees them), and the session is left running. Without one,
the audit runs in this process (``engine="local"``, the default then) or on a session it starts
and stops itself (``engine="spark"``, the default when ``master`` or ``remote`` is given; ``master``
is ``local[*]`` when not given).

The front door of the command line too: :func:`run` runs a :class:`ScanRequest`; every option is
declared once, in :data:`kafka_audit.api.options.OPTIONS`, from which ``scan``'s keywords are derived.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from kafka_audit.api.options import library_signature
from kafka_audit.api.request import RequestError, ScanRequest, library_request
from kafka_audit.api.runner import AuditResult, run
from kafka_audit.engines.preflight import ExecutorEnvironmentError

__all__ = ["AuditResult", "ExecutorEnvironmentError", "RequestError", "ScanRequest", "run", "scan"]


def scan(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], spark: Any = None, **options: Any) -> AuditResult:
    """Audit the segments under ``paths`` (the ``scan`` command's PATHs and options, SPEC
    section 1, as keywords: :data:`kafka_audit.api.options.OPTIONS`) and return an
    :class:`AuditResult`. Raises ``ValueError`` when no segment is found or an option is invalid,
    and :class:`ExecutorEnvironmentError` (one line: the executor and what it lacks) when the
    executors of the Spark session cannot run the audit: the same check as the CLI's, made before
    the job (SPEC section 5). ``baseline``: a ``--write-baseline`` file, whose findings come back
    with ``"baseline": True``. ``rsm_key_file``: the ``--rsm-key-file`` private key (PEM) of
    encrypted tiered-storage segments. ``spark_secret_file``: the ``--spark-secret-file`` of the
    classic session this call starts on ``master`` (else Spark's ``_SPARK_AUTH_SECRET``, as the CLI).

    Spark: on a local session (``master="local[...]"``, or a given one) the executors' Python
    workers run this interpreter (``sys.executable``) unless ``PYSPARK_PYTHON`` or
    ``spark.pyspark.python`` names another; on a cluster they run what those name, and an
    executor whose Python cannot run the audit raises :class:`ExecutorEnvironmentError` naming
    them. Spark's own log lines (log4j's WARN lines) stay out of the call's output: a session the
    call starts writes them to its log (removed after the call, as the CLI's), and a given
    session's log level is ERROR for the call, then restored; ``spark_warnings=True`` leaves a
    given session's level as it is. A signal (SIGINT, SIGTERM) during a session the call starts
    raises KeyboardInterrupt once its processes and scratch files are gone; on its first run on
    a machine the call waits for the JVM to write its class archive (a line on stderr)."""
    bound = _SIGNATURE.bind(paths, spark, **options)  # TypeError for a keyword it does not take
    bound.apply_defaults()
    values = dict(bound.arguments)
    return run(library_request(values.pop("paths"), values.pop("spark"), values))


_SIGNATURE = library_signature(scan)
scan.__signature__ = _SIGNATURE  # type: ignore[attr-defined]
