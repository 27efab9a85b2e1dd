"""An interrupt that passes through generated code still ends the command with exit 130 (SPEC
section 1). CPython marks a KeyboardInterrupt that escapes an ``exec`` of source text (what a
dataclass or a namedtuple runs as it is made) as unhandled even once caught, and would end the
process by SIGINT (-2) where the command runs as ``python -m kafka_audit``: a Ctrl-C during the
CLI's imports did so about one time in six. Each case runs the real entry point as a module in a
child interpreter (``-m``, as the console script's SystemExit is handled apart), the interrupt
raised from inside an ``exec`` where a signal would land."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO

# An ``exec`` that a KeyboardInterrupt escapes, as a signal during a dataclass's creation gives.
_INTERRUPT = 'exec("raise KeyboardInterrupt")'

DURING_IMPORT = f"""
import builtins
real_import = builtins.__import__
def interrupted_import(name, *args, **kwargs):
    if name == "kafka_audit.cli.app":
        {_INTERRUPT}
    return real_import(name, *args, **kwargs)
builtins.__import__ = interrupted_import
from kafka_audit.cli.entry import main
main()
"""

DURING_RUN = f"""
import sys
import kafka_audit.api
def interrupted_run(request):
    {_INTERRUPT}
kafka_audit.api.run = interrupted_run
sys.argv = ["kafka-audit", "scan", {str(FIXTURES / "healthy")!r}, "--engine", "local"]
from kafka_audit.cli.entry import main
main()
"""

# A signal once the command has finished: sent from a finalizer that runs as the interpreter clears
# its modules, after it has put back the default action of the signals it handled.
AT_TEARDOWN = f"""
import os
import sys
class SignalAtTeardown:
    def __init__(self, signum):
        self.kill, self.pid, self.signum = os.kill, os.getpid(), signum
    def __del__(self):
        self.kill(self.pid, self.signum)
sent_at_teardown = SignalAtTeardown(int(sys.argv[1]))
sys.argv = ["kafka-audit", "scan", {str(FIXTURES / "healthy")!r}, "--engine", "local"]
from kafka_audit.cli.entry import main
main()
"""


def _as_module(code: str, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``code`` run as ``python -m interrupted_cli ARGS`` from ``folder``, the checkout importable."""
    (folder / "interrupted_cli.py").write_text(code)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "interrupted_cli", *args], cwd=folder, env=env, capture_output=True, text=True, timeout=120,
        check=False,
    )


def test_an_interrupt_through_generated_code_during_the_imports_exits_130(tmp_path):
    done = _as_module(DURING_IMPORT, tmp_path)
    assert (done.returncode, done.stderr) == (130, "kafka-audit: interrupted\n")


def test_an_interrupt_through_generated_code_during_a_command_exits_130(tmp_path):
    done = _as_module(DURING_RUN, tmp_path)
    assert (done.returncode, done.stderr) == (130, "kafka-audit: interrupted\n")


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_as_the_finished_command_exits_keeps_its_exit_code(tmp_path, stop):
    done = _as_module(AT_TEARDOWN, tmp_path, str(int(stop)))
    assert (done.returncode, done.stderr) == (0, "")
