#!/usr/bin/env python
"""kafka-audit's benchmark: how fast it is, side by side with the limits and with kafka-python.

    python bench/run.py --size-mb 1024        # from the repository root, in the project's env

1. Writes a synthetic broker log dir of ``--size-mb`` MiB under ``bench/data/`` with the fixture
   writer (see ``bench/datagen.py``), or reuses the one already there.
2. Measures, each as MB/s and records/s, on the same files (read from the page cache):
   (a) the limit: reading the files and computing CRC-32C over every batch body;
   (b) kafka-audit's batch-level walk (FileRecords.batches: framing, header, CRC);
   (c) kafka-audit's audit core in one process (audit_in_process: every check, every record);
   (d) kafka-python decoding the same records (MemoryRecords iteration, CRCs checked);
   (e) ``kafka-audit scan`` through Spark ``local[1]`` and ``local[2]`` (one JVM each): the
       steady rate (a session's later scans) and, on its own row, a session's first scan, which
       also starts the Python workers;
   and the peak RSS of a process auditing the large segment as one task.
3. Prints a table, the targets met or missed, and as its last line one JSON object.

In-process figures are the fastest of ``--repeat`` runs, steady Spark figures the fastest of
``--spark-repeat`` scans after the first, since the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import datagen  # noqa: E402
import measure  # noqa: E402

# Issue 6's targets: (figure, threshold, description).
TARGETS = (
    ("walk_vs_limit", 0.5, "batch-level walk >= 0.5 x the read+CRC limit"),
    ("audit_vs_kafka_python", 3.0, "full audit core >= 3 x kafka-python's decode (records/s)"),
    ("spark2_vs_spark1", 1.6, "Spark local[2] >= 1.6 x local[1]"),
)
RSS_TARGET_MB = 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=int, default=1024, help="size of the synthetic log dir in MiB (default 1024)")
    parser.add_argument("--data-dir", type=Path, default=HERE / "data", help="where generated dirs live")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each in-process measurement (fastest kept)")
    parser.add_argument(
        "--spark-repeat", type=int, default=3, help="scans per Spark master after the first (fastest kept)"
    )
    parser.add_argument("--no-spark", action="store_true", help="skip (e): no JVM")
    args = parser.parse_args()

    root = args.data_dir / f"log-dir-{args.size_mb}mb"
    say(f"bench: data {root}")
    started = time.perf_counter()
    marker = datagen.ensure(root, args.size_mb, log=say)
    say(f"bench: data ready ({time.perf_counter() - started:.1f} s): {marker['batches']:,} batches")
    files = measure.segment_files(root)
    measure.warm(files)

    results: dict[str, measure.Measurement] = {}
    say("bench: (a) limit: read + CRC-32C")
    results["limit"] = measure.best_of(args.repeat, "(a) read + CRC-32C (limit)", measure.limit(files))
    say("bench: (b) kafka-audit batch walk")
    results["walk"] = measure.best_of(args.repeat, "(b) kafka-audit batch walk", measure.walk(files))
    say("bench: (c) kafka-audit audit core")
    results["audit"] = measure.best_of(args.repeat, "(c) kafka-audit audit core", measure.audit(root))
    say("bench: (d) kafka-python decode")
    try:
        results["kafka_python"] = measure.best_of(
            args.repeat, "(d) kafka-python MemoryRecords", measure.kafka_python(files)
        )
    except ImportError as exc:
        say(f"bench: kafka-python not installed ({exc}); pip install -e '.[bench]'")
    if not args.no_spark:
        for master, key in (("local[1]", "spark1"), ("local[2]", "spark2")):
            say(f"bench: (e) kafka-audit scan --master {master} ({args.spark_repeat} scans after a first one)")
            warm, cold = measure.spark_scan(root, master, max(1, args.spark_repeat))
            warm.name, cold.name = f"(e) scan, Spark {master}", f"(e) scan, Spark {master}, cold"
            results[key], results[key + "_cold"] = warm, cold
    say(f"bench: peak RSS, one task auditing {datagen.large_segment(root).name} of {datagen.LARGE_TOPIC}-0")
    rss = measure.peak_rss(datagen.large_segment(root))

    figures = summarise(results, rss)
    print_report(args, marker, results, rss, figures)
    print(json.dumps(figures))


def summarise(results: dict[str, measure.Measurement], rss: dict) -> dict:
    def rate(key: str, records: bool = False) -> float | None:
        m = results.get(key)
        if m is None:
            return None
        return round(m.records_s if records else m.mb_s, 1)

    def ratio(a: float | None, b: float | None) -> float | None:
        return round(a / b, 2) if a and b else None

    figures = {
        "limit_mb_s": rate("limit"),
        "walk_mb_s": rate("walk"),
        "audit_mb_s": rate("audit"),
        "audit_records_s": rate("audit", records=True),
        "kafka_python_records_s": rate("kafka_python", records=True),
        "spark1_mb_s": rate("spark1"),
        "spark2_mb_s": rate("spark2"),
        "peak_rss_mb": round(rss["peak_rss_mb"], 1),
    }
    figures["walk_vs_limit"] = ratio(figures["walk_mb_s"], figures["limit_mb_s"])
    figures["audit_vs_kafka_python"] = ratio(figures["audit_records_s"], figures["kafka_python_records_s"])
    figures["spark2_vs_spark1"] = ratio(figures["spark2_mb_s"], figures["spark1_mb_s"])
    # Beyond the required keys: the same ratio for a session's first scan (Python workers' start).
    figures["spark2_vs_spark1_cold"] = ratio(rate("spark2_cold"), rate("spark1_cold"))
    return figures


def print_report(args, marker: dict, results: dict, rss: dict, figures: dict) -> None:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (math.nan,) * 3
    print()
    print(
        f"kafka-audit benchmark: {args.size_mb} MiB synthetic log dir, {marker['batches']:,} batches, "
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, load average {load[0]:.1f}"
    )
    header = f"{'measurement':<32} {'MB/s':>9} {'records/s':>12} {'wall s':>8} {'cpu s':>8}  note"
    print(header)
    print("-" * len(header))
    for m in results.values():
        cpu = "" if math.isnan(m.cpu_s) else f"{m.cpu_s:8.2f}"
        print(f"{m.name:<32} {m.mb_s:9.1f} {m.records_s:12,.0f} {m.wall_s:8.2f} {cpu:>8}  {m.note}")
    print(
        f"{'peak RSS, large segment task':<32} {rss['peak_rss_mb']:9.1f} MB for a {rss['segment_mb']:.0f} MB segment "
        f"(interpreter and imports: {rss['baseline_rss_mb']:.1f} MB)"
    )
    counts = {m.records for m in results.values()}
    if len(counts) > 1:
        print(f"warning: the measurements disagree on the record count: {sorted(counts)}")
    print()
    for key, threshold, description in TARGETS:
        value = figures.get(key)
        verdict = "n/a" if value is None else ("met" if value >= threshold else "MISSED")
        print(f"target {description}: {value} -> {verdict}")
    rss_ok = "met" if rss["peak_rss_mb"] < RSS_TARGET_MB else "MISSED"
    print(f"target peak RSS of a worker auditing a large segment < {RSS_TARGET_MB} MB: {rss['peak_rss_mb']:.0f} -> {rss_ok}")
    if args.size_mb < 1024:
        print(f"note: the Spark target is stated for the 1 GiB dir; this run used {args.size_mb} MiB")


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
