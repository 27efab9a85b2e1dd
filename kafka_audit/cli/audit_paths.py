"""Running the audit for the commands that take PATHs (``scan``, ``producers``, ``timeline``):
:func:`audit_paths` checks the paths, discovers the segments, runs the audit on the chosen engine
with the progress display, and returns the :class:`~kafka_audit.audit.plan.ScanResult` (wall
time of the whole command, ``engine`` in the summary). Also the option values these commands
turn into inputs: ``--broker-log`` files and the ``--output-parquet`` target.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click
import typer
from rich.console import Console

from kafka_audit.cli.options import (
    DEFAULT_MASTER,
    TEXT_ERRORS,
    check_paths,
    fail,
    parse_conf,
    parse_storage_options,
    spark_secret,
    with_rsm_key,
)
from kafka_audit.engines.run import Engine

if TYPE_CHECKING:
    from kafka_audit.audit.results import ScanResult

# When the command started: the summary's wall time covers the whole command (set by
    from kafka_audit.audit.scan_options import ScanOptions

# Where the command's start is kept in the click context's meta: the summary's wall time covers
# the whole command (set by mark_command_started, which the app's callback calls before any
# command runs).
COMMAND_STARTED = "kafka_audit.command_started"


def mark_command_started(ctx: typer.Context) -> None:
    """The command starts now (its wall time is measured from here)."""
    ctx.meta[COMMAND_STARTED] = time.monotonic()


def _command_started(default: float) -> float:
    """When the running command started (:func:`mark_command_started`), else ``default``."""
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get(COMMAND_STARTED, default) if ctx is not None else default


def audit_paths(
    paths: list[str],
    options: ScanOptions,
    *,
    topic: list[str] | None = None,
    partition: list[int] | None = None,
    engine: Engine = Engine.spark,
    master: str = DEFAULT_MASTER,
    conf: list[str] | None = None,
    quiet: bool = False,
    storage_option: list[str] | None = None,
    remote: str | None = None,
    output_parquet: str | None = None,
    rsm_key_file: Path | None = None,
    spark_secret_file: Path | None = None,
    max_read_rate: float | None = None,
) -> ScanResult:
    """The audit behind ``scan``, ``producers`` and ``timeline``: check ``paths``, discover their
    segments (exit 2 with one line when there is none), audit them on ``engine`` with the
    progress display on a terminal (unless ``quiet``), and return the result, whose summary has
    the whole command's wall time and the ``engine`` that ran."""
    from kafka_audit.audit.scan_options import reference_time_problem
    from kafka_audit.audit.summary import set_wall_time
    from kafka_audit.engines.run import SparkFailure, run_audit
    from kafka_audit.io.storage import READ_RATE_OPTION, StorageSettings
    from kafka_audit.io.storage_context import StorageContext
    from kafka_audit.log.log_dir import discover

    called = time.monotonic()
    storage_options = with_rsm_key(parse_storage_options(storage_option or []), rsm_key_file)
    if max_read_rate is not None:  # travels with the tasks as the storage options do
        storage_options[READ_RATE_OPTION] = max_read_rate
    with StorageContext(StorageSettings.of(storage_options)) as storage:  # the command's reads
        check_paths(paths, storage)
        spark_conf = parse_conf(conf or [])
        secret = spark_secret(engine, remote, spark_secret_file)
        discovery = discover(
            [str(p) for p in paths], topics=topic or None, partitions=partition or None, storage=storage
        )
        if not discovery.segment_count and not discovery.unreadable and not any(p.orphan_sidecars for p in discovery.partitions):
            raise fail(_nothing_found(discovery, paths, topic or [], partition or []))
        problem = reference_time_problem([str(p) for p in paths], options)
        if problem:
            raise fail(problem)
        try:
            display_console = None if quiet else _progress_console()
            if display_console is None:
                result = run_audit(discovery, options, engine, master, spark_conf, None, remote, output_parquet, secret)
            else:
                from kafka_audit.report.progress import PhaseDisplay

                with PhaseDisplay(display_console) as display:
                    result = run_audit(
                        discovery, options, engine, master, spark_conf, display, remote, output_parquet, secret
                    )
        except SparkFailure as failure:  # one line naming the root cause and the kept log
            raise fail(storage.redact_secrets(f"Spark failed: {failure}")) from None
        set_wall_time(result.summary, time.monotonic() - _command_started(called))
        # A URI's credentials (s3://key:secret@bucket) are never shown in a report.
        result.summary["paths"] = [storage.redact_secrets(p) for p in result.summary.get("paths", [])]
        return result


def _progress_console() -> Console | None:
    """A console for the progress display when stderr is a terminal, else None. It writes to a
    copy of file descriptor 2, which stays on the terminal while the JVM starts with fd 2 pointed
    at its log (:func:`kafka_audit.engines.spark_session.create_spark_session`)."""
    if not Console(stderr=True).is_terminal:
        return None
    terminal = os.fdopen(os.dup(2), "w", encoding="utf-8", errors=TEXT_ERRORS, closefd=True)
    return Console(file=terminal, force_terminal=True)


def read_broker_log(paths: list[Path] | None):
    """The ``--broker-log`` files read and classified (None without any); a file that cannot be
    read is a usage error naming it."""
    from kafka_audit.io.broker_log import BrokerLogError, read_broker_logs

    if not paths:
        return None
    try:
        return read_broker_logs([str(p) for p in paths])
    except BrokerLogError as exc:
        raise fail(str(exc)) from None


def parquet_target(target: str | None) -> str | None:
    """``--output-parquet``: a URI as given, a local folder made absolute (executors write it)."""
    if target is None or "://" in target:
        return target
    path = Path(target).absolute()
    if path.exists() and not path.is_dir():
        raise fail(f"--output-parquet {target}: not a directory")
    return str(path)


# The topics the message names before it says how many more.
_TOPICS_SHOWN = 10


def _nothing_found(discovery, paths: list[str], topics: list[str], partitions: list[int]) -> str:
    """The exit-2 message when no segment is left to audit: which filter matched nothing, and
    what there was, or that the paths hold no segment at all."""
    where = ", ".join(str(p) for p in paths)
    if discovery.filtered_segments:
        filters = " ".join([*(f"--topic {t}" for t in topics), *(f"--partition {n}" for n in partitions)])
        seen = sorted(discovery.filtered_topics)
        listed = ", ".join(seen[:_TOPICS_SHOWN]) + (f" and {len(seen) - _TOPICS_SHOWN} more" if len(seen) > _TOPICS_SHOWN else "")
        return (
            f"{filters} matched no segment under {where} ({discovery.filtered_segments} segments found, "
            f"in topics: {listed})"
        )
    skipped = f" ({len(discovery.skipped)} other files skipped)" if discovery.skipped else ""
    return f"no Kafka segment (.log file) found under {where}{skipped}"


