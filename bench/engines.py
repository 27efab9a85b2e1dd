#!/usr/bin/env python
"""The engines side by side, in rounds, on the same dir: the in-process audit, Spark ``local[1]``,
``local[2]`` and, with ``--cluster N``, a standalone cluster of N one-core workers on 127.0.0.1.

    python bench/engines.py --size-mb 256 --rounds 3 [--cluster 3]

The machine is shared: absolute rates move with the neighbours' load, so each round runs every
engine one after the other and the ratios are taken within a round; the load average is printed
with each round. Per engine: MB/s (wall), CPU seconds per GB (this process tree: driver, JVM,
Python workers; the cluster's executors are counted from their own processes, see
:func:`cluster_cpu_s`). Spark figures are a session's steady scans (``bench/measure.py spark``:
the fastest of three scans after the first), in-process ones the fastest of three.

With ``--cluster``, the tasks each worker's executor ran (from its log) show whether the work
spread over all workers; on a 2-core machine 3 one-core workers share 2 cores, which caps the
cluster's rate near ``local[2]``'s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import datagen  # noqa: E402
import measure  # noqa: E402


def load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def in_process(root: Path) -> dict:
    from kafka_audit.audit.scan_options import ScanOptions
    from kafka_audit.engines.local import audit_in_process
    from kafka_audit.log.log_dir import discover

    best = None
    for _ in range(3):
        wall, cpu = time.perf_counter(), time.process_time()
        result = audit_in_process(discover([str(root)]), ScanOptions())
        took = (time.perf_counter() - wall, time.process_time() - cpu)
        best = min(best or took, took)
    return {"wall_s": best[0], "cpu_s": best[1], "bytes": result.summary["bytes"]}


def spark(root: Path, master: str, env: dict | None = None) -> dict:
    command = [sys.executable, str(HERE / "measure.py"), "spark", str(root), master, "3"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, env={**os.environ, **(env or {})}, check=False)
    if done.returncode:
        raise RuntimeError(f"spark probe on {master} failed: {done.stderr[-2000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return {"wall_s": figures["warm_scan_s"], "cpu_s": figures["warm_cpu_s"], "bytes": figures["bytes"]}


def cluster_tasks(root: Path) -> dict[str, int]:
    """Tasks each worker's executors ran, from their logs (``Running task ... in stage``)."""
    counts = {}
    for worker in sorted(root.glob("work-*")):
        counts[worker.name] = sum(
            len(re.findall(r"Running task \S+ in stage", log.read_text(errors="replace")))
            for log in worker.glob("app-*/*/stderr")
        )
    return counts


def cluster_cpu_s(pids: list[int]) -> float:
    """CPU seconds of the workers' executor JVMs and their Python workers so far (descendants of
    the worker daemons, which run them)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents, times = {}, {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry)] = int(fields[1])
            times[int(entry)] = sum(int(v) for v in fields[11:15])
    total = 0
    for pid, cpu in times.items():
        up = parents.get(pid)
        while up and up not in pids:
            up = parents.get(up)
        if up in pids:
            total += cpu
    return total / tick


def row(name: str, figures: dict) -> dict:
    gb = figures["bytes"] / 1e9
    return {"engine": name, "mb_s": round(figures["bytes"] / 1e6 / figures["wall_s"], 1),
            "cpu_s_per_gb": round(figures["cpu_s"] / gb, 2), "wall_s": round(figures["wall_s"], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=int, default=256)
    parser.add_argument("--data-dir", type=Path, default=HERE / "data")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cluster", type=int, default=0, help="also a standalone cluster of N one-core workers")
    parser.add_argument("--no-local", action="store_true", help="only the cluster and local[1]")
    args = parser.parse_args()
    root = args.data_dir / f"log-dir-{args.size_mb}mb"
    datagen.ensure(root, args.size_mb)
    measure.warm(measure.segment_files(root))
    cluster = None
    if args.cluster:
        from tests.support.spark_cluster import StandaloneCluster

        cluster = StandaloneCluster(Path(tempfile.mkdtemp(prefix="kafka-audit-cluster-")), workers=args.cluster).start()
    try:
        for number in range(1, args.rounds + 1):
            rows = []
            before = load()
            if not args.no_local:
                rows.append(row("in-process", in_process(root)))
            rows.append(row("local[1]", spark(root, "local[1]")))
            if not args.no_local:
                rows.append(row("local[2]", spark(root, "local[2]")))
            if cluster is not None:
                cpu = cluster_cpu_s(cluster.pids())
                figures = spark(root, cluster.url, {"SPARK_LOCAL_IP": "127.0.0.1"})
                # The executors' CPU: a quarter of the session's four scans (the first included).
                figures["cpu_s"] += (cluster_cpu_s(cluster.pids()) - cpu) / 4
                rows.append({**row(f"cluster {args.cluster}x1 core", figures), "tasks_per_worker": cluster_tasks(cluster.root)})
            rates = {r["engine"]: r["mb_s"] for r in rows}
            ratios = {}
            if "in-process" in rates:
                ratios = {"local1_vs_in_process": rates["local[1]"] / rates["in-process"],
                          "local2_vs_in_process": rates["local[2]"] / rates["in-process"],
                          "local2_vs_local1": rates["local[2]"] / rates["local[1]"]}
            if cluster is not None:
                ratios["cluster_vs_local1"] = rates[f"cluster {args.cluster}x1 core"] / rates["local[1]"]
            print(json.dumps({"round": number, "load_before": before, "load_after": load(), "rows": rows,
                              **{k: round(v, 2) for k, v in ratios.items()}}), flush=True)
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
