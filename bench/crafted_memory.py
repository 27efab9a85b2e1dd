"""The memory bound on the crafted set (issue 30 item 2; SPEC section 1: the peak RSS of each Python
process, driver or worker, the JVM aside, stays at most 576 MiB whatever the input).

Builds each case in a temporary dir (streaming: no case is ever held in memory), next to a small
healthy partition with one known finding (a damaged CRC), then runs ``kafka-audit scan`` on it in
a child process and reports the child's peak RSS (``VmHWM`` of ``/proc/<pid>/status``, read by
the child at exit and polled by this script while it runs; not ``ru_maxrss``, which Linux carries
over from the parent into a vforked child), its CPU seconds, and its findings per check. With
``--engine spark`` every Python process under the child (the Spark workers) is polled as well
and the largest worker peak is reported apart.

Cases:
  gzip_3g     one v2 batch of 31 records of 100 MiB, gzip, ~51 MB on disk inflating to 3.1 GiB
              (under the 64x ratio cap): record_too_large, then the scan goes on
  gzip_3g_mmb the same with --max-message-bytes 100000000: every record walked as a stream
  sparse_4g   a sparse 4 GiB file whose second batch claims 2^31-1 bytes
  zstd_4g     a plain zstd bomb: 4 GiB of zeros in one batch (past the cap)
  lz4_1g      a plain lz4 bomb (Kafka's 64 KiB independent blocks): 1 GiB of zeros
  zstd_1g     a zstd batch of 1 GiB inflated, under the cap (~50x)
  lz4_1g_cap  an lz4 batch of 1 GiB inflated, under the cap (~50x)

    python bench/crafted_memory.py                 # all cases, --engine local
    python bench/crafted_memory.py --case gzip_3g --engine spark
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.crafted import (  # noqa: E402
    GZIP,
    LZ4,
    MIB,
    ZSTD,
    write_bomb_segment,
    write_healthy_segment,
    write_sparse_claim,
)

LIMIT_MIB = 576
SEGMENT = "00000000000000000000.log"

# The child: the CLI in this interpreter, its own VmHWM written at exit (atexit runs before the
# interpreter tears down; the CLI ends with SystemExit).
CHILD = r"""
import atexit, sys
def _peak():
    with open("/proc/self/status") as status:
        hwm = next(int(l.split()[1]) for l in status if l.startswith("VmHWM:"))
    with open(sys.argv[1], "w") as out:
        out.write(str(hwm))
atexit.register(_peak)
from kafka_audit.cli.app import main
main(sys.argv[2:])
"""


def _bomb(codec: int, value_mib: int, records: int, random_per_mib: int) -> Callable[[Path], object]:
    return lambda path: write_bomb_segment(path, codec, value_mib * MIB, records, random_per_mib)


CASES: dict[str, tuple[Callable[[Path], object], list[str]]] = {
    "gzip_3g": (_bomb(GZIP, 100, 31, 16 * 1024), []),
    "gzip_3g_mmb": (_bomb(GZIP, 100, 31, 16 * 1024), ["--max-message-bytes", "100000000"]),
    "sparse_4g": (write_sparse_claim, []),
    "zstd_4g": (_bomb(ZSTD, 1024, 4, 0), []),
    "lz4_1g": (_bomb(LZ4, 256, 4, 0), []),
    "zstd_1g": (_bomb(ZSTD, 128, 8, 20 * 1024), ["--max-message-bytes", "100000000"]),
    "lz4_1g_cap": (_bomb(LZ4, 128, 8, 20 * 1024), ["--max-message-bytes", "100000000"]),
}


def _status_kib(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            return next((int(line.split()[1]) for line in status if line.startswith(field)), 0)
    except OSError:
        return 0


def _descendants(pid: int) -> list[int]:
    """Every process under ``pid`` (by /proc/<p>/task/*/children)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children") as children:
                    kids = [int(k) for k in children.read().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def _is_python(pid: int) -> bool:
    try:
        return "python" in os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return False


def run_case(name: str, engine: str, workdir: Path) -> dict:
    build, options = CASES[name]
    root = workdir / name
    shutil.rmtree(root, ignore_errors=True)
    (root / "crafted-0").mkdir(parents=True)
    (root / "healthy-0").mkdir()
    started = time.monotonic()
    build(root / "crafted-0" / SEGMENT)
    write_healthy_segment(root / "healthy-0" / SEGMENT)
    built_s = time.monotonic() - started
    report, peak_file = root / "report.json", root / "peak"
    argv = [sys.executable, "-c", CHILD, str(peak_file), "scan", str(root / "crafted-0"), str(root / "healthy-0"),
            "--engine", engine, "--format", "json", "--output", str(report), "--quiet", *options]
    child = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    polled, workers = 0, 0
    while True:
        polled = max(polled, _status_kib(child.pid, "VmHWM:"))
        for pid in _descendants(child.pid):
            if _is_python(pid):
                workers = max(workers, _status_kib(pid, "VmHWM:"))
        done, status, usage = os.wait4(child.pid, os.WNOHANG)  # its own rusage: CPU seconds
        if done:
            break
        time.sleep(0.2)
    child.returncode = os.waitstatus_to_exitcode(status)
    stderr = child.stderr.read().decode(errors="replace") if child.stderr else ""
    own = int(peak_file.read_text()) if peak_file.exists() else 0
    findings: dict[str, int] = {}
    records = None
    if report.exists():
        records = json.loads(report.read_text())["summary"]["records"]
        for finding in json.loads(report.read_text())["findings"]:
            key = f"{finding['topic']}:{finding['check']}"
            findings[key] = findings.get(key, 0) + 1
    file_bytes = (root / "crafted-0" / SEGMENT).stat().st_size
    result = {
        "case": name, "engine": engine, "segment_bytes": file_bytes,
        "segment_blocks_bytes": (root / "crafted-0" / SEGMENT).stat().st_blocks * 512,
        "driver_peak_mib": round(max(own, polled) / 1024, 1),
        "worker_peak_mib": round(workers / 1024, 1) if engine == "spark" else None,
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "exit": child.returncode, "records": records, "findings": findings, "build_s": round(built_s, 1),
        "stderr": stderr.strip()[-300:],
    }
    result["within_bound"] = result["driver_peak_mib"] <= LIMIT_MIB and (result["worker_peak_mib"] or 0) <= LIMIT_MIB
    shutil.rmtree(root, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="a case (repeatable); all by default")
    parser.add_argument("--engine", default="local", choices=["local", "spark"])
    parser.add_argument("--dir", default=None, help="where to build the cases (default: a temporary dir)")
    args = parser.parse_args()
    workdir = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="crafted-memory-"))
    try:
        for name in args.case or list(CASES):
            print(json.dumps(run_case(name, args.engine, workdir)), flush=True)
    finally:
        if not args.dir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
