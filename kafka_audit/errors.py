"""The one exception base of the package and the exit codes of SPEC section 1.

Every exception class the package defines derives from :class:`KafkaAuditError` (as pip's derive
from ``PipError``) and says which exit code it ends the command with if it reaches the command
line, where ``cli/app.main`` maps it in one place. Most never get there: the decoders' errors
become findings where they are raised, and the command line turns the others into a one-line
message naming the cause. A class that also stood for a built-in error (``ValueError``,
``OSError``) keeps that base too, so that every ``except`` that caught it still does.

Below the layers: it imports nothing of the package, so that every layer may import it (the
import-linter contract "The shared vocabulary imports no layer").
"""

from __future__ import annotations

import sys
from typing import ClassVar

# SPEC section 1: 0 no finding at or above --fail-on, 1 at least one, 2 a usage error (a path,
# an option, Spark failing), 130 interrupted (128 + SIGINT, what a shell reports for Ctrl-C).
EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

# The one line a command says on stderr when it is interrupted (SIGINT, SIGTERM).
INTERRUPTED_LINE = "kafka-audit: interrupted"


def end_interrupted() -> int:
    """Say :data:`INTERRUPTED_LINE` on stderr and give :data:`EXIT_INTERRUPTED`, the exit code
    the interrupted command ends with. CPython marks a KeyboardInterrupt that escapes an ``exec``
    or ``eval`` of source text (the methods a dataclass or a namedtuple generates as it is
    imported) as unhandled even after an ``except`` caught it, and then ends a ``python -m
    kafka_audit`` by SIGINT (exit -2) instead of with its exit code (``run_eval_code_obj`` in
    Python/pythonrun.c, read at exit by ``Py_RunMain``); each such eval clears the mark as it
    starts, so one that runs to its end here clears it for good."""
    print(INTERRUPTED_LINE, file=sys.stderr)
    exec("pass")
    return EXIT_INTERRUPTED


class KafkaAuditError(Exception):
    """An error of kafka-audit; ``exit_code`` is the one a command ends with when it gets here."""

    exit_code: ClassVar[int] = EXIT_USAGE
