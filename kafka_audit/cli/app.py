"""The ``kafka-audit`` commands: ``scan``, ``producers``, ``timeline`` and ``dump`` (SPEC section 1).

The options and exit codes they share are in :mod:`kafka_audit.cli.options`. A command that audits
PATHs declares its parameters with the option types there and hands them to :func:`audit_paths`,
which checks the paths, discovers the segments, runs the audit on the chosen engine with the
progress display, and returns the :class:`~kafka_audit.audit.plan.ScanResult` (wall time of the whole
command, ``engine`` in the summary)::

    @app.command()
    def producers(paths: PathsArgument, topic: TopicOption = None, partition: PartitionOption = None,
                  engine: EngineOption = Engine.spark, master: MasterOption = DEFAULT_MASTER,
                  conf: ConfOption = None, storage_option: StorageOption = None,
                  quiet: QuietOption = False) -> None:
        result = audit_paths(paths, ScanOptions(), topic=topic, partition=partition,
                             engine=engine, master=master, conf=conf, quiet=quiet,
                             storage_option=storage_option)

Start-up: ``kafka-audit --help`` imports typer and rich's console only; the audit's modules are
imported inside the commands, pyspark only by the Spark engine.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console

from kafka_audit.cli.options import (
    DEFAULT_MASTER,
    EXIT_FINDINGS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    TEXT_ERRORS,
    BrokerLogOption,
    ConfOption,
    DumpFormat,
    EngineOption,
    FailOn,
    MasterOption,
    OutputFormat,
    PartitionOption,
    PathsArgument,
    ProducerIdOption,
    QuietOption,
    SinceOption,
    SparkSecretOption,
    StorageOption,
    TopicOption,
    UntilOption,
    check_paths,
    fail,
    parse_conf,
    parse_reference_time,
    parse_storage_options,
    spark_secret,
)
from kafka_audit.engines.run import Engine
from kafka_audit.rules.log_validator import DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_SEGMENT_BYTES

if TYPE_CHECKING:
    from kafka_audit.audit.plan import ScanOptions, ScanResult

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Forensic auditor for Apache Kafka's on-disk logs.",
    context_settings={"help_option_names": ["-h", "--help"]},
)

# When the command started: the summary's wall time covers the whole command (reset by _started).
_command_started = time.monotonic()


def _print_version(value: bool) -> None:
    if value:
        from kafka_audit import __version__

        typer.echo(f"kafka-audit {__version__}")
        raise typer.Exit()


@app.callback()
def _started(
    version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", callback=_print_version, is_eager=True)
    ] = False,
) -> None:
    """Forensic auditor for Apache Kafka's on-disk logs."""
    global _command_started
    _command_started = time.monotonic()



def audit_paths(
    paths: list[str],
    options: "ScanOptions",
    *,
    topic: Optional[list[str]] = None,
    partition: Optional[list[int]] = None,
    engine: Engine = Engine.spark,
    master: str = DEFAULT_MASTER,
    conf: Optional[list[str]] = None,
    quiet: bool = False,
    storage_option: Optional[list[str]] = None,
    remote: Optional[str] = None,
    output_parquet: Optional[str] = None,
    spark_secret_file: Optional[Path] = None,
) -> "ScanResult":
    """The audit behind ``scan``, ``producers`` and ``timeline``: check ``paths``, discover their
    segments (exit 2 with one line when there is none), audit them on ``engine`` with the
    progress display on a terminal (unless ``quiet``), and return the result, whose summary has
    the whole command's wall time and the ``engine`` that ran."""
    from kafka_audit.audit.plan import reference_time_problem, set_wall_time
    from kafka_audit.engines.run import SparkFailure, run_audit
    from kafka_audit.io import storage
    from kafka_audit.log.log_dir import discover

    storage_options = parse_storage_options(storage_option or [])
    storage.configure(storage_options)
    check_paths(paths)
    spark_conf = parse_conf(conf or [])
    secret = spark_secret(engine, remote, spark_secret_file)
    discovery = discover(
        [str(p) for p in paths], topics=topic or None, partitions=partition or None, storage_options=storage_options
    )
    if not discovery.segment_count and not discovery.unreadable:
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
        raise fail(f"Spark failed: {failure}") from None
    set_wall_time(result.summary, time.monotonic() - _command_started)
    return result


def _progress_console() -> Optional[Console]:
    """A console for the progress display when stderr is a terminal, else None. It writes to a
    copy of file descriptor 2, which stays on the terminal while the JVM starts with fd 2 pointed
    at its log (:func:`kafka_audit.engines.spark_session.create_spark_session`)."""
    if not Console(stderr=True).is_terminal:
        return None
    terminal = os.fdopen(os.dup(2), "w", encoding="utf-8", errors=TEXT_ERRORS, closefd=True)
    return Console(file=terminal, force_terminal=True)


_VIEW_HELP = {
    "scan": "Audit segment files; print tables (default) or JSON/NDJSON/CSV.",
    "producers": "One row per (topic, partition, producer id): epochs, offsets, times, sequences, "
    "transactions and findings.",
    "timeline": "The producers' events (transactions, epoch bumps, findings) in time order.",
}


@app.command(help=_VIEW_HELP["scan"])
def scan(
    ctx: typer.Context,
    paths: PathsArgument,
    format: Annotated[OutputFormat, typer.Option("--format", help="Output format.")] = OutputFormat.table,
    output: Annotated[Optional[Path], typer.Option("--output", help="Write the report to FILE instead of stdout.")] = None,
    topic: TopicOption = None,
    partition: PartitionOption = None,
    producer_id: ProducerIdOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    compacted_topic: Annotated[
        Optional[list[str]],
        typer.Option("--compacted-topic", help="Topic with cleanup.policy=compact (repeatable); "
                     "__consumer_offsets and __transaction_state always are."),
    ] = None,
    max_message_bytes: Annotated[
        int, typer.Option("--max-message-bytes", min=1, help="Broker max.message.bytes.")
    ] = DEFAULT_MAX_MESSAGE_BYTES,
    segment_bytes: Annotated[
        int, typer.Option("--segment-bytes", min=1, help="Broker segment.bytes.")
    ] = DEFAULT_SEGMENT_BYTES,
    timestamp_before_max_ms: Annotated[
        Optional[int], typer.Option("--timestamp-before-max-ms", min=0, help="Allowed age of CREATE_TIME timestamps.")
    ] = None,
    timestamp_after_max_ms: Annotated[
        Optional[int], typer.Option("--timestamp-after-max-ms", min=0, help="Allowed future skew of CREATE_TIME timestamps.")
    ] = None,
    reference_time: Annotated[
        Optional[str],
        typer.Option("--reference-time", help="Broker 'now' for timestamp checks: epoch ms or ISO-8601. "
                     "Default: each segment file's modification time (an object store's: when it "
                     "stored the object)."),
    ] = None,
    transaction_timeout_ms: Annotated[
        int, typer.Option("--transaction-timeout-ms", min=0, help="Age after which an open transaction is hanging.")
    ] = 900_000,
    producer_id_expiration_ms: Annotated[
        int,
        typer.Option("--producer-id-expiration-ms", min=0,
                     help="Broker producer.id.expiration.ms: a producer idle longer (by batch timestamps) is forgotten."),
    ] = 86_400_000,
    broker_log: BrokerLogOption = None,
    fail_on: Annotated[FailOn, typer.Option("--fail-on", help="Severity that makes the exit code 1.")] = FailOn.error,
    engine: EngineOption = Engine.spark,
    master: MasterOption = DEFAULT_MASTER,
    conf: ConfOption = None,
    storage_option: StorageOption = None,
    remote: Annotated[
        Optional[str], typer.Option("--remote", help="Run on a Spark Connect server: sc://HOST:PORT.")
    ] = None,
    output_parquet: Annotated[
        Optional[str],
        typer.Option("--output-parquet", help="Also write findings/, batches/ and producers/ Parquet datasets there."),
    ] = None,
    spark_secret_file: SparkSecretOption = None,
    quiet: QuietOption = False,
) -> None:
    """The audit behind ``scan``, ``producers`` and ``timeline`` (one set of options): the command
    name picks the report."""
    from kafka_audit.audit.plan import ScanOptions
    from kafka_audit.report.views import finish_views
    from kafka_audit.rules.log_validator import ALWAYS_COMPACTED_TOPICS, ValidationConfig

    _check_output(output)
    broker_lines = read_broker_log(broker_log)
    reference = parse_reference_time(reference_time) if reference_time is not None else None
    keep = _report_filter(producer_id, since, until)
    options = ScanOptions(
        validation=ValidationConfig(
            compacted_topics=frozenset(compacted_topic or ()) | ALWAYS_COMPACTED_TOPICS,
            max_message_bytes=max_message_bytes,
            segment_bytes=segment_bytes,
            timestamp_before_max_ms=timestamp_before_max_ms,
            timestamp_after_max_ms=timestamp_after_max_ms,
        ),
        reference_time=reference,
        transaction_timeout_ms=transaction_timeout_ms,
        producer_id_expiration_ms=producer_id_expiration_ms,
        timeline=ctx.info_name == "timeline",
        broker_log=broker_lines,
    )
    result = audit_paths(
        paths, options, topic=topic, partition=partition, engine=engine, master=master, conf=conf, quiet=quiet,
        remote=remote, output_parquet=_parquet_target(output_parquet), storage_option=storage_option,
        spark_secret_file=spark_secret_file,
    )
    finish_views(result, keep)
    if ctx.info_name in ("producers", "timeline"):
        _write_view(result, ctx.info_name, keep, format, output)
    else:
        _write_report(result, format, output)
    if fail_on is not FailOn.never and any(f.at_least(fail_on.value) for f in result.findings):
        raise typer.Exit(EXIT_FINDINGS)


app.command("producers", help=_VIEW_HELP["producers"])(scan)
app.command("timeline", help=_VIEW_HELP["timeline"])(scan)


def _report_filter(producer_ids: Optional[list[int]], since: Optional[str], until: Optional[str]):
    from kafka_audit.report.views import ReportFilter

    start = parse_reference_time(since, "--since") if since is not None else None
    end = parse_reference_time(until, "--until") if until is not None else None
    if start is not None and end is not None and start > end:
        raise fail(f"--since {since!r} is after --until {until!r}")
    return ReportFilter(frozenset(producer_ids) if producer_ids else None, start, end)


def _write_view(result, view: str, keep, format: "OutputFormat", output: Optional[Path]) -> None:
    """The ``producers`` or ``timeline`` report (SPEC section 3)."""
    from kafka_audit.report import view_reports
    from kafka_audit.report.views import event_rows, timeline

    if view == "producers":
        key, rows, fields, render = "producers", result.producers, view_reports.PRODUCER_FIELDS, view_reports.render_producers
    else:
        names = {f.producer_id: f.transactional_id for f in result.findings if f.transactional_id}
        names.update({row["producer_id"]: row["transactional_id"] for row in result.producers if row["transactional_id"]})
        key, rows, fields = "events", event_rows(timeline(result, keep), names), view_reports.EVENT_FIELDS
        render = view_reports.render_timeline
    if format is OutputFormat.table:
        console = Console(file=open(output, "w", encoding="utf-8", errors=TEXT_ERRORS), width=160) if output else Console()
        try:
            render(result.summary, rows, console)
        finally:
            if output:
                console.file.close()
        return
    if format is OutputFormat.json:
        text = view_reports.to_json(result.summary, result.notes, key, rows)
    elif format is OutputFormat.ndjson:
        text = view_reports.to_ndjson(rows)
    else:
        text = view_reports.to_csv(rows, fields)
    _emit(text, output)
def read_broker_log(paths: Optional[list[Path]]):
    """The ``--broker-log`` files read and classified (None without any); a file that cannot be
    read is a usage error naming it."""
    from kafka_audit.io.broker_log import BrokerLogError, read_broker_logs

    if not paths:
        return None
    try:
        return read_broker_logs([str(p) for p in paths])
    except BrokerLogError as exc:
        raise fail(str(exc)) from None


def _parquet_target(target: Optional[str]) -> Optional[str]:
    """``--output-parquet``: a URI as given, a local folder made absolute (executors write it)."""
    if target is None or "://" in target:
        return target
    path = Path(target).absolute()
    if path.exists() and not path.is_dir():
        raise fail(f"--output-parquet {target}: not a directory")
    return str(path)


def _nothing_found(discovery, paths: list[Path], topics: list[str], partitions: list[int]) -> str:
    """The exit-2 message when no segment is left to audit: which filter matched nothing, and
    what there was, or that the paths hold no segment at all."""
    where = ", ".join(str(p) for p in paths)
    if discovery.filtered_segments:
        filters = " ".join([*(f"--topic {t}" for t in topics), *(f"--partition {n}" for n in partitions)])
        seen = sorted(discovery.filtered_topics)
        listed = ", ".join(seen[:10]) + (f" and {len(seen) - 10} more" if len(seen) > 10 else "")
        return (
            f"{filters} matched no segment under {where} ({discovery.filtered_segments} segments found, "
            f"in topics: {listed})"
        )
    skipped = f" ({len(discovery.skipped)} other files skipped)" if discovery.skipped else ""
    return f"no Kafka segment (.log file) found under {where}{skipped}"


def _check_output(output: Optional[Path]) -> None:
    """Fail before the audit, not after it, when the report cannot be written."""
    if output is None:
        return
    folder = output.parent if str(output.parent) else Path(".")
    if output.is_dir():
        raise fail(f"--output {output}: is a directory")
    if not folder.is_dir():
        raise fail(f"--output {output}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (output.exists() and not os.access(output, os.W_OK)):
        raise fail(f"--output {output}: permission denied")


def _write_report(result, format: OutputFormat, output: Optional[Path]) -> None:
    from kafka_audit.report import scan_report as report

    if format is OutputFormat.table:
        if output:
            with open(output, "w", encoding="utf-8", errors=TEXT_ERRORS) as handle:
                report.render_table(result, Console(file=handle, width=160, force_terminal=False))
        else:
            report.render_table(result, Console())
        return
    render = {OutputFormat.json: report.to_json, OutputFormat.ndjson: report.to_ndjson, OutputFormat.csv: report.to_csv}
    _emit(render[format](result), output)


def _emit(text: str, output: Optional[Path]) -> None:
    if text and not text.endswith("\n"):
        text += "\n"
    if output:
        output.write_text(text, encoding="utf-8", errors=TEXT_ERRORS)
    else:
        sys.stdout.write(text)


@app.command()
def dump(
    files: Annotated[list[Path], typer.Argument(metavar="FILE", help="Segment (.log) or sidecar files to decode.")],
    format: Annotated[DumpFormat, typer.Option("--format", help="text (kafka-dump-log-like) or json lines.")] = DumpFormat.text,
    records: Annotated[bool, typer.Option("--records", help="Also decode every record (deep iteration).")] = False,
    print_data: Annotated[bool, typer.Option("--print-data", help="Also print keys and values (implies --records).")] = False,
) -> None:
    """Decode segments and sidecar files, like kafka-dump-log --deep-iteration."""
    from kafka_audit.report.dump import dump_file

    check_paths(files)
    for path in files:
        if path.is_dir():
            raise fail(f"{path}: is a directory; dump takes files")
        if not path.is_file():
            raise fail(f"{path}: not a regular file")
    write = sys.stdout.write
    for path in files:
        for chunk in dump_file(str(path), as_json=format is DumpFormat.json, records=records or print_data, print_data=print_data):
            write(chunk)


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM ends the command as Ctrl-C does (exit 130): every ``finally`` runs, so the Spark
    session is stopped and its scratch directory removed."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    """The console entry point. Typer's usage errors (unknown option, bad value, missing
    argument) become one line on stderr and exit code 2, like every other error about paths and
    options; a call without arguments prints the help."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors=TEXT_ERRORS)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)
    try:
        code = app(args=argv, standalone_mode=False)
    except typer.Exit as exc:
        code = exc.exit_code
    except (typer.Abort, KeyboardInterrupt):
        code = EXIT_INTERRUPTED
    except typer.TyperException as exc:  # Typer's UsageError and friends
        context = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and context is not None:
            print(context.get_help())
            code = EXIT_OK
        else:
            command = context.command_path if context is not None else "kafka-audit"
            print(f"{command}: {exc.format_message()} (see {command} --help)", file=sys.stderr)
            code = getattr(exc, "exit_code", EXIT_USAGE)
    if code == EXIT_INTERRUPTED:  # Typer turns Ctrl-C into this code without a word
        print("kafka-audit: interrupted", file=sys.stderr)
    sys.exit(code if isinstance(code, int) else EXIT_OK)
