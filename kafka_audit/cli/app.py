"""The ``kafka-audit`` Typer app: its commands registered, ``--version``, and :func:`main`, the console
entry point that turns every usage error into one line and exit code 2 (SPEC section 1).

One module per command group: ``scan``/``producers``/``timeline``/``report`` in
:mod:`kafka_audit.cli.audit_commands` (their request built in :mod:`kafka_audit.cli.command_request`,
run by :func:`kafka_audit.api.run`), ``dump`` in :mod:`kafka_audit.cli.dump_command`; the options and
exit codes they share in :mod:`kafka_audit.cli.options`. A new command is a function in its own
module, registered below.

Start-up: ``kafka-audit --help`` imports typer and rich's console only; the audit's modules are
imported inside the commands, pyspark only by the Spark engine.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import Annotated

import typer

from kafka_audit.cli.audit_commands import register as register_audit_commands
from kafka_audit.cli.dump_command import dump
from kafka_audit.cli.options import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    TEXT_ERRORS,
    KafkaAuditError,
    PipeGuard,
    exit_code_of,
)
from kafka_audit.errors import end_interrupted

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Forensic auditor for Apache Kafka's on-disk logs.",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from kafka_audit import __version__

        typer.echo(f"kafka-audit {__version__}")
        raise typer.Exit()


@app.callback()
def _started(
    ctx: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", callback=_print_version, is_eager=True)
    ] = False,
) -> None:
    """Forensic auditor for Apache Kafka's on-disk logs."""


register_audit_commands(app, ("scan", "producers", "timeline"))
app.command("dump")(dump)
register_audit_commands(app, ("report",))


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM ends the command as Ctrl-C does (exit 130): every ``finally`` runs, so the Spark
    session is stopped and its scratch directory removed."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    """The console entry point. Typer's usage errors (unknown option, bad value, missing
    argument) become one line on stderr and exit code 2, like every other error about paths and
    options; a call without arguments prints the help; a reader that closes the output pipe ends
    the command quietly with exit 0 (SPEC section 1)."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors=TEXT_ERRORS)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)
    sys.stdout = PipeGuard(sys.stdout)
    try:
        code = _run(argv)
        sys.stdout.flush()  # what is still buffered, while a closed pipe can still be told apart
    except KafkaAuditError as error:  # a reader gone (exit 0), a full disk (exit 2), ...: its exit code
        code = exit_code_of(error)
    sys.exit(code)


def _run(argv: list[str] | None) -> int:
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
            from kafka_audit.report.safe_text import escape_text

            print(escape_text(f"{command}: {exc.format_message()} (see {command} --help)"), file=sys.stderr)
            code = getattr(exc, "exit_code", EXIT_USAGE)
    if code == EXIT_INTERRUPTED:  # Typer turns Ctrl-C into this code without a word
        end_interrupted()
    return code if isinstance(code, int) else EXIT_OK
