"""``scan``, ``producers`` and ``timeline`` (SPEC sections 1 and 3): one set of options, one audit
(:func:`kafka_audit.cli.audit_paths.audit_paths`); the command name picks the report.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from kafka_audit.cli.audit_paths import audit_paths, parquet_target, read_broker_log
from kafka_audit.cli.options import (
    CI_FORMATS,
    DEFAULT_MASTER,
    EXIT_FINDINGS,
    EXIT_OK,
    BaselineOption,
    BrokerLogOption,
    ConfOption,
    EngineOption,
    FailOn,
    MasterOption,
    MaxReadRateOption,
    OutputFormat,
    PartitionOption,
    PathsArgument,
    ProducerIdOption,
    QuietOption,
    RsmKeyFileOption,
    SinceOption,
    SparkSecretOption,
    StorageOption,
    TopicOption,
    UntilOption,
    WriteBaselineOption,
    fail,
    parse_reference_time,
)
from kafka_audit.cli.output_file import atomic_path, output_text, write_text
from kafka_audit.engines.run import Engine
from kafka_audit.rules.replay.partition_replay import DEFAULT_PRODUCER_ID_EXPIRATION_MS, DEFAULT_TRANSACTION_TIMEOUT_MS
from kafka_audit.rules.validation.log_validator import DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_SEGMENT_BYTES

VIEW_HELP = {
    "scan": "Audit segment files; print tables (default), JSON/NDJSON/CSV, or a CI format "
    "(SARIF, JUnit, GitHub annotations, GitLab Code Quality).",
    "producers": "One row per (topic, partition, producer id): epochs, offsets, times, sequences, "
    "transactions and findings.",
    "timeline": "The producers' events (transactions, epoch bumps, findings) in time order.",
}


# Over 60 lines for its signature: one Typer parameter per option of SPEC section 1; the body is short.
def scan(
    ctx: typer.Context,
    paths: PathsArgument,
    format: Annotated[OutputFormat, typer.Option("--format", metavar="FORMAT", help="Output format: table, json, ndjson, csv, sarif, junit, github or gitlab.")] = OutputFormat.table,
    output: Annotated[Path | None, typer.Option("--output", help="Write the report to FILE instead of stdout.")] = None,
    topic: TopicOption = None,
    partition: PartitionOption = None,
    producer_id: ProducerIdOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    compacted_topic: Annotated[
        list[str] | None,
        typer.Option("--compacted-topic", metavar="TOPIC", help="Topic with cleanup.policy=compact (repeatable); "
                     "__consumer_offsets and __transaction_state always are."),
    ] = None,
    max_message_bytes: Annotated[
        int, typer.Option("--max-message-bytes", metavar="N", min=1, help="Broker max.message.bytes.")
    ] = DEFAULT_MAX_MESSAGE_BYTES,
    segment_bytes: Annotated[
        int, typer.Option("--segment-bytes", metavar="N", min=1, help="Broker segment.bytes.")
    ] = DEFAULT_SEGMENT_BYTES,
    timestamp_before_max_ms: Annotated[
        int | None, typer.Option("--timestamp-before-max-ms", metavar="MS", min=0, help="Allowed age of CREATE_TIME timestamps.")
    ] = None,
    timestamp_after_max_ms: Annotated[
        int | None, typer.Option("--timestamp-after-max-ms", metavar="MS", min=0, help="Allowed future skew of CREATE_TIME timestamps.")
    ] = None,
    reference_time: Annotated[
        str | None,
        typer.Option("--reference-time", help="Broker 'now' for timestamp checks: epoch ms or ISO-8601. "
                     "Default: each segment file's modification time (an object store's: when it "
                     "stored the object)."),
    ] = None,
    transaction_timeout_ms: Annotated[
        int, typer.Option("--transaction-timeout-ms", metavar="MS", min=0, help="Age after which an open transaction is hanging.")
    ] = DEFAULT_TRANSACTION_TIMEOUT_MS,
    producer_id_expiration_ms: Annotated[
        int,
        typer.Option("--producer-id-expiration-ms", metavar="MS", min=0,
                     help="Idle time (by batch timestamps) after which the broker forgets a producer (its producer id expiration setting)."),
    ] = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    broker_log: BrokerLogOption = None,
    baseline: BaselineOption = None,
    write_baseline: WriteBaselineOption = None,
    fail_on: Annotated[FailOn, typer.Option("--fail-on", metavar="SEVERITY", help="Severity that makes the exit code 1: error, warning, info or never.")] = FailOn.error,
    engine: EngineOption = Engine.spark,
    master: MasterOption = DEFAULT_MASTER,
    conf: ConfOption = None,
    storage_option: StorageOption = None,
    rsm_key_file: RsmKeyFileOption = None,
    max_read_rate: MaxReadRateOption = None,
    remote: Annotated[
        str | None, typer.Option("--remote", help="Run on a Spark Connect server: sc://HOST:PORT.")
    ] = None,
    output_parquet: Annotated[
        str | None,
        typer.Option("--output-parquet", help="Also write findings/, batches/ and producers/ Parquet datasets there."),
    ] = None,
    spark_secret_file: SparkSecretOption = None,
    quiet: QuietOption = False,
) -> None:
    """The audit behind ``scan``, ``producers`` and ``timeline`` (one set of options): the command
    name picks the report."""
    from kafka_audit.audit.scan_options import scan_options
    from kafka_audit.cli import ci_output
    from kafka_audit.report.views import finish_views

    if format in CI_FORMATS and ctx.info_name != "scan":
        raise fail(f"--format {format.value} is a format of scan; {ctx.info_name} writes table, json, ndjson or csv")
    _check_output(output)
    _check_output(write_baseline, "--write-baseline")
    known = ci_output.read_baseline(baseline)
    broker_lines = read_broker_log(broker_log)
    reference = parse_reference_time(reference_time) if reference_time is not None else None
    keep = _report_filter(producer_id, since, until)
    options = scan_options(
        compacted_topics=compacted_topic or (),
        max_message_bytes=max_message_bytes,
        segment_bytes=segment_bytes,
        timestamp_before_max_ms=timestamp_before_max_ms,
        timestamp_after_max_ms=timestamp_after_max_ms,
        reference_time=reference,
        transaction_timeout_ms=transaction_timeout_ms,
        producer_id_expiration_ms=producer_id_expiration_ms,
        timeline=ctx.info_name in ("timeline", "report"),
        broker_log=broker_lines,
        baseline=known,
    )
    parquet = parquet_target(output_parquet)
    with _parquet_folder(parquet) as parquet_folder:
        result = audit_paths(
            paths, options, topic=topic, partition=partition, engine=engine, master=master, conf=conf, quiet=quiet,
            remote=remote, output_parquet=parquet_folder, storage_option=storage_option,
            rsm_key_file=rsm_key_file, max_read_rate=max_read_rate,
            spark_secret_file=spark_secret_file,
        )
    finish_views(result, keep)
    ci_output.write_baseline(write_baseline, result)
    gate = any(f.fails_gate(fail_on.value) for f in result.findings)
    if ctx.info_name == "report":
        write_html(ctx, result, keep, output, paths)
    elif ctx.info_name in ("producers", "timeline"):
        _write_view(result, ctx.info_name, keep, format, output)
    elif format in CI_FORMATS:
        _emit(ci_output.ci_report(result, format, fail_on.value, baseline is not None), output)
    else:
        _write_report(result, format, output, EXIT_FINDINGS if gate else EXIT_OK)
    if gate:
        raise typer.Exit(EXIT_FINDINGS)




@contextmanager
def _parquet_folder(target: str | None) -> Iterator[str | None]:
    """Where the audit writes ``--output-parquet``: a local folder's datasets are written
    beside it and moved into it when complete (:func:`kafka_audit.cli.output_file.atomic_path`)."""
    if target is None or "://" in target:
        yield target
        return
    from kafka_audit.cli.output_file import atomic_path

    with atomic_path(Path(target), "--output-parquet", directory=True) as folder:
        yield str(folder)


def _report_filter(producer_ids: list[int] | None, since: str | None, until: str | None):
    from kafka_audit.report.views import ReportFilter

    start = parse_reference_time(since, "--since") if since is not None else None
    end = parse_reference_time(until, "--until") if until is not None else None
    if start is not None and end is not None and start > end:
        raise fail(f"--since {since!r} is after --until {until!r}")
    return ReportFilter(frozenset(producer_ids) if producer_ids else None, start, end)


def _write_view(result, view: str, keep, format: OutputFormat, output: Path | None) -> None:
    """The ``producers`` or ``timeline`` report (SPEC section 3)."""
    from kafka_audit.report import view_reports
    from kafka_audit.report.views import event_rows, timeline

    fields: tuple[str, ...]
    if view == "producers":
        key, rows, fields, render = "producers", result.producers, view_reports.PRODUCER_FIELDS, view_reports.render_producers
    else:
        names = {f.producer_id: f.transactional_id for f in result.findings if f.transactional_id}
        names.update({row["producer_id"]: row["transactional_id"] for row in result.producers if row["transactional_id"]})
        key, rows, fields = "events", event_rows(timeline(result, keep), names), view_reports.EVENT_FIELDS
        render = view_reports.render_timeline
    if format is OutputFormat.table:
        if output:
            with output_text(output) as handle:
                render(result.summary, rows, Console(file=handle, width=160))
        else:
            render(result.summary, rows, Console())
        return
    if format is OutputFormat.json:
        text = view_reports.to_json(result.summary, result.notes, key, rows)
    elif format is OutputFormat.ndjson:
        text = view_reports.to_ndjson(rows)
    else:
        text = view_reports.to_csv(rows, fields)
    _emit(text, output)

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


def _write_report(result, format: OutputFormat, output: Path | None, exit_code: int) -> None:
    from kafka_audit.report import scan_report as report

    if format is OutputFormat.table:
        if output:
            with output_text(output) as handle:
                report.render_table(result, Console(file=handle, width=160, force_terminal=False), exit_code=exit_code)
        else:
            report.render_table(result, Console(), exit_code=exit_code)
        return
    render = {OutputFormat.json: report.to_json, OutputFormat.ndjson: report.to_ndjson, OutputFormat.csv: report.to_csv}
    _emit(render[format](result), output)


def _emit(text: str, output: Path | None) -> None:
    if text and not text.endswith("\n"):
        text += "\n"
    if output:
        write_text(output, text)
    else:
        sys.stdout.write(text)




# ``report``'s --redact and --redact-key, handed to scan's audit in the click context's meta.
REDACTION = "kafka_audit.report.redaction"


def write_html(ctx: typer.Context, result, keep, output: Path | None, paths: list[str]) -> None:
    """The ``report`` command's document (:mod:`kafka_audit.report.html`) written to ``output``,
    with the culprit records read from the segments; where it went on stderr."""
    from kafka_audit.report.html import write_report
    from kafka_audit.report.html.evidence import segment_files
    from kafka_audit.report.redact import Redactor

    redact, redact_key = ctx.meta[REDACTION]
    assert output is not None  # report gives it its default
    with atomic_path(output, "--output") as target:
        stats = write_report(
            target, result, keep,
            segment_paths=segment_files([str(p) for p in paths], {f.segment for f in result.findings if f.segment}),
            redact=Redactor(redact_key) if redact else None,
        )
    from kafka_audit.report.safe_text import escape_text

    typer.echo(f"kafka-audit: wrote {escape_text(str(output))} ({stats.bytes:,} bytes, {stats.charts} charts)", err=True)
