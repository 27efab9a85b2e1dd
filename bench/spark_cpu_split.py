#!/usr/bin/env python
"""Where a steady Spark scan's CPU goes, per process kind: the Python driver, the driver JVM and
the Python workers (the daemon and its forks), beside the in-process audit of the same dir.

    python bench/spark_cpu_split.py [DIR] --master 'local[2]' --scans 2

One session: a first scan (the Python workers start), then ``--scans`` steady scans, each timed
with the CPU seconds (user + system, from /proc) of every process of the tree, grouped by kind.
Prints one JSON line per steady scan and the in-process audit's CPU seconds per GB (each with
its discovery, the part of the Python driver's CPU that the in-process audit pays too).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

DEFAULT_DIR = HERE / "data" / "log-dir-1024mb"


def _kind(pid: int, command: str) -> str:
    if pid == os.getpid():
        return "driver_python"
    if "java" in command.split("\0", 1)[0]:
        return "jvm"
    return "python_workers"


def cpu_by_kind() -> dict[str, float]:
    """CPU seconds (user + system, the process's own and its reaped children's) of this process
    and each live descendant, summed by :func:`_kind`."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, tuple[list[str], str]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as stat, open(f"/proc/{entry}/cmdline") as cmdline:
                fields, command = stat.read().rsplit(")", 1)[1].split(), cmdline.read()
        except OSError:
            continue
        stats[int(entry)] = (fields, command)
        children.setdefault(int(fields[1]), []).append(int(entry))
    totals: dict[str, float] = {}
    todo = [os.getpid()]
    while todo:
        pid = todo.pop()
        if pid in stats:
            fields, command = stats[pid]
            kind = _kind(pid, command)
            totals[kind] = totals.get(kind, 0.0) + sum(int(v) for v in fields[11:15]) / tick
        todo.extend(children.get(pid, ()))
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", nargs="?", default=str(DEFAULT_DIR))
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--scans", type=int, default=2)
    args = parser.parse_args()
    from kafka_audit.audit.scan_options import ScanOptions
    from kafka_audit.engines.local import audit_in_process
    from kafka_audit.engines.spark_job import run_scan
    from kafka_audit.engines.spark_session import spark_session
    from kafka_audit.log.log_dir import discover

    cpu = time.process_time()
    found = discover([args.directory])
    found_cpu = time.process_time() - cpu
    result = audit_in_process(found, ScanOptions())
    gigabytes = result.summary["bytes"] / 1e9
    # A Spark scan below is timed with its discovery (the driver's), so the audit here is too;
    # the discovery's share is printed apart.
    audit = {"cpu_s_per_gb": round((time.process_time() - cpu) / gigabytes, 2),
             "discovery_cpu_s_per_gb": round(found_cpu / gigabytes, 2)}
    print(json.dumps({"engine": "in-process", **audit, "load": os.getloadavg()[0]}))
    with spark_session(args.master, {}) as spark:
        run_scan(spark, found, ScanOptions())
        for _ in range(args.scans):
            before, wall = cpu_by_kind(), time.perf_counter()
            run_scan(spark, discover([args.directory]), ScanOptions())
            after, took = cpu_by_kind(), time.perf_counter() - wall
            split = {kind: round((after.get(kind, 0.0) - before.get(kind, 0.0)) / gigabytes, 2) for kind in after}
            print(
                json.dumps(
                    {
                        "engine": args.master,
                        "wall_s": round(took, 2),
                        "cpu_s_per_gb": split,
                        "total_cpu_s_per_gb": round(sum(split.values()), 2),
                        "load": os.getloadavg()[0],
                    }
                )
            )


if __name__ == "__main__":
    main()
