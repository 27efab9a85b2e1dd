"""The engines an audit runs on (``--engine``, SPEC section 1), behind one call: :func:`run_audit`.

- ``spark`` (the default): the Spark job of :mod:`kafka_audit.engines.spark_job`, on a session started for
  the command (:mod:`kafka_audit.engines.spark_session`).
- ``local``: :class:`kafka_audit.engines.local.LocalEngine`, the same audit in this process with no
  JVM. Nothing of pyspark is imported on this path (``tests/test_engines.py`` checks it).

Both are an ``engine.AuditEngine`` given the same plan (:func:`~kafka_audit.engines.engine.audit_with`)
and give identical findings; the summary says which engine ran (``engine``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Protocol

from kafka_audit.engines.spark_errors import SparkFailure, describe
from kafka_audit.record import record_screen

if TYPE_CHECKING:
    from kafka_audit.audit.results import Progress, ScanResult
    from kafka_audit.audit.scan_options import ScanOptions
    from kafka_audit.log.discovery import Discovery


class PhaseDisplay(Protocol):
    """What an engine tells the progress display (``report.progress.PhaseDisplay`` draws it)."""

    def update(self, progress: Progress) -> None: ...

    def starting_spark(self, where: str) -> None: ...

    def spark_started(self) -> None: ...


class Engine(str, Enum):
    spark = "spark"
    local = "local"


def run_audit(
    discovery: Discovery,
    options: ScanOptions,
    engine: Engine,
    master: str = "local[*]",
    conf: dict[str, str] | None = None,
    display: PhaseDisplay | None = None,
    remote: str | None = None,
    output_parquet: str | None = None,
    secret: str | None = None,
) -> ScanResult:
    """Audit everything ``discovery`` found on ``engine``, showing its phases on ``display``: on
    Spark, a classic session on ``master`` (authenticated and encrypted with ``secret``,
    :mod:`kafka_audit.engines.spark_security`) or a Spark Connect session on ``remote``. With
    ``output_parquet``, the datasets of SPEC section 3 are written there too.

    Without the compiled record screen in this process, one notice on stderr: every batch is
    validated in full (slower, the same findings). Raises :class:`SparkFailure` when the Spark
    engine fails to start or run."""
    on_progress: Callable[[Progress], None] | None = display.update if display is not None else None
    if not record_screen.COMPILED:
        print(record_screen.SLOWER_NOTICE, file=sys.stderr)
    if engine is Engine.local:
        result = _run_in_process(discovery, options, on_progress, output_parquet)
    else:
        result = _run_on_spark(discovery, options, master, conf or {}, display, remote, output_parquet, secret)
    result.summary["engine"] = engine.value
    return result


def _run_in_process(
    discovery: Discovery,
    options: ScanOptions,
    on_progress: Callable[[Progress], None] | None,
    output_parquet: str | None,
) -> ScanResult:
    from kafka_audit.engines.engine import audit_with
    from kafka_audit.engines.local import LocalEngine

    if output_parquet is None:
        return audit_with(LocalEngine(), discovery, options, on_progress)
    from kafka_audit.engines.parquet_output import LocalDatasets

    datasets = LocalDatasets(output_parquet)
    result = audit_with(LocalEngine(on_batches=datasets.add_batches), discovery, options, on_progress)
    datasets.finish([f.to_dict() for f in result.findings], result.producers)
    return result


def _run_on_spark(
    discovery: Discovery,
    options: ScanOptions,
    master: str,
    conf: dict[str, str],
    display: PhaseDisplay | None,
    remote: str | None,
    output_parquet: str | None,
    secret: str | None,
) -> ScanResult:
    from kafka_audit.engines import spark_session
    from kafka_audit.engines.engine import audit_with
    from kafka_audit.engines.preflight import check_executors
    from kafka_audit.engines.spark_job import SparkEngine

    if display is not None:
        display.starting_spark(remote or master)
    try:
        # A classic session's failures are SparkFailure already, with the root cause and the log.
        session = (
            spark_session.connect_session(remote, conf) if remote else spark_session.spark_session(master, conf, secret)
        )
        with session as spark:
            if display is not None:
                display.spark_started()
            for warning in check_executors(spark, paths_executors_read(discovery)).warnings:
                print(f"kafka-audit: warning: {warning}", file=sys.stderr)
            engine = SparkEngine(spark, output_parquet)
            return audit_with(engine, discovery, options, display.update if display else None)
    except SparkFailure:
        raise
    except Exception as exc:  # Spark Connect: the client's error, reduced to its root cause
        raise SparkFailure(describe(exc, None)) from exc


def paths_executors_read(discovery: Discovery) -> list[str]:
    """The absolute PATHs and partition folders every executor must see (the preflight); objects
    in a store are read through its library, not a mount, and are left out."""
    from kafka_audit.io import storage

    local = {os.path.abspath(storage.local_path(p)) for p in discovery.paths if not storage.is_remote(p)}
    return sorted(local | {p.path for p in discovery.partitions if not storage.is_remote(p.path)})
