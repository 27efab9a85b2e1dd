"""What one audit is asked to do: :class:`ScanRequest` (SPEC sections 1 and 5), which the command
line (:mod:`kafka_audit.cli.audit_commands`) and :func:`kafka_audit.scan` (:func:`library_request`)
both build and :func:`kafka_audit.api.runner.run` runs; and the readers of the files its options
name (``--baseline``, ``--broker-log``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kafka_audit.audit.scan_options import SETTINGS, ScanOptions, scan_options
from kafka_audit.engines.run import Engine
from kafka_audit.errors import KafkaAuditError
from kafka_audit.io.broker_log import BrokerLog
from kafka_audit.report.views import ReportFilter


class RequestError(KafkaAuditError, ValueError):
    """An option or PATH the audit cannot take: one line naming the cause (exit 2 on the command
    line, SPEC section 1; a ``ValueError`` from :func:`kafka_audit.scan`)."""


@dataclass(frozen=True, slots=True)
class ScanRequest:
    """One audit: the PATHs and their filters, the :class:`ScanOptions`, the report filter
    (``--producer-id``, ``--since``, ``--until``), the engine settings (a given SparkSession, or
    the engine, master, Spark settings, Connect server, the cluster's resolved secret, Spark's
    warnings, the Parquet target, the progress display, when the command started) and the
    storage settings (the URIs' filesystem options, the ``--rsm-key-file``, ``--max-read-rate``)."""

    paths: tuple[str, ...]
    options: ScanOptions
    topics: tuple[str, ...] = ()
    partitions: tuple[int, ...] = ()
    keep: ReportFilter = ReportFilter()
    engine: Engine = Engine.local
    master: str = "local[*]"
    conf: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold a secret
    remote: str | None = None
    spark: Any = field(default=None, repr=False, compare=False)
    spark_warnings: bool = False
    secret: str | None = field(default=None, repr=False)
    output_parquet: str | None = None
    progress: bool = False
    started_at: float | None = None
    storage_options: Mapping[str, Any] = field(default_factory=dict, repr=False)
    rsm_key_file: str | None = None
    max_read_rate: float | None = None


def audit_options(values: Mapping[str, Any], **read: Any) -> ScanOptions:
    """The :class:`ScanOptions` of the option values that are its settings (by their names in the
    option table); ``read`` replaces those given as text or files by what they say, and adds
    ``timeline``."""
    return scan_options(**{**{name: values[name] for name in SETTINGS if name in values}, **read})


def read_baseline(path: str | os.PathLike[str] | None) -> frozenset[str]:
    """The fingerprints ``--baseline`` lists (none without it); a file that cannot be read or is
    not a baseline is a :class:`RequestError` naming the cause."""
    from kafka_audit.report.baseline import BaselineError, parse_baseline

    if path is None:
        return frozenset()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise RequestError(f"--baseline {os.fspath(path)}: {reason}") from None
    try:
        return parse_baseline(text)
    except BaselineError as exc:
        raise RequestError(f"--baseline {os.fspath(path)}: {exc}") from None


def read_broker_logs(paths: list[str]) -> BrokerLog | None:
    """The ``--broker-log`` files read and classified (None without any); a file that cannot be
    read is a :class:`RequestError` naming it."""
    from kafka_audit.io.broker_log import BrokerLogError
    from kafka_audit.io.broker_log import read_broker_logs as read

    if not paths:
        return None
    try:
        return read(paths)
    except BrokerLogError as exc:
        raise RequestError(str(exc)) from None


def library_request(paths: Any, spark: Any, values: Mapping[str, Any]) -> ScanRequest:
    """The request of ``kafka_audit.scan(paths, spark, **values)`` (SPEC section 5): relative
    local paths made absolute, the engine chosen (``spark`` when a session, ``master`` or
    ``remote`` is given), the files the options name read."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    roots = tuple(str(p) if "://" in str(p) else os.path.abspath(p) for p in paths)
    engine = values["engine"] or ("spark" if spark is not None or values["remote"] or values["master"] else "local")
    if engine not in ("spark", "local"):
        raise ValueError(f"engine {engine!r} is neither 'spark' nor 'local'")
    if spark is not None and engine == "local":
        raise ValueError("engine 'local' runs in this process; do not pass a SparkSession with it")
    options = audit_options(
        values,
        reference_time=_epoch_ms(values["reference_time"]),
        broker_log=read_broker_logs([str(p) for p in values["broker_logs"]]),
        baseline=read_baseline(values["baseline"]),
    )
    target = values["output_parquet"]
    return ScanRequest(
        roots, options, tuple(values["topics"] or ()), tuple(values["partitions"] or ()),
        engine=Engine(engine), master=values["master"] or "local[*]", conf=dict(values["conf"] or {}),
        remote=values["remote"], spark=spark, spark_warnings=values["spark_warnings"],
        secret=_spark_secret(engine, spark, values["remote"], values["spark_secret_file"]),
        output_parquet=target if target is None or "://" in target else os.path.abspath(target),
        storage_options=dict(values["storage_options"] or {}),
        rsm_key_file=os.fspath(values["rsm_key_file"]) if values["rsm_key_file"] is not None else None,
    )


def _spark_secret(engine: str, spark: Any, remote: str | None, secret_file: str | os.PathLike[str] | None) -> str | None:
    """The shared secret of the classic session :func:`kafka_audit.scan` starts (the CLI's
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


def _epoch_ms(value: int | datetime | None) -> int | None:
    if value is None or isinstance(value, int):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return int(value.timestamp() * 1000)
