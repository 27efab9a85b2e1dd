"""Test helper: ``kafka-audit scan`` run with and without the compiled record screen.

The screen is hidden the way an install without a C compiler lacks it: the child process maps
``kafka_audit.record._record_screen`` (and the compiled batch walk, ``_batch_walk``) to None in
``sys.modules`` before kafka_audit is imported,
so its import raises ImportError there, as it does where the module was never built.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

_SCANS = """
import sys
if sys.argv[1] == "hidden":
    sys.modules["kafka_audit.record._record_screen"] = None
    sys.modules["kafka_audit.record._batch_walk"] = None
from kafka_audit.cli.app import main
for path, out in zip(sys.argv[2::2], sys.argv[3::2]):
    try:
        main(["scan", path, "--engine", "local", "--format", "json", "--fail-on", "never", "--quiet", "--output", out])
    except SystemExit as exc:
        if exc.code != 0:
            raise
"""


def scan_json(paths: list[Path], out_dir: Path, hidden: bool) -> tuple[list[bytes], str]:
    """One child process scans each of ``paths`` (local engine, JSON) into ``out_dir``; returns
    each report's file bytes, in order, and the child's stderr. ``hidden``: without the screen."""
    out_dir.mkdir(parents=True, exist_ok=True)
    outs = [out_dir / f"{i}.json" for i in range(len(paths))]
    args = [str(a) for pair in zip(paths, outs) for a in pair]
    done = subprocess.run(
        [sys.executable, "-c", _SCANS, "hidden" if hidden else "built", *args],
        capture_output=True, text=True, cwd=REPO, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [out.read_bytes() for out in outs], done.stderr


def findings_bytes(report: bytes) -> bytes:
    """The ``findings`` of a JSON report, re-serialised the same way on both sides."""
    return json.dumps(json.loads(report)["findings"], sort_keys=True).encode()
