"""A closed output pipe ends a command quietly with exit 0 (SPEC section 1: "exit 0 for a report
cut short by its reader, as Unix tools do"), as in ``kafka-audit dump ... | head``.

Each test runs the real CLI in a subprocess writing into a real pipe whose buffer is one page
(``F_SETPIPE_SZ``), reads a few bytes (or none, like ``| true``) and closes the read end: the
command's next write meets EPIPE. Click would turn that into exit 1, the code that means
"findings"."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FAULTY = REPO / "fixtures" / "faulty"
PAGE = 4096


def _cut_short(args: list[str], read: int = 16) -> subprocess.CompletedProcess:
    """Run ``python -m kafka_audit ARGS`` into a one-page pipe; read ``read`` bytes, then close it."""
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PAGE)
    process = subprocess.Popen(
        [sys.executable, "-m", "kafka_audit", *args], stdout=write_end, stderr=subprocess.PIPE, cwd=REPO
    )
    os.close(write_end)
    try:
        head = os.read(read_end, read) if read else b""
    finally:
        os.close(read_end)
    _, stderr = process.communicate(timeout=300)
    assert len(head) == read, stderr
    return subprocess.CompletedProcess(process.args, process.returncode, head, stderr.decode())


def _segments() -> list[str]:
    return [str(p) for p in sorted(FAULTY.glob("*/*.log")) if p.is_file()]


def test_dump_cut_short_by_its_reader_exits_0_without_a_word():
    done = _cut_short(["dump", *_segments(), "--records", "--print-data"])
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize(
    "command", [["scan"], ["scan", "--format", "json"], ["producers", "--format", "csv"], ["timeline", "--format", "ndjson"]]
)
def test_reports_with_findings_whose_reader_is_gone_exit_0(command):
    """fixtures/faulty has error findings: read in full, these commands exit 1. A report written
    in one piece (json, csv, ndjson) may fit the pipe before a slow reader closes it: read
    nothing, as ``| true`` does, so that its write always meets the closed pipe."""
    done = _cut_short([*command, str(FAULTY), "--engine", "local", "--quiet"], read=16 if command == ["scan"] else 0)
    assert (done.returncode, done.stderr) == (0, "")


def test_a_report_read_in_full_keeps_its_exit_code():
    whole = subprocess.run(
        [sys.executable, "-m", "kafka_audit", "scan", str(FAULTY), "--engine", "local", "--quiet", "--format", "json"],
        capture_output=True, cwd=REPO, timeout=300, check=False,
    )
    assert whole.returncode == 1 and whole.stdout.startswith(b"{")
