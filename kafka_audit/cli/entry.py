"""The ``kafka-audit`` console entry point, kept light: SIGTERM is turned into KeyboardInterrupt
before the command's modules are imported (about a second on a busy machine), so that a signal at
any moment ends the command with one line and exit 130 (SPEC section 1), never a traceback."""

from __future__ import annotations

import signal
import sys
import threading

from kafka_audit.errors import EXIT_INTERRUPTED


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM ends the command as Ctrl-C does: every ``finally`` runs."""
    raise KeyboardInterrupt


def forget_the_interrupt() -> None:
    """Let a handled interrupt end with exit 130. CPython marks a KeyboardInterrupt that escapes
    an ``exec`` or ``eval`` of source text (the methods a dataclass or a namedtuple generates as
    it is imported) as unhandled even after an ``except`` caught it, and then ends a ``python -m
    kafka_audit`` by SIGINT (exit -2) instead of with its exit code (``run_eval_code_obj`` in Python/pythonrun.c,
    read at exit by ``Py_RunMain``). Each such eval clears the mark as it starts: one that runs to
    its end clears it for good."""
    exec("pass")


def main() -> None:
    """Install the SIGTERM handler, import the command line, run it (:func:`kafka_audit.cli.app.main`)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)
    try:
        from kafka_audit.cli.app import main as run
    except KeyboardInterrupt:
        print("kafka-audit: interrupted", file=sys.stderr)
        forget_the_interrupt()
        sys.exit(EXIT_INTERRUPTED)
    run()
