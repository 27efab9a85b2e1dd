"""The one front door of an audit: :func:`run` takes a :class:`~kafka_audit.api.request.ScanRequest`
(built by the command line or by :func:`kafka_audit.scan`), checks its PATHs, discovers their
segments, runs the audit on its engine (or on the SparkSession it was given) and returns an
:class:`AuditResult` (SPEC sections 1 and 5).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_audit.api.request import RequestError, ScanRequest
from kafka_audit.io.storage import StorageSettings, is_remote, local_path
from kafka_audit.io.storage_context import StorageContext

if TYPE_CHECKING:
    from rich.console import Console

    from kafka_audit.audit.results import ScanResult
    from kafka_audit.engines.run import PhaseDisplay
    from kafka_audit.log.discovery import Discovery

# File names that are not UTF-8 reach the progress display as surrogate escapes; shown escaped.
_TEXT_ERRORS = "backslashreplace"
# The topics a "matched no segment" message names before it says how many more.
_TOPICS_SHOWN = 10


class AuditResult:
    """What a scan found: ``findings`` (dicts of SPEC section 2, in SPEC order), ``summary`` (the
    JSON report's summary) and ``producers`` (SPEC section 3's rows); on a given SparkSession
    also the three datasets as DataFrames. ``audit`` is the result the reports render."""

    __slots__ = ("_findings", "_frames", "audit", "batches_df", "findings_df", "producers_df")

    def __init__(self, audit: ScanResult, findings: list[dict[str, Any]] | None = None, frames: Any = None,
                 **datasets: Any) -> None:
        self.audit = audit
        self._findings = findings
        self._frames = frames
        self.findings_df = datasets.get("findings_df")
        self.batches_df = datasets.get("batches_df")
        self.producers_df = datasets.get("producers_df")

    @property
    def findings(self) -> list[dict[str, Any]]:
        if self._findings is None:
            self._findings = [f.to_dict() for f in self.audit.findings]
        return self._findings

    @property
    def summary(self) -> dict[str, Any]:
        return self.audit.summary

    @property
    def notes(self) -> list[str]:
        return self.audit.notes

    @property
    def producers(self) -> list[dict[str, Any]]:
        return self.audit.producers

    def unpersist(self) -> None:
        """Free the DataFrames' persisted rows on the session (they are recomputed if used again)."""
        if self._frames is not None:
            self._frames.unpersist()


def run(request: ScanRequest) -> AuditResult:
    """Run ``request``: its storage settings applied, its PATHs checked and their segments
    discovered (:class:`RequestError` naming the cause when a PATH cannot be read or nothing is
    left to audit), the audit run on its engine, the report filter applied. The summary's
    ``paths`` never show a URI's credentials. Raises
    :class:`~kafka_audit.engines.spark_errors.SparkFailure` when Spark fails to start or run."""
    from kafka_audit.engines.spark_errors import SparkFailure

    with StorageContext(_storage_settings(request)) as storage:  # the request's reads
        try:
            audited = _audit(request, storage)
        except SparkFailure as failure:  # its line may quote a --storage-option value: redacted, same class
            failure.args = (storage.redact_secrets(str(failure)),)
            raise
        # A URI's credentials (s3://key:secret@bucket) are never shown in a report.
        summary = audited.audit.summary
        summary["paths"] = [storage.redact_secrets(p) for p in summary.get("paths", [])]
    return audited


def _audit(request: ScanRequest, storage: StorageContext) -> AuditResult:
    """:func:`run` under the request's storage context."""
    from kafka_audit.audit.scan_options import reference_time_problem
    from kafka_audit.audit.summary import set_wall_time
    from kafka_audit.log.log_dir import discover
    from kafka_audit.report.views import finish_views

    paths = list(request.paths)
    check_paths(paths, storage)
    discovery = discover(paths, topics=list(request.topics) or None, partitions=list(request.partitions) or None,
                         storage=storage)
    if not discovery.segment_count and not discovery.unreadable and not any(p.orphan_sidecars for p in discovery.partitions):
        raise RequestError(_nothing_found(discovery, request))
    problem = reference_time_problem(paths, request.options)
    if problem:
        raise RequestError(problem)
    audited = _run_on_given(request, discovery) if request.spark is not None else AuditResult(_run_engine(request, discovery))
    summary = audited.audit.summary
    if request.started_at is not None:
        set_wall_time(summary, time.monotonic() - request.started_at)
    finish_views(audited.audit, request.keep)
    return audited


def _run_engine(request: ScanRequest, discovery: Discovery) -> ScanResult:
    """The audit on the request's engine, with the progress display on a terminal when asked."""
    from kafka_audit.engines.run import run_audit

    with _progress_display(request.progress) as display:
        return run_audit(
            discovery, request.options, request.engine, request.master, dict(request.conf), display,
            request.remote, request.output_parquet, request.secret,
        )


def _run_on_given(request: ScanRequest, discovery: Discovery) -> AuditResult:
    """The audit on the SparkSession ``kafka_audit.scan`` was given, its executors checked first
    (SPEC section 5); the datasets kept on it as DataFrames."""
    from kafka_audit.engines import spark_job as pipeline
    from kafka_audit.engines.given_session import given_session
    from kafka_audit.engines.preflight import check_executors
    from kafka_audit.engines.run import paths_executors_read
    from kafka_audit.record import record_screen

    spark = request.spark
    with given_session(spark, request.spark_warnings):
        preflight = check_executors(spark, paths_executors_read(discovery))  # ExecutorEnvironmentError
        result, frames = pipeline.run_job(spark, discovery, request.options, keep=True)
    assert frames is not None  # keep=True keeps them
    result.summary["engine"] = "spark"
    result.notes.extend(f"warning: {warning}" for warning in preflight.warnings)
    if not record_screen.COMPILED:
        result.notes.append(record_screen.SLOWER_NOTICE.removeprefix("kafka-audit: "))
    if request.output_parquet is not None:
        frames.write_parquet(spark, result, request.output_parquet)
    findings = [f.to_dict() for f in result.findings]
    return AuditResult(
        result, findings, frames, findings_df=frames.findings(spark, findings), batches_df=frames.batches(),
        producers_df=frames.producers(spark, result.producers),
    )


def _storage_settings(request: ScanRequest) -> StorageSettings:
    """The request's storage settings: the URIs' filesystem options, the ``--rsm-key-file`` key and
    ``--max-read-rate`` (they travel with the tasks); a key file that cannot be used is a
    :class:`RequestError` naming the file, never its content."""
    key = read_rsm_key(request.rsm_key_file) if request.rsm_key_file is not None else None
    return StorageSettings(tuple(sorted(request.storage_options.items())), key, request.max_read_rate)


def read_rsm_key(key_file: str) -> Any:
    """The ``--rsm-key-file`` private key, checked; a :class:`RequestError` naming the file (never
    its content) when it cannot be used."""
    from kafka_audit.io.rsm_objects import EncryptedSegment, RsmKey

    try:
        with open(key_file, "rb") as handle:
            key = RsmKey(handle.read())
    except OSError as exc:
        raise RequestError(f"--rsm-key-file {key_file}: cannot read it ({exc.strerror or type(exc).__name__})") from None
    try:
        key.check()
    except EncryptedSegment:
        pass  # no cryptography package: each encrypted segment says so
    except ValueError as exc:
        raise RequestError(f"--rsm-key-file {key_file}: {exc}") from None
    return key


def check_paths(paths: list[str], storage: StorageContext) -> None:
    """A :class:`RequestError` naming the first PATH that cannot be scanned: a local path that does
    not exist or cannot be read, a URI of an unsupported scheme, a missing library, an unreachable
    store."""
    for text in paths:
        try:
            storage.check_path(text)
        except OSError as exc:
            raise RequestError(storage.redact_secrets(f"{text}: {exc.strerror or exc}")) from None
        if is_remote(text):
            continue
        path = Path(local_path(text))
        if not os.path.lexists(path):
            raise RequestError(f"{path}: no such file or directory")
        if not os.path.exists(path):
            raise RequestError(f"{path}: broken symbolic link")
        if not os.access(path, os.R_OK) or (path.is_dir() and not os.access(path, os.X_OK)):
            raise RequestError(f"{path}: permission denied")


def _nothing_found(discovery: Discovery, request: ScanRequest) -> str:
    """Why no segment is left to audit: which filter matched nothing, and what there was, or that
    the paths hold no segment at all (SPEC section 1)."""
    where = ", ".join(request.paths)
    if discovery.filtered_segments:
        filters = " ".join([*(f"--topic {t}" for t in request.topics), *(f"--partition {n}" for n in request.partitions)])
        seen = sorted(discovery.filtered_topics)
        listed = ", ".join(seen[:_TOPICS_SHOWN]) + (f" and {len(seen) - _TOPICS_SHOWN} more" if len(seen) > _TOPICS_SHOWN else "")
        return (
            f"{filters} matched no segment under {where} ({discovery.filtered_segments} segments found, "
            f"in topics: {listed})"
        )
    skipped = f" ({len(discovery.skipped)} other files skipped)" if discovery.skipped else ""
    return f"no Kafka segment (.log file) found under {where}{skipped}"


@contextmanager
def _progress_display(wanted: bool) -> Iterator[PhaseDisplay | None]:
    """The progress display when ``wanted`` and stderr is a terminal, else None."""
    console = _progress_console() if wanted else None
    if console is None:
        yield None
        return
    from kafka_audit.report.progress import PhaseDisplay

    with PhaseDisplay(console) as display:
        yield display


def _progress_console() -> Console | None:
    """A console for the progress display when stderr is a terminal, else None. It writes to a
    copy of file descriptor 2, which stays on the terminal while the JVM starts with fd 2 pointed
    at its log (:func:`kafka_audit.engines.spark_session.create_spark_session`)."""
    from rich.console import Console

    if not Console(stderr=True).is_terminal:
        return None
    terminal = os.fdopen(os.dup(2), "w", encoding="utf-8", errors=_TEXT_ERRORS, closefd=True)
    return Console(file=terminal, force_terminal=True)
