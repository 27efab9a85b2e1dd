#!/usr/bin/env python
"""The Spark job on the DataFrame API against the RDD job it replaced (issue 18), in one run.

    python bench/compare_jobs.py --size-mb 1024        # from the repository root

The RDD job is loaded from its last commit (``--rdd-commit``, read with ``git show``) as a module
of its own; both jobs run in the same ``local[2]`` session on the same synthetic dir (written by
``bench/datagen.py`` under ``bench/data/`` as ``bench/run.py`` does), scans alternating so that
both see the same machine load. The first scan of each job is left out (Python workers' start);
the steady rate of each is the fastest of ``--repeat`` later scans. Prints one line per scan,
the two rates, their ratio, and a JSON object as the last line.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import datagen  # noqa: E402

RDD_COMMIT = "c2fe862"


def load_rdd_job(commit: str):
    source = subprocess.run(
        ["git", "show", f"{commit}:kafka_audit/engines/spark_job.py"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    from pyspark import cloudpickle

    spec = importlib.util.spec_from_loader("kafka_audit_rdd_pipeline", loader=None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    exec(compile(source, f"{commit}:kafka_audit/engines/spark_job.py", "exec"), module.__dict__)
    cloudpickle.register_pickle_by_value(module)  # the executors cannot import it by name
    return module


def tree_cpu_s() -> float:
    """CPU seconds (user + system) of this process and all its descendants alive now: the JVM and
    its Python workers (reused across scans, so alive). On a shared machine the CPU a scan costs
    is steadier than its wall time."""
    ticks = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = fields
            children.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += (int(stats[pid][11]) + int(stats[pid][12])) / ticks
        todo.extend(children.get(pid, []))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--data-dir", type=Path, default=HERE / "data")
    parser.add_argument("--repeat", type=int, default=3, help="scans per job after the first (fastest kept)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--rdd-commit", default=RDD_COMMIT)
    args = parser.parse_args()

    from kafka_audit.audit.scan_options import ScanOptions
    from kafka_audit.engines import spark_job as pipeline
    from kafka_audit.engines.spark_session import spark_session
    from kafka_audit.log.log_dir import discover

    root = args.data_dir / f"log-dir-{args.size_mb}mb"
    datagen.ensure(root, args.size_mb, log=lambda m: print(m, file=sys.stderr))
    rdd = load_rdd_job(args.rdd_commit)
    jobs = {"dataframe": pipeline.run_scan, "rdd": rdd.run_scan}
    found = discover([str(root)])
    times: dict[str, list[float]] = {name: [] for name in jobs}
    cpu: dict[str, list[float]] = {name: [] for name in jobs}
    findings: dict[str, list] = {}
    with spark_session(args.master, {}) as spark:
        for round_ in range(args.repeat + 1):
            for name, run in jobs.items():
                cpu_before, began = tree_cpu_s(), time.perf_counter()
                result = run(spark, found, ScanOptions())
                elapsed = time.perf_counter() - began
                times[name].append(elapsed)
                cpu[name].append(tree_cpu_s() - cpu_before)
                findings[name] = [f.to_dict() for f in result.findings]
                mb = result.summary["bytes"] / 1e6
                print(f"scan {round_} {name:<9} {elapsed:6.2f} s  {mb / elapsed:7.1f} MB/s  cpu {cpu[name][-1]:6.2f} s"
                      + ("  (first: Python workers start)" if round_ == 0 else ""))
    rates = {name: round(mb / min(t[1:]), 1) for name, t in times.items()}
    ratio = round(rates["dataframe"] / rates["rdd"], 2)
    cpu_steady = {name: round(min(c[1:]), 2) for name, c in cpu.items()}
    cpu_ratio = round(cpu_steady["rdd"] / cpu_steady["dataframe"], 2)
    print(f"steady rate on {args.master}, {mb:,.0f} MB: DataFrame job {rates['dataframe']} MB/s, "
          f"RDD job {rates['rdd']} MB/s, ratio {ratio} (target >= 0.9)")
    print(f"CPU per steady scan (JVM + Python workers, least of the later scans): DataFrame job "
          f"{cpu_steady['dataframe']} s, RDD job {cpu_steady['rdd']} s, RDD/DataFrame {cpu_ratio}")
    print("same findings: " + str(findings["dataframe"] == findings["rdd"]))
    print(json.dumps({"dataframe_mb_s": rates["dataframe"], "rdd_mb_s": rates["rdd"], "ratio": ratio,
                      "dataframe_cpu_s": cpu_steady["dataframe"], "rdd_cpu_s": cpu_steady["rdd"], "cpu_ratio": cpu_ratio,
                      "same_findings": findings["dataframe"] == findings["rdd"]}))


if __name__ == "__main__":
    main()
