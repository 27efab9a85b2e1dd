"""The commands that audit PATHs (SPEC sections 1 and 3), one function each: ``scan``,
``producers``, ``timeline`` and ``report``. Their parameters are the option table's
(:data:`kafka_audit.api.options.OPTIONS`, :func:`kafka_audit.cli.options.command_signature`);
each builds a :class:`~kafka_audit.api.request.ScanRequest`, runs it through the API's one front
door (:func:`kafka_audit.api.run`) and writes its view in the format asked, by the report table
(:func:`kafka_audit.report.formats.writer`).
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from kafka_audit.cli.options import EXIT_FINDINGS, EXIT_OK, command_signature, fail

if TYPE_CHECKING:
    from kafka_audit.api import AuditResult, ScanRequest
    from kafka_audit.report.formats import Writer
    from kafka_audit.report.redact import Redactor

HELP = {
    "scan": "Audit segment files; print tables (default), JSON/NDJSON/CSV, or a CI format "
    "(SARIF, JUnit, GitHub annotations, GitLab Code Quality).",
    "producers": "One row per (topic, partition, producer id): epochs, offsets, times, sequences, "
    "transactions and findings.",
    "timeline": "The producers' events (transactions, epoch bumps, findings) in time order.",
    "report": "Write one self-contained HTML postmortem document: summary, findings, per-partition "
    "timeline charts and producers (takes scan's options).",
}


def scan(paths: list[str], **values: Any) -> None:
    """The findings of the audit (SPEC section 3), in a report format or a CI format."""
    _audit("scan", values["format"], paths, values, timeline=False)


def producers(paths: list[str], **values: Any) -> None:
    """One row per (topic, partition, producer id) (SPEC section 3)."""
    _audit("producers", values["format"], paths, values, timeline=False)


def timeline(paths: list[str], **values: Any) -> None:
    """The producers' events in time order (SPEC section 3): the replay collects them."""
    _audit("timeline", values["format"], paths, values, timeline=True)


def report(paths: list[str], **values: Any) -> None:
    """One HTML document (SPEC section 3) written to ``--output`` (default
    :data:`~kafka_audit.api.options.DEFAULT_REPORT`), with ``--redact``'s keyed hash of the
    record data it shows."""
    from kafka_audit.api.options import DEFAULT_REPORT
    from kafka_audit.report.redact import Redactor

    if values["redact_key"] is not None and not values["redact"]:
        raise fail("--redact-key needs --redact")
    redactor = Redactor(values["redact_key"]) if values["redact"] else None
    values["output"] = values["output"] or Path(DEFAULT_REPORT)
    _audit("report", "html", paths, values, timeline=True, redactor=redactor)


def _audit(view: str, format: str, paths: list[str], values: dict[str, Any], *, timeline: bool,
           redactor: Redactor | None = None) -> None:
    """The steps every command shares: the writer of ``view`` in ``format`` looked up, the
    output files checked, the audit run, the baseline written, the report written; exit 1 when
    a finding reaches ``--fail-on``."""
    from kafka_audit.cli.command_request import command_request
    from kafka_audit.cli.output_file import OutputSink
    from kafka_audit.report.formats import Rendering

    started = time.monotonic()
    write = _writer(view, format)
    _check_output(values["output"])
    _check_output(values["write_baseline"], "--write-baseline")
    request = command_request(paths, values, timeline=timeline, started_at=started)
    result = _run(request).audit
    _write_baseline(values["write_baseline"], result)
    fail_on = values["fail_on"]
    gate = any(f.fails_gate(fail_on) for f in result.findings)
    rendering = Rendering(
        request.keep, fail_on, EXIT_FINDINGS if gate else EXIT_OK, values["baseline"] is not None,
        tuple(str(p) for p in paths), redactor,
    )
    _report_step(write, result, rendering, OutputSink(values["output"]))
    if gate:
        raise typer.Exit(EXIT_FINDINGS)


def _writer(view: str, format: str) -> Writer:
    from kafka_audit.report.formats import UnknownFormat, writer

    try:
        return writer(view, format)
    except UnknownFormat as exc:
        raise fail(str(exc)) from None


def _run(request: ScanRequest) -> AuditResult:
    """:func:`kafka_audit.api.run`, its ``--output-parquet`` folder written beside its place and
    moved there when complete; a request it refuses, or Spark failing, one exit-2 line."""
    from kafka_audit.api import RequestError, run
    from kafka_audit.cli.command_request import parquet_folder
    from kafka_audit.engines.spark_errors import SparkFailure

    try:
        with parquet_folder(request.output_parquet) as folder:
            return run(replace(request, output_parquet=folder))
    except RequestError as exc:
        raise fail(str(exc)) from None
    except SparkFailure as failure:  # one line naming the root cause and the kept log
        raise fail(f"Spark failed: {failure}") from None


def _report_step(write: Writer, result: Any, rendering: Any, sink: Any) -> None:
    from kafka_audit.report.formats import ReportError

    try:
        write(result, rendering, sink)
    except ReportError as exc:
        raise fail(str(exc)) from None


def _write_baseline(path: Path | None, result: Any) -> None:
    """``--write-baseline``: the fingerprints of the findings this scan reports."""
    if path is None:
        return
    from kafka_audit.cli.output_file import write_text
    from kafka_audit.report.baseline import baseline_json

    write_text(path, baseline_json(result.findings), "--write-baseline")


def _check_output(output: Path | None, option: str = "--output") -> None:
    """Fail before the audit, not after it, when the report (or ``option``'s file) cannot be written."""
    if output is None:
        return
    folder = output.parent if str(output.parent) else Path(".")
    if output.is_dir():
        raise fail(f"{option} {output}: is a directory")
    if not folder.is_dir():
        raise fail(f"{option} {output}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (output.exists() and not os.access(output, os.W_OK)):
        raise fail(f"{option} {output}: permission denied")


COMMANDS = {"scan": scan, "producers": producers, "timeline": timeline, "report": report}


def register(app: typer.Typer, names: tuple[str, ...]) -> None:
    """These commands on ``app`` (``--help`` lists them in this order), each with its signature
    from the option table."""
    for name in names:
        command = COMMANDS[name]
        command.__signature__ = command_signature(name)  # type: ignore[attr-defined]
        app.command(name, help=HELP[name])(command)
