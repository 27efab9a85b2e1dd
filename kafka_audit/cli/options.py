"""The parts every ``kafka-audit`` command shares (SPEC section 1): exit codes, the one-line
usage error, the parsers of option values, and the Typer signature of every command that audits
PATHs (:func:`command_signature`: ``scan``, ``producers``, ``timeline`` and ``report`` take the
same PATH, filter and engine options, declared once in :data:`kafka_audit.api.options.OPTIONS`).

Exit codes: 0 no finding at or above ``--fail-on``; 1 at least one; 2 a usage error, no segment
under the paths, or a path that does not exist or cannot be read (one line on stderr). A closed
output pipe ends the command quietly with exit 0 (:class:`PipeGuard`).
"""

from __future__ import annotations

import inspect
import os
import re
import sys
from collections.abc import Callable
from contextlib import suppress
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kafka_audit.engines.run import Engine

# SPEC section 1's exit codes are kafka_audit.errors'; the commands import them from here.
from kafka_audit.errors import EXIT_FINDINGS, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, KafkaAuditError  # noqa: F401

if TYPE_CHECKING:
    from kafka_audit.api.options import Option

# Epoch milliseconds: ASCII digits, at most a long's 19 (str.isdigit would take "²").
_EPOCH_MS = re.compile(r"-?[0-9]{1,19}")
# File names that are not UTF-8 reach reports as surrogate escapes; print them escaped.
TEXT_ERRORS = "backslashreplace"


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


# -- the parameters of every command that audits PATHs (scan, producers, timeline, report) --------

PathsArgument = Annotated[
    list[str],
    typer.Argument(
        metavar="PATH",
        help="Log dirs, partition folders, .log files, or trees holding them; local paths or "
        "file://, s3://, s3a://, gs://, abfs://, abfss://, hdfs:// URIs.",
    ),
]


def command_signature(command: str) -> inspect.Signature:
    """The Typer signature of ``command``: its PATHs, then its options as the option table
    (:data:`kafka_audit.api.options.OPTIONS`) declares them, in ``--help``'s order."""
    from kafka_audit.api.options import command_options

    keyword = inspect.Parameter.KEYWORD_ONLY
    return inspect.Signature([
        inspect.Parameter("paths", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=PathsArgument),
        *(inspect.Parameter(o.name, keyword, annotation=Annotated[o.cli, _typer_option(o)], default=o.default)
          for o in command_options(command)),
    ], return_annotation=None)


def option_annotation(name: str) -> Any:
    """The Typer annotation of the option table's ``name`` (``dump`` takes ``report``'s
    ``--rsm-key-file``, ``--redact`` and ``--redact-key``)."""
    from kafka_audit.api.options import command_options

    option = next(o for o in command_options("report") if o.name == name)
    return Annotated[option.cli, _typer_option(option)]


def _typer_option(option: Option) -> Any:
    return typer.Option(option.flag, metavar=option.metavar, min=option.minimum, help=option.help,
                        callback=_checked(option) if option.check or option.choices else None)


def _checked(option: Option) -> Callable[[object], object]:
    """The option's checks as Typer's callback: its ``choices`` asked when the command line is
    parsed (refused as Typer refuses a value of an enum), its ``check``'s message a bad parameter
    (without ``min=``'s range in ``--help``)."""

    def callback(value: object) -> object:
        message = option.check(value) if option.check is not None else None
        if option.choices is not None and value not in (choices := option.choices()):
            message = f"Value error, {value!r} is not one of {', '.join(map(repr, choices))}."
        if message:
            raise typer.BadParameter(message)
        return value

    return callback
