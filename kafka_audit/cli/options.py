"""The parts every ``kafka-audit`` command shares (SPEC section 1): exit codes, the output
formats, the one-line usage error, the parsers of option values, the PATH check, and the options
of every command that audits PATHs (``scan``, ``producers`` and ``timeline`` take the same PATH,
filter and engine options) as annotated parameter types: :data:`PathsArgument`,
:data:`TopicOption`, :data:`PartitionOption`, :data:`EngineOption`, :data:`MasterOption`,
:data:`ConfOption`, :data:`QuietOption`, :data:`StorageOption`.

Exit codes: 0 no finding at or above ``--fail-on``; 1 at least one; 2 a usage error, no segment
under the paths, or a path that does not exist or cannot be read (one line on stderr). A closed
output pipe ends the command quietly with exit 0 (:class:`PipeGuard`).
"""

from __future__ import annotations

import os
import re
import sys
from contextlib import suppress
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kafka_audit.engines.run import Engine

# SPEC section 1's exit codes are kafka_audit.errors'; the commands import them from here.
from kafka_audit.errors import EXIT_FINDINGS, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, KafkaAuditError  # noqa: F401

if TYPE_CHECKING:
    from kafka_audit.io.storage_context import StorageContext

# Epoch milliseconds: ASCII digits, at most a long's 19 (str.isdigit would take "²").
_EPOCH_MS = re.compile(r"-?[0-9]{1,19}")
# File names that are not UTF-8 reach reports as surrogate escapes; print them escaped.
TEXT_ERRORS = "backslashreplace"


class OutputFormat(str, Enum):
    table = "table"
    json = "json"
    ndjson = "ndjson"
    csv = "csv"
    sarif = "sarif"
    junit = "junit"
    github = "github"
    gitlab = "gitlab"


# The formats only ``scan`` writes (SPEC section 3): CI tools read findings, not producer rows.
CI_FORMATS = frozenset({OutputFormat.sarif, OutputFormat.junit, OutputFormat.github, OutputFormat.gitlab})


class FailOn(str, Enum):
    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


class DumpFormat(str, Enum):
    text = "text"
    json = "json"


class ReaderGone(KafkaAuditError):
    """The reader of stdout closed it (EPIPE): the report was cut short by its reader, and the
    command ends quietly with exit 0, as Unix tools do (SPEC section 1)."""

    exit_code = EXIT_OK


class OutputFailed(KafkaAuditError):
    """Writing stdout failed for another reason than a reader gone (a full disk, an I/O error):
    one exit-2 line (SPEC section 1)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))


class PipeGuard:
    """stdout for the commands: a write or flush on a pipe whose reader has gone raises
    :class:`ReaderGone`, which no command or Click handler catches (Click would turn the
    BrokenPipeError into exit code 1, the code for findings), so :func:`exit_code_of` ends the
    command with exit 0 (SPEC section 1). Everything else is the wrapped stream's."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError as exc:
            raise ReaderGone from exc
        except OSError as exc:
            raise OutputFailed(exc) from exc

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError as exc:
            raise ReaderGone from exc
        except OSError as exc:
            raise OutputFailed(exc) from exc

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def exit_code_of(error: KafkaAuditError) -> int:
    """The exit code a command ends with when ``error`` reaches the command line (the one place
    where an error of the package becomes its exit code, ``KafkaAuditError.exit_code``), after
    the one line on stderr that names its cause. A closed or failing stdout ends the command
    quietly: stdout is pointed at /dev/null, so that the interpreter's last flush of what is still
    buffered meets no closed pipe or full disk (a reader gone says nothing)."""
    if isinstance(error, (ReaderGone, OutputFailed)):
        devnull = os.open(os.devnull, os.O_WRONLY)
        with suppress(OSError, ValueError):  # stdout closed: nothing is left to flush
            os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    if isinstance(error, OutputFailed):
        fail(f"cannot write the output to standard output: {error}")
    elif not isinstance(error, ReaderGone):
        fail(str(error))
    return error.exit_code


def fail(message: str) -> typer.Exit:
    """One line on stderr and exit code 2. Data in it (file names, values) is shown escaped,
    and URI credentials are redacted (SPEC section 1); a message that may hold a
    ``--storage-option`` value comes redacted by the request's storage (``redact_secrets``)."""
    from kafka_audit.io.storage import redact_uri_credentials
    from kafka_audit.report.safe_text import escape_text

    print(f"kafka-audit: {escape_text(redact_uri_credentials(message))}", file=sys.stderr)
    return typer.Exit(EXIT_USAGE)


def parse_reference_time(value: str, option: str = "--reference-time") -> int:
    """Epoch milliseconds, or an ISO-8601 time (UTC when it names no zone)."""
    text = value.strip()
    if _EPOCH_MS.fullmatch(text):
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise fail(f"{option} {value!r} is neither epoch milliseconds nor an ISO-8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def parse_conf(pairs: list[str]) -> dict[str, str]:
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise fail(f"--conf {pair!r} is not KEY=VALUE")
        conf[key.strip()] = value
    return conf


def with_rsm_key(storage_options: dict, key_file: Path | None) -> dict:
    """``storage_options`` with the ``--rsm-key-file`` key added (it travels with the tasks as they
    do); exit 2 with one line naming the file, never its content, when it cannot be used."""
    if key_file is None:
        return storage_options
    from kafka_audit.io.rsm_objects import EncryptedSegment, RsmKey
    from kafka_audit.io.storage import RSM_KEY_OPTION

    try:
        key = RsmKey(key_file.read_bytes())
    except OSError as exc:
        raise fail(f"--rsm-key-file {key_file}: cannot read it ({exc.strerror or type(exc).__name__})") from None
    try:
        key.check()
    except EncryptedSegment:
        pass  # no cryptography package: each encrypted segment says so
    except ValueError as exc:
        raise fail(f"--rsm-key-file {key_file}: {exc}") from None
    return {**storage_options, RSM_KEY_OPTION: key}


def parse_storage_options(pairs: list[str]) -> dict:
    """``--storage-option KEY=VALUE`` pairs; ``true``/``false`` and JSON values are typed."""
    from kafka_audit.io.storage import parse_option_value

    options = {}
    for number, pair in enumerate(pairs, 1):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            # Not echoed: it may be a secret (``secret:X``, a typo for "=").
            raise fail(f"--storage-option number {number} is not KEY=VALUE (its text is not shown: it may hold a secret)")
        options[key.strip()] = parse_option_value(value)
    return options


def spark_secret(engine: Engine, remote: str | None, secret_file: Path | None) -> str | None:
    """The shared secret of a classic Spark session (``--spark-secret-file``, else Spark's
    ``_SPARK_AUTH_SECRET``), None on the local engine; exit 2 naming the file (never its content)
    when it cannot be used, or when it is given for a Spark Connect server, whose security is
    the server's own settings."""
    from kafka_audit.engines.spark_security import SecretError, given_secret

    if engine is Engine.local:
        return None
    if remote is not None:
        if secret_file is not None:
            raise fail("--spark-secret-file secures a classic session (--master); a Spark Connect server "
                       "(--remote) is secured by its own settings")
        return None
    try:
        return given_secret(str(secret_file) if secret_file is not None else None)
    except SecretError as exc:
        raise fail(str(exc)) from None


def check_paths(paths: list[str] | list[Path], storage: StorageContext) -> None:
    """Exit 2 naming the first PATH that cannot be scanned (asked under the command's
    ``storage``): a local path that does not exist or cannot be read, a URI of an unsupported
    scheme, a missing library, an unreachable store."""
    from kafka_audit.io.storage import is_remote, local_path

    for given in paths:
        text = str(given)
        try:
            storage.check_path(text)
        except OSError as exc:
            raise fail(f"{text}: {exc.strerror or exc}") from None
        if is_remote(text):
            continue
        path = Path(local_path(text))
        if not os.path.lexists(path):
            raise fail(f"{path}: no such file or directory")
        if not os.path.exists(path):
            raise fail(f"{path}: broken symbolic link")
        if not os.access(path, os.R_OK) or (path.is_dir() and not os.access(path, os.X_OK)):
            raise fail(f"{path}: permission denied")


# -- the options of every command that audits PATHs (scan, producers, timeline) ----------------

DEFAULT_MASTER = "local[*]"
PathsArgument = Annotated[
    list[str],
    typer.Argument(
        metavar="PATH",
        help="Log dirs, partition folders, .log files, or trees holding them; local paths or "
        "file://, s3://, s3a://, gs://, abfs://, abfss://, hdfs:// URIs.",
    ),
]
TopicOption = Annotated[list[str] | None, typer.Option("--topic", metavar="TOPIC", help="Audit only this topic (repeatable).")]
PartitionOption = Annotated[
    list[int] | None, typer.Option("--partition", metavar="N", help="Audit only this partition number (repeatable).")
]
EngineOption = Annotated[
    Engine,
    typer.Option(
        "--engine",
        metavar="ENGINE",
        help="spark: the Spark job; local: the same audit in this process, no JVM "
        "(quick answers on small local inputs).",
    ),
]
MasterOption = Annotated[str, typer.Option("--master", help="Spark master URL.")]
ConfOption = Annotated[list[str] | None, typer.Option("--conf", metavar="KEY=VALUE", help="Spark setting KEY=VALUE (repeatable).")]
QuietOption = Annotated[bool, typer.Option("--quiet", help="No progress display.")]
ProducerIdOption = Annotated[
    list[int] | None,
    typer.Option("--producer-id", metavar="ID", help="Report only findings, producers and events of this producer id (repeatable)."),
]
SinceOption = Annotated[
    str | None, typer.Option("--since", help="Report only what happened at or after T (batch timestamps; epoch ms or ISO-8601).")
]
UntilOption = Annotated[
    str | None, typer.Option("--until", help="Report only what happened at or before T (batch timestamps; epoch ms or ISO-8601).")
]
StorageOption = Annotated[
    list[str] | None,
    typer.Option(
        "--storage-option",
        metavar="KEY=VALUE",
        help="Option KEY=VALUE of the URI's filesystem library (s3fs, gcsfs, adlfs, HDFS), e.g. "
        "endpoint_url=URL or anon=true (repeatable).",
    ),
]
RsmKeyFileOption = Annotated[
    Path | None,
    typer.Option("--rsm-key-file", help="Private key (PEM) that unwraps the data keys of encrypted tiered-storage "
                 "segments; never printed or logged."),
]
def _positive_rate(value: float | None) -> float | None:
    """``--max-read-rate``: a rate above zero (checked here, not by ``min=``, whose range typer
    would print beside the metavar and so cut option names at 80 columns)."""
    if value is not None and value <= 0:
        raise typer.BadParameter("must be above 0 (MB/s)")
    return value


MaxReadRateOption = Annotated[
    float | None,
    typer.Option(
        "--max-read-rate",
        callback=_positive_rate,
        metavar="MB/S",
        help="Read local files no faster than this many MB/s (per reading process), to spare a live "
        "broker's disk. Local files are always read at idle I/O priority, and the pages a read brought "
        "into the page cache are dropped after it. Default: no cap.",
    ),
]
BaselineOption = Annotated[
    Path | None,
    typer.Option("--baseline", help="Findings whose fingerprint this baseline lists are known: shown, "
                 "marked baseline, never failing the gate."),
]
WriteBaselineOption = Annotated[
    Path | None,
    typer.Option("--write-baseline", help="Write the fingerprints of this scan's findings to FILE."),
]
SparkSecretOption = Annotated[
    Path | None,
    typer.Option(
        "--spark-secret-file",
        help="File holding the shared secret of a Spark cluster: turns on Spark authentication, RPC "
        "encryption and encryption of spill files (else the _SPARK_AUTH_SECRET environment variable). "
        "Never printed or logged.",
    ),
]
BrokerLogOption = Annotated[
    list[Path] | None,
    typer.Option("--broker-log", metavar="FILE", help="Broker server.log file (plain, rotated or .gz; a folder: its server.log* "
                 "files) whose produce errors are explained against the log (repeatable)."),
]
RedactOption = Annotated[
    bool,
    typer.Option("--redact", help="Replace record keys, values and header values by their length and a keyed "
                 "hash (BLAKE2b), so the evidence can be shared without the data."),
]
RedactKeyOption = Annotated[
    str | None,
    typer.Option("--redact-key", help="Key of --redact's hash (equal payloads hash alike across runs with the "
                 "same key); default: a random key per run."),
]
