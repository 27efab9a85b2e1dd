"""The ``kafka-audit`` console entry point, kept light: SIGTERM is turned into KeyboardInterrupt
before the command's modules are imported (about a second on a busy machine), so that a signal at
any moment ends the command with one line and exit 130 (SPEC section 1), never a traceback."""

from __future__ import annotations

import signal
import sys
import threading

from kafka_audit.errors import EXIT_INTERRUPTED, forget_the_interrupt


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM ends the command as Ctrl-C does: every ``finally`` runs."""
    raise KeyboardInterrupt


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
