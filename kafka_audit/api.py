"""``kafka_audit.scan``: the audit as a library call (SPEC section 5), for notebooks and jobs.

Given a SparkSession (classic or Spark Connect) the audit runs there, the result carries the
``findings``, ``batches`` and ``producers`` datasets as DataFrames (persisted MEMORY_AND_DISK on
that session: ``result.unpersist()`` frees them), and the session is left running. Without one,
the audit runs in this process (``engine="local"``, the default then) or on a session it starts
and stops itself (``engine="spark"``, the default when ``master`` or ``remote`` is given; ``master``
is ``local[*]`` when not given).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from kafka_audit.audit.scan_options import reference_time_problem, scan_options
from kafka_audit.engines.preflight import ExecutorEnvironmentError
from kafka_audit.io.storage import StorageSettings
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.log_dir import discover
from kafka_audit.rules.replay.partition_replay import DEFAULT_PRODUCER_ID_EXPIRATION_MS, DEFAULT_TRANSACTION_TIMEOUT_MS
from kafka_audit.rules.validation.log_validator import DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_SEGMENT_BYTES

__all__ = ["AuditResult", "ExecutorEnvironmentError", "scan"]


@dataclass(slots=True)
class AuditResult:
    """What a scan found: ``findings`` (dicts of SPEC section 2, in SPEC order), ``summary`` (the
    JSON report's summary) and ``producers`` (SPEC section 3's rows); on a given SparkSession
    also the three datasets as DataFrames."""

    findings: list[dict[str, Any]]
    summary: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    producers: list[dict[str, Any]] = field(default_factory=list)
    findings_df: Any = None
    batches_df: Any = None
    producers_df: Any = None
    _frames: Any = None

    def unpersist(self) -> None:
        """Free the DataFrames' persisted rows on the session (they are recomputed if used again)."""
        if self._frames is not None:
            self._frames.unpersist()


# Over 60 lines for its signature: one keyword per scan option (SPEC section 5); the body is short.
def scan(
    paths: str | os.PathLike | Iterable[str | os.PathLike],
    spark=None,
    *,
    topics: Iterable[str] | None = None,
    partitions: Iterable[int] | None = None,
    compacted_topics: Iterable[str] = (),
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    segment_bytes: int = DEFAULT_SEGMENT_BYTES,
    timestamp_before_max_ms: int | None = None,
    timestamp_after_max_ms: int | None = None,
    reference_time: int | datetime | None = None,
    transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS,
    producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    broker_logs: Iterable[str | os.PathLike] = (),
    baseline: str | os.PathLike | None = None,
    output_parquet: str | None = None,
    engine: str | None = None,
    master: str | None = None,
    remote: str | None = None,
    conf: dict[str, str] | None = None,
    storage_options: dict | None = None,
    rsm_key_file: str | os.PathLike | None = None,
    spark_secret_file: str | os.PathLike | None = None,
    spark_warnings: bool = False,
) -> AuditResult:
    """Audit the segments under ``paths`` (the ``scan`` command's PATHs and options, SPEC
    section 1) and return an :class:`AuditResult`. Raises ``ValueError`` when no segment is found
    or an option is invalid, and :class:`ExecutorEnvironmentError` (one line: the executor and
    what it lacks) when the executors of the Spark session cannot run the audit: the same check
    as the CLI's, made before the job (SPEC section 5). ``baseline``: a ``--write-baseline``
    file, whose findings come back with ``"baseline": True``. ``rsm_key_file``: the ``--rsm-key-file`` private key (PEM) of
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
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    roots = [str(p) if "://" in str(p) else os.path.abspath(p) for p in paths]
    if engine is None:
        engine = "spark" if spark is not None or remote or master else "local"
    if engine not in ("spark", "local"):
        raise ValueError(f"engine {engine!r} is neither 'spark' nor 'local'")
    if spark is not None and engine == "local":
        raise ValueError("engine 'local' runs in this process; do not pass a SparkSession with it")
    settings = StorageSettings.of(_with_rsm_key(storage_options, rsm_key_file))  # the URIs' filesystem settings
    with StorageContext(settings) as storage:  # the call's reads; closed when it returns
        discovery = discover(
            roots,
            topics=list(topics) if topics else None,
            partitions=list(partitions) if partitions else None,
            storage=storage,
        )
        if not discovery.segment_count:
            raise ValueError("no Kafka segment (.log file) found under " + ", ".join(roots))
        options = scan_options(
            compacted_topics=compacted_topics,
            max_message_bytes=max_message_bytes,
            segment_bytes=segment_bytes,
            timestamp_before_max_ms=timestamp_before_max_ms,
            timestamp_after_max_ms=timestamp_after_max_ms,
            reference_time=_epoch_ms(reference_time),
            transaction_timeout_ms=transaction_timeout_ms,
            producer_id_expiration_ms=producer_id_expiration_ms,
            broker_log=_broker_log(broker_logs),
            baseline=_baseline(baseline),
        )
        problem = reference_time_problem(roots, options)
        if problem:
            raise ValueError(problem)
        target = output_parquet if output_parquet is None or "://" in output_parquet else os.path.abspath(output_parquet)
        secret = _spark_secret(engine, spark, remote, spark_secret_file)
        if spark is None:
            from kafka_audit.engines.run import Engine, run_audit

            return _result(
                run_audit(discovery, options, Engine(engine), master or "local[*]", conf, None, remote, target, secret)
            )
        from kafka_audit.engines import spark_job as pipeline
        from kafka_audit.engines.given_session import given_session
        from kafka_audit.engines.preflight import check_executors
        from kafka_audit.engines.run import paths_executors_read
        from kafka_audit.record import record_screen

        with given_session(spark, spark_warnings):
            preflight = check_executors(spark, paths_executors_read(discovery))  # ExecutorEnvironmentError
            result, frames = pipeline.run_job(spark, discovery, options, keep=True)
        assert frames is not None  # keep=True keeps them
        result.summary["engine"] = "spark"
        result.notes.extend(f"warning: {warning}" for warning in preflight.warnings)
        if not record_screen.COMPILED:
            result.notes.append(record_screen.SLOWER_NOTICE.removeprefix("kafka-audit: "))
        if target is not None:
            frames.write_parquet(spark, result, target)
        findings = [f.to_dict() for f in result.findings]
        return _result(
            result,
            findings_df=frames.findings(spark, findings), batches_df=frames.batches(),
            producers_df=frames.producers(spark, result.producers), _frames=frames,
        )


def _spark_secret(engine: str, spark, remote: str | None, secret_file: str | os.PathLike | None) -> str | None:
    """The shared secret of the classic session :func:`scan` starts (the CLI's
    ``--spark-secret-file`` rule: the file, else ``_SPARK_AUTH_SECRET``); a ``ValueError`` naming
    the file (never its content) when it cannot be used or cannot apply."""
    if engine == "local" and secret_file is None:
        return None
    if secret_file is not None and (engine == "local" or spark is not None or remote):
        raise ValueError(
            "spark_secret_file secures the classic session kafka_audit.scan() starts (master=...); the "
            "local engine needs none, and a SparkSession passed in or a Spark Connect server (remote) is "
            "secured by its own settings"
        )
    if spark is not None or remote:
        return None
    from kafka_audit.engines.spark_security import given_secret

    return given_secret(os.fspath(secret_file) if secret_file is not None else None)


def _with_rsm_key(storage_options: dict | None, key_file: str | os.PathLike | None) -> dict | None:
    """The storage options with the ``rsm_key_file`` key (which travels with the tasks, never printed)."""
    if key_file is None:
        return storage_options
    from kafka_audit.io.rsm_objects import RsmKey
    from kafka_audit.io.storage import RSM_KEY_OPTION

    with open(key_file, "rb") as handle:
        return {**(storage_options or {}), RSM_KEY_OPTION: RsmKey(handle.read())}


def _result(result, **frames) -> AuditResult:
    findings = [f.to_dict() for f in result.findings]
    return AuditResult(findings, dict(result.summary), list(result.notes), list(result.producers), **frames)


def _broker_log(paths: Iterable[str | os.PathLike]):
    """``--broker-log``: the files read (None without any); one that cannot be read is a ValueError."""
    from kafka_audit.io.broker_log import BrokerLogError, read_broker_logs

    names = [str(p) for p in paths]
    if not names:
        return None
    try:
        return read_broker_logs(names)
    except BrokerLogError as exc:
        raise ValueError(str(exc)) from None


def _baseline(path: str | os.PathLike | None) -> frozenset[str]:
    """The fingerprints a baseline file lists (none without one); one that cannot be read is a ValueError."""
    from kafka_audit.report.baseline import BaselineError, parse_baseline

    if path is None:
        return frozenset()
    try:
        with open(path, encoding="utf-8") as handle:
            return parse_baseline(handle.read())
    except (OSError, UnicodeDecodeError, BaselineError) as exc:
        raise ValueError(f"baseline {os.fspath(path)}: {exc}") from None


def _epoch_ms(value: int | datetime | None) -> int | None:
    if value is None or isinstance(value, int):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return int(value.timestamp() * 1000)
