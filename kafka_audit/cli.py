"""``kafka-audit scan`` and ``kafka-audit dump`` (SPEC section 1).

Exit codes: 0 no finding at or above ``--fail-on``; 1 at least one; 2 a usage error, no
segment under the paths, or a path that does not exist or cannot be read (one line on stderr).
"""

from __future__ import annotations

import os
import re
import sys
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from kafka_audit.rules.log_validator import (
    ALWAYS_COMPACTED_TOPICS,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_SEGMENT_BYTES,
    ValidationConfig,
)

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Forensic auditor for Apache Kafka's on-disk logs.",
    context_settings={"help_option_names": ["-h", "--help"]},
)

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
# What a shell reports for a process ended by Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 130
# Epoch milliseconds: ASCII digits, at most a long's 19 (str.isdigit would take "²").
_EPOCH_MS = re.compile(r"-?[0-9]{1,19}")
# File names that are not UTF-8 reach reports as surrogate escapes; print them escaped.
_TEXT_ERRORS = "backslashreplace"


class OutputFormat(str, Enum):
    table = "table"
    json = "json"
    ndjson = "ndjson"
    csv = "csv"


class FailOn(str, Enum):
    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


class DumpFormat(str, Enum):
    text = "text"
    json = "json"


def _fail(message: str) -> typer.Exit:
    """One line on stderr and exit code 2."""
    print(f"kafka-audit: {message}", file=sys.stderr)
    return typer.Exit(EXIT_USAGE)


def parse_reference_time(value: str) -> int:
    """Epoch milliseconds, or an ISO-8601 time (UTC when it names no zone)."""
    text = value.strip()
    if _EPOCH_MS.fullmatch(text):
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise _fail(f"--reference-time {value!r} is neither epoch milliseconds nor an ISO-8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def parse_conf(pairs: list[str]) -> dict[str, str]:
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise _fail(f"--conf {pair!r} is not KEY=VALUE")
        conf[key.strip()] = value
    return conf


def parse_storage_options(pairs: list[str]) -> dict:
    """``--storage-option KEY=VALUE`` pairs; ``true``/``false`` and JSON values are typed."""
    from kafka_audit.formats.storage import parse_option_value

    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise _fail(f"--storage-option {pair!r} is not KEY=VALUE")
        options[key.strip()] = parse_option_value(value)
    return options


def _check_paths(paths: list[str] | list[Path]) -> None:
    """Exit 2 naming the first PATH that cannot be scanned: a local path that does not exist or
    cannot be read, a URI of an unsupported scheme, a missing library, an unreachable store."""
    from kafka_audit.formats import storage

    for given in paths:
        text = str(given)
        try:
            storage.check_path(text)
        except OSError as exc:
            raise _fail(f"{text}: {exc.strerror or exc}") from None
        if storage.is_remote(text):
            continue
        path = Path(storage.local_path(text))
        if not os.path.lexists(path):
            raise _fail(f"{path}: no such file or directory")
        if not os.path.exists(path):
            raise _fail(f"{path}: broken symbolic link")
        if not os.access(path, os.R_OK) or (path.is_dir() and not os.access(path, os.X_OK)):
            raise _fail(f"{path}: permission denied")


@app.command()
def scan(
    paths: Annotated[
        list[str],
        typer.Argument(
            metavar="PATH",
            help="Log dirs, partition folders, .log files, or trees holding them; local paths or "
            "file://, s3://, s3a://, gs://, abfs://, abfss://, hdfs:// URIs.",
        ),
    ],
    format: Annotated[OutputFormat, typer.Option("--format", help="Output format.")] = OutputFormat.table,
    output: Annotated[Optional[Path], typer.Option("--output", help="Write the report to FILE instead of stdout.")] = None,
    topic: Annotated[Optional[list[str]], typer.Option("--topic", help="Audit only this topic (repeatable).")] = None,
    partition: Annotated[
        Optional[list[int]], typer.Option("--partition", help="Audit only this partition number (repeatable).")
    ] = None,
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
    fail_on: Annotated[FailOn, typer.Option("--fail-on", help="Severity that makes the exit code 1.")] = FailOn.error,
    master: Annotated[str, typer.Option("--master", help="Spark master URL.")] = "local[*]",
    conf: Annotated[Optional[list[str]], typer.Option("--conf", help="Spark setting KEY=VALUE (repeatable).")] = None,
    storage_option: Annotated[
        Optional[list[str]],
        typer.Option(
            "--storage-option",
            help="Option KEY=VALUE of the URI's filesystem library (s3fs, gcsfs, adlfs, HDFS), e.g. "
            "endpoint_url=http://127.0.0.1:9000 or anon=true (repeatable).",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress display.")] = False,
) -> None:
    """Audit segment files; print tables (default) or JSON/NDJSON/CSV."""
    from kafka_audit import pipeline
    from kafka_audit.spark_session import spark_session
    from kafka_audit.audit import ScanOptions, with_inferred_compaction
    from kafka_audit.formats.log_dir import discover

    from kafka_audit.formats import storage

    storage_options = parse_storage_options(storage_option or [])
    storage.configure(storage_options)
    _check_paths(paths)
    _check_output(output)
    spark_conf = parse_conf(conf or [])
    reference = parse_reference_time(reference_time) if reference_time is not None else None
    discovery = discover(
        [str(p) for p in paths], topics=topic or None, partitions=partition or None, storage_options=storage_options
    )
    if not discovery.segment_count:
        for note in discovery.notes:
            print(f"kafka-audit: note: {note}", file=sys.stderr)
        raise _fail("no Kafka segment (.log file) found under " + ", ".join(str(p) for p in paths))
    timestamp_bounds = timestamp_before_max_ms is not None or timestamp_after_max_ms is not None
    if timestamp_bounds and reference is None and any(storage.is_remote(p) for p in paths):
        print(
            "kafka-audit: note: objects in a store keep no broker modification time: their timestamp "
            "checks take the time the store wrote each object (S3 LastModified...) as the broker's now; "
            "give --reference-time",
            file=sys.stderr,
        )
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
    )
    options = with_inferred_compaction(options, discovery)
    err = Console(stderr=True)
    try:
        with spark_session(master, spark_conf) as spark:
            if not quiet and err.is_terminal:
                result = _run_with_progress(spark, discovery, options, err)
            else:
                result = pipeline.run_scan(spark, discovery, options)
    except Exception as exc:  # Spark failed to start or the job failed: one line, not a JVM trace
        raise _fail(_spark_failure(exc)) from None
    _write_report(result, format, output)
    if fail_on is not FailOn.never and any(f.at_least(fail_on.value) for f in result.findings):
        raise typer.Exit(EXIT_FINDINGS)


def _check_output(output: Optional[Path]) -> None:
    """Fail before the audit, not after it, when the report cannot be written."""
    if output is None:
        return
    folder = output.parent if str(output.parent) else Path(".")
    if output.is_dir():
        raise _fail(f"--output {output}: is a directory")
    if not folder.is_dir():
        raise _fail(f"--output {output}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (output.exists() and not os.access(output, os.W_OK)):
        raise _fail(f"--output {output}: permission denied")


def _spark_failure(exc: Exception) -> str:
    """One line naming what failed, and where Spark's log is."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    log = next((note for note in getattr(exc, "__notes__", ()) if note.startswith("Spark's log")), None)
    text = f"Spark failed ({type(exc).__name__}: {first[:300]})"
    return f"{text}; {log}" if log else text


def _write_report(result, format: OutputFormat, output: Optional[Path]) -> None:
    from kafka_audit import report

    if format is OutputFormat.table:
        if output:
            with open(output, "w", encoding="utf-8", errors=_TEXT_ERRORS) as handle:
                report.render_table(result, Console(file=handle, width=160, force_terminal=False))
        else:
            report.render_table(result, Console())
        return
    render = {OutputFormat.json: report.to_json, OutputFormat.ndjson: report.to_ndjson, OutputFormat.csv: report.to_csv}
    text = render[format](result)
    if text and not text.endswith("\n"):
        text += "\n"
    if output:
        output.write_text(text, encoding="utf-8", errors=_TEXT_ERRORS)
    else:
        sys.stdout.write(text)


def _run_with_progress(spark, discovery, options, err: Console):
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

    from kafka_audit import pipeline

    with Progress(
        TextColumn("[bold blue]auditing"),
        BarColumn(),
        DownloadColumn(),
        TextColumn("{task.fields[segments]}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task("scan", total=None, segments="")

        def update(progress: pipeline.Progress) -> None:
            bar.update(
                task,
                total=progress.bytes_total,
                completed=progress.bytes_done(),
                segments=f"{progress.segments_done()}/{progress.segments_total} segment tasks",
            )

        return pipeline.run_scan(spark, discovery, options, on_progress=update)


@app.command()
def dump(
    files: Annotated[list[Path], typer.Argument(metavar="FILE", help="Segment (.log) or sidecar files to decode.")],
    format: Annotated[DumpFormat, typer.Option("--format", help="text (kafka-dump-log-like) or json lines.")] = DumpFormat.text,
    records: Annotated[bool, typer.Option("--records", help="Also decode every record (deep iteration).")] = False,
    print_data: Annotated[bool, typer.Option("--print-data", help="Also print keys and values (implies --records).")] = False,
) -> None:
    """Decode segments and sidecar files, like kafka-dump-log --deep-iteration."""
    from kafka_audit.dump import dump_file

    _check_paths(files)
    for path in files:
        if path.is_dir():
            raise _fail(f"{path}: is a directory; dump takes files")
        if not path.is_file():
            raise _fail(f"{path}: not a regular file")
    for path in files:
        for line in dump_file(str(path), as_json=format is DumpFormat.json, records=records or print_data, print_data=print_data):
            sys.stdout.write(line + "\n")


def main(argv: list[str] | None = None) -> None:
    """The console entry point. Typer's usage errors (unknown option, bad value, missing
    argument) become one line on stderr and exit code 2, like every other error about paths and
    options; a call without arguments prints the help."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors=_TEXT_ERRORS)
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
