"""The ``kafka-audit`` console entry point, kept light: SIGTERM is turned into KeyboardInterrupt
before the command's modules are imported (about a second on a busy machine), so that a signal at
any moment ends the command with one line and exit 130 (SPEC section 1), never a traceback."""

from __future__ import annotations

import signal
import sys
import threading

from kafka_audit.errors import end_interrupted


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM ends the command as Ctrl-C does: every ``finally`` runs."""
    raise KeyboardInterrupt


def _settled() -> None:
    """The command's exit code is decided and its output written: a SIGINT or SIGTERM from now on
    is ignored. CPython puts back the default action of every signal it handles before it tears
    its modules down (``_PySignal_Fini`` in ``Py_FinalizeEx``), so a signal in those last moments
    would end a finished scan by the signal itself (exit -2 or -15) instead of its exit code; an
    ignored signal stays ignored there."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)


def main() -> None:
    """Install the SIGTERM handler, import the command line, run it (:func:`kafka_audit.cli.app.main`)."""
    in_main_thread = threading.current_thread() is threading.main_thread()
    if in_main_thread:
        signal.signal(signal.SIGTERM, _terminated)
    try:
        from kafka_audit.cli.app import main as run

        run()
    except KeyboardInterrupt:  # during the imports, or once the command had handled its own
        sys.exit(end_interrupted())
    finally:
        if in_main_thread:
            _settled()
