"""The options of the commands that audit PATHs (SPEC section 1), each declared once in
:data:`OPTIONS`: its name (``kafka_audit.scan``'s keyword and the command's parameter), its flag,
help, type and default, on the command line and in the library. The commands' Typer signatures
(:mod:`kafka_audit.cli.audit_commands`) and :func:`kafka_audit.scan`'s keywords
(:func:`library_signature`) are derived from it; ``tests/test_scan_request.py`` holds them to it.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from kafka_audit.engines.run import Engine
from kafka_audit.report.formats import formats
from kafka_audit.rules.catalogue import Severity
from kafka_audit.rules.replay.partition_replay import DEFAULT_PRODUCER_ID_EXPIRATION_MS, DEFAULT_TRANSACTION_TIMEOUT_MS
from kafka_audit.rules.validation.log_validator import DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_SEGMENT_BYTES

DEFAULT_MASTER = "local[*]"
DEFAULT_REPORT = "kafka-audit-report.html"
# The commands that audit PATHs; ``report`` writes a document rather than a format.
VIEWS = ("scan", "producers", "timeline")
COMMANDS = (*VIEWS, "report")
# An option only the library takes.
LIBRARY = ()


def _fail_on_levels() -> list[str]:
    """``--fail-on``: a severity of the catalogue, the least that makes the exit code 1, or never."""
    return [*(severity.value for severity in Severity), "never"]


@dataclass(frozen=True, slots=True)
class Option:
    """One option: ``cli`` and ``default`` are the command line's type and default (``flag``
    None: the library's alone), ``library`` and ``library_default`` ``kafka_audit.scan``'s (None:
    the command line's alone). ``minimum``, ``check`` (a message for a value refused) and
    ``choices`` (the values taken, asked at parse time) are checked as the command line parses."""

    name: str
    flag: str | None
    help: str
    cli: Any = None
    default: Any = None
    library: Any = None
    library_default: Any = None
    metavar: str | None = None
    minimum: int | None = None
    check: Callable[[Any], str | None] | None = None
    choices: Callable[[], list[str]] | None = None
    commands: tuple[str, ...] = COMMANDS


def _above_zero(value: float | None) -> str | None:
    """``--max-read-rate``: a rate above zero (checked as it is parsed, not by a range, which typer
    would print beside the metavar and so cut option names at 80 columns)."""
    return "must be above 0 (MB/s)" if value is not None and value <= 0 else None


def _scan_formats() -> list[str]:
    return formats("scan")


def _view_formats() -> list[str]:
    """The formats of the views that take ``--format``."""
    return list(dict.fromkeys(name for view in VIEWS for name in formats(view)))


def _format_help() -> str:
    names = _scan_formats()
    return f"Output format: {', '.join(names[:-1])} or {names[-1]}."


_TIME = "(batch timestamps; epoch ms or ISO-8601)."
_PATHS = str | os.PathLike[str]

# The command line's order is --help's; the library's keywords follow it.
OPTIONS: tuple[Option, ...] = (
    Option("format", "--format", _format_help(), str, "table", metavar="FORMAT", choices=_view_formats, commands=VIEWS),
    Option("output", "--output", "Write the report to FILE instead of stdout.", Path | None, commands=VIEWS),
    Option("output", "--output", f"Where to write the document (default {DEFAULT_REPORT}).", Path | None,
           commands=("report",)),
    Option("topics", "--topic", "Audit only this topic (repeatable).", list[str] | None, None,
           Iterable[str] | None, metavar="TOPIC"),
    Option("partitions", "--partition", "Audit only this partition number (repeatable).", list[int] | None, None,
           Iterable[int] | None, metavar="N"),
    Option("producer_ids", "--producer-id", "Report only findings, producers and events of this producer id "
           "(repeatable).", list[int] | None, metavar="ID"),
    Option("since", "--since", f"Report only what happened at or after T {_TIME}", str | None),
    Option("until", "--until", f"Report only what happened at or before T {_TIME}", str | None),
    Option("compacted_topics", "--compacted-topic", "Topic with cleanup.policy=compact (repeatable); "
           "__consumer_offsets and __transaction_state always are.", list[str] | None, None, Iterable[str], (),
           metavar="TOPIC"),
    Option("max_message_bytes", "--max-message-bytes", "Broker max.message.bytes.", int, DEFAULT_MAX_MESSAGE_BYTES,
           int, DEFAULT_MAX_MESSAGE_BYTES, metavar="N", minimum=1),
    Option("segment_bytes", "--segment-bytes", "Broker segment.bytes.", int, DEFAULT_SEGMENT_BYTES,
           int, DEFAULT_SEGMENT_BYTES, metavar="N", minimum=1),
    Option("timestamp_before_max_ms", "--timestamp-before-max-ms", "Allowed age of CREATE_TIME timestamps.",
           int | None, None, int | None, metavar="MS", minimum=0),
    Option("timestamp_after_max_ms", "--timestamp-after-max-ms", "Allowed future skew of CREATE_TIME timestamps.",
           int | None, None, int | None, metavar="MS", minimum=0),
    Option("reference_time", "--reference-time", "Broker 'now' for timestamp checks: epoch ms or ISO-8601. "
           "Default: each segment file's modification time (an object store's: when it stored the object).",
           str | None, None, int | datetime | None),
    Option("transaction_timeout_ms", "--transaction-timeout-ms", "Age after which an open transaction is hanging.",
           int, DEFAULT_TRANSACTION_TIMEOUT_MS, int, DEFAULT_TRANSACTION_TIMEOUT_MS, metavar="MS", minimum=0),
    Option("producer_id_expiration_ms", "--producer-id-expiration-ms", "Idle time (by batch timestamps) after "
           "which the broker forgets a producer (its producer id expiration setting).",
           int, DEFAULT_PRODUCER_ID_EXPIRATION_MS, int, DEFAULT_PRODUCER_ID_EXPIRATION_MS, metavar="MS", minimum=0),
    Option("broker_logs", "--broker-log", "Broker server.log file (plain, rotated or .gz; a folder: its server.log* "
           "files) whose produce errors are explained against the log (repeatable).", list[Path] | None, None,
           Iterable[_PATHS], (), metavar="FILE"),
    Option("baseline", "--baseline", "Findings whose fingerprint this baseline lists are known: shown, "
           "marked baseline, never failing the gate.", Path | None, None, _PATHS | None),
    Option("write_baseline", "--write-baseline", "Write the fingerprints of this scan's findings to FILE.",
           Path | None),
    Option("fail_on", "--fail-on", "Severity that makes the exit code 1: error, warning, info or never.",
           str, "error", metavar="SEVERITY", choices=_fail_on_levels),
    Option("engine", "--engine", "spark: the Spark job; local: the same audit in this process, no JVM "
           "(quick answers on small local inputs).", Engine, Engine.spark, str | None, metavar="ENGINE"),
    Option("master", "--master", "Spark master URL.", str, DEFAULT_MASTER, str | None),
    Option("conf", "--conf", "Spark setting KEY=VALUE (repeatable).", list[str] | None, None,
           dict[str, str] | None, metavar="KEY=VALUE"),
    Option("storage_options", "--storage-option", "Option KEY=VALUE of the URI's filesystem library (s3fs, gcsfs, "
           "adlfs, HDFS), e.g. endpoint_url=URL or anon=true (repeatable).", list[str] | None, None,
           dict[str, Any] | None, metavar="KEY=VALUE"),
    Option("rsm_key_file", "--rsm-key-file", "Private key (PEM) that unwraps the data keys of encrypted "
           "tiered-storage segments; never printed or logged.", Path | None, None, _PATHS | None),
    Option("max_read_rate", "--max-read-rate", "Read local files no faster than this many MB/s (per reading "
           "process), to spare a live broker's disk. Local files are always read at idle I/O priority, and the "
           "pages a read brought into the page cache are dropped after it. Default: no cap.", float | None,
           metavar="MB/S", check=_above_zero),
    Option("remote", "--remote", "Run on a Spark Connect server: sc://HOST:PORT.", str | None, None, str | None),
    Option("output_parquet", "--output-parquet", "Also write findings/, batches/ and producers/ Parquet datasets "
           "there.", str | None, None, str | None),
    Option("spark_secret_file", "--spark-secret-file", "File holding the shared secret of a Spark cluster: turns "
           "on Spark authentication, RPC encryption and encryption of spill files (else the _SPARK_AUTH_SECRET "
           "environment variable). Never printed or logged.", Path | None, None, _PATHS | None),
    Option("quiet", "--quiet", "No progress display.", bool, False),
    Option("redact", "--redact", "Replace record keys, values and header values by their length and a keyed "
           "hash (BLAKE2b), so the evidence can be shared without the data.", bool, False, commands=("report",)),
    Option("redact_key", "--redact-key", "Key of --redact's hash (equal payloads hash alike across runs with the "
           "same key); default: a random key per run.", str | None, commands=("report",)),
    Option("spark_warnings", None, "Leave a given session's log level as it is.", library=bool,
           library_default=False, commands=LIBRARY),
)


def command_options(command: str) -> list[Option]:
    """The options of ``command``, in ``--help``'s order."""
    return [option for option in OPTIONS if command in option.commands and option.flag is not None]


def library_options() -> list[Option]:
    """The keywords of ``kafka_audit.scan``, in the table's order."""
    return [option for option in OPTIONS if option.library is not None]


def library_signature(scan: Callable[..., Any]) -> inspect.Signature:
    """``scan``'s signature: ``paths``, ``spark``, then every library option as a keyword."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    return inspect.Signature(
        [
            *list(inspect.signature(scan).parameters.values())[:2],
            *(inspect.Parameter(o.name, keyword, annotation=o.library, default=o.library_default) for o in library_options()),
        ],
        return_annotation=inspect.signature(scan).return_annotation,
    )
