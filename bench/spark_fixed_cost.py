#!/usr/bin/env python
"""Where the seconds and CPU seconds of a Spark scan of a small dir go: the fixed cost (issue 34,
item 4: ``scan fixtures`` on Spark in at most 4 s end to end, with the class archive in place).

    python bench/spark_fixed_cost.py                       # fixtures/, 3 runs, medians
    python bench/spark_fixed_cost.py --conf spark.python.daemon.module=pyspark.daemon
    python bench/spark_fixed_cost.py --java-options=-XX:+UseSerialGC    # added to the driver JVM's

Each run is a fresh process that does what ``kafka-audit scan`` does (``spark_session`` from
JVM launch to JVM exit, the audit on it) and times its parts: imports; the session's start
split into the driver JVM's launch (spark-submit, the launcher JVM, the driver JVM up to its
gateway), the SparkContext and the rest (SparkSession, settings); the job split into the plan
(``build_frames``: DataFrames defined on the driver) and its run (``toArrow``: Spark's jobs),
with Spark's own metrics of the Python workers (start, initialisation, run; from the event log);
the session's end (stop and JVM exit). CPU seconds by process: this driver, the driver JVM, the
Python worker daemon and its workers (read from ``/proc`` just before the session ends). The
class archive must already exist (a first ``kafka-audit scan`` records it). A table of the
medians is printed, then one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"
# Spark's SQL metrics of a Python node, by their names in the event log.
PYTHON_METRICS = {
    "time to start Python workers": "python_start_s",
    "time to initialize Python workers": "python_init_s",
    "time to execute Python code": "python_code_s",
}


def _cpu_s(pid: int) -> float:
    """User + system seconds of process ``pid`` (0 when gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _session_cpu_s(leader: int) -> tuple[float, float]:
    """CPU seconds of the driver JVM (``leader``, its session's leader) and of the other
    processes of its session (PySpark's worker daemon and workers)."""
    others = 0.0
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == leader:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                session = int(stat.read().rsplit(b")", 1)[1].split()[3])
        except (OSError, IndexError, ValueError):
            continue
        if session == leader:
            others += _cpu_s(int(name))
    return _cpu_s(leader), others


def _event_metrics(folder: str) -> dict[str, float]:
    """Spark jobs, stages, tasks and the Python workers' metrics (summed, seconds) of the event
    log in ``folder``."""
    found = {"spark_jobs": 0.0, "spark_stages": 0.0, "spark_tasks": 0.0, **dict.fromkeys(PYTHON_METRICS.values(), 0.0)}
    for log in (path for path in Path(folder).rglob("*") if path.is_file()):
        for line in log.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            kind = event["Event"]
            found["spark_jobs"] += kind == "SparkListenerJobStart"
            found["spark_stages"] += kind == "SparkListenerStageCompleted"
            if kind == "SparkListenerTaskEnd":
                found["spark_tasks"] += 1
                for value in event["Task Info"].get("Accumulables", []):
                    key = PYTHON_METRICS.get(value.get("Name", ""))
                    if key is not None:
                        found[key] += int(value.get("Update", 0)) / 1000
    return found


def probe(root: str, conf: dict[str, str], java_options: str = "") -> dict[str, float]:
    """One scan of ``root`` as ``kafka-audit scan`` runs it, its parts timed (this process);
    ``java_options`` are added to the session's own driver JVM options."""
    began = time.perf_counter()
    import pyspark.java_gateway
    from pyspark import SparkContext

    from kafka_audit.audit.scan_options import ScanOptions
    from kafka_audit.engines import spark_job, spark_session
    from kafka_audit.log.log_dir import discover

    marks: dict[str, float] = {"imports_s": time.perf_counter() - began}

    def timed(owner, name: str, key: str) -> None:
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            at = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                marks[key] = marks.get(key, 0.0) + time.perf_counter() - at

        setattr(owner, name, wrapper)

    if java_options:
        settings_of = spark_session._session_settings

        def with_options(*args, **kwargs) -> dict[str, str]:
            settings = settings_of(*args, **kwargs)
            settings["spark.driver.extraJavaOptions"] += f" {java_options}"
            return settings

        spark_session._session_settings = with_options  # type: ignore[assignment]
    timed(pyspark.java_gateway, "launch_gateway", "jvm_launch_s")
    timed(SparkContext, "_do_init", "spark_context_s")
    timed(spark_job, "build_frames", "job_plan_s")
    events = tempfile.mkdtemp(prefix="kafka-audit-bench-events-")
    settings = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": events, "spark.eventLog.compress": "false",
                "spark.eventLog.rolling.enabled": "false", **conf}
    found = discover([root])
    at = time.perf_counter()
    with spark_session.spark_session("local[*]", settings) as spark:
        marks["session_s"] = time.perf_counter() - at
        at = time.perf_counter()
        spark_job.run_scan(spark, found, ScanOptions())
        marks["job_s"] = time.perf_counter() - at
        marks["jvm_cpu_s"], marks["python_workers_cpu_s"] = _session_cpu_s(SparkContext._gateway.proc.pid)
        at = time.perf_counter()
    marks["end_s"] = time.perf_counter() - at
    marks["total_s"] = time.perf_counter() - began
    usage = os.times()
    marks["driver_cpu_s"] = usage.user + usage.system
    marks["job_run_s"] = marks["job_s"] - marks.get("job_plan_s", 0.0)
    marks["session_rest_s"] = marks["session_s"] - marks.get("jvm_launch_s", 0.0) - marks.get("spark_context_s", 0.0)
    marks.update(_event_metrics(events))
    shutil.rmtree(events, ignore_errors=True)
    return marks


ROWS = (
    ("total_s", "end to end, in process (imports to JVM exit)"),
    ("imports_s", "  imports"),
    ("session_s", "  session start"),
    ("jvm_launch_s", "    spark-submit, launcher JVM, driver JVM to its gateway"),
    ("spark_context_s", "    SparkContext"),
    ("session_rest_s", "    SparkSession and settings"),
    ("job_s", "  the job"),
    ("job_plan_s", "    plan (build_frames)"),
    ("job_run_s", "    Spark's jobs (toArrow)"),
    ("python_start_s", "      Python workers' start (Spark metric)"),
    ("python_init_s", "      Python workers' initialisation (Spark metric)"),
    ("python_code_s", "      Python code run (Spark metric)"),
    ("end_s", "  stop and JVM exit"),
    ("driver_cpu_s", "CPU s: this driver (Python)"),
    ("jvm_cpu_s", "CPU s: driver JVM (to the job's end)"),
    ("python_workers_cpu_s", "CPU s: Python worker daemon and workers"),
    ("spark_jobs", "Spark jobs"),
    ("spark_stages", "Spark stages run"),
    ("spark_tasks", "Spark tasks"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=str(FIXTURES), help="the dir to scan (default: fixtures/)")
    parser.add_argument("--repeat", type=int, default=3, help="runs, each a fresh process (medians)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting")
    parser.add_argument("--java-options", default="", help="options added to the driver JVM's")
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    args = parser.parse_args()
    conf = dict(item.split("=", 1) for item in args.conf)
    if args.probe:
        print(json.dumps(probe(args.probe, conf, args.java_options)))
        return
    runs = []
    for _ in range(max(1, args.repeat)):
        command = [sys.executable, str(Path(__file__).resolve()), "--probe", args.root]
        command += [f"--conf={item}" for item in args.conf] + [f"--java-options={args.java_options}"]
        done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=HERE.parent)
        if done.returncode != 0:
            raise SystemExit(f"bench: the probe failed:\n{done.stderr[-2000:]}")
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    medians = {key: statistics.median(run.get(key, 0.0) for run in runs) for key, _ in ROWS}
    print(f"Spark scan of {args.root}: medians of {len(runs)} runs; load average {os.getloadavg()[0]:.2f}")
    for key, label in ROWS:
        print(f"  {label:<58} {medians[key]:7.2f}")
    print(json.dumps({"load_average": os.getloadavg(), "conf": conf, "java_options": args.java_options, "medians": medians, "runs": runs}))


if __name__ == "__main__":
    main()
