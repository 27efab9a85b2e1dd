#!/usr/bin/env python
"""kafka-audit's benchmark: how fast it is, side by side with the limits and with kafka-python.

    python bench/run.py --size-mb 1024        # from the repository root, in the project's env

1. Writes a synthetic broker log dir of ``--size-mb`` MiB under ``bench/data/`` with the fixture
   writer (see ``bench/datagen.py``), or reuses the one already there.
2. Measures, each as MB/s and records/s, on the same files (read from the page cache):
   (a) the limit: reading the files and computing CRC-32C over every batch body; (a') the
       same, every compressed payload also inflated (the limit of an audit that reads records);
   (b) kafka-audit's batch-level walk (FileRecords.batches: framing, header, CRC);
   (c) kafka-audit's audit core in one process (audit_in_process: every check, every record);
   (d) kafka-python decoding the same records (MemoryRecords iteration, CRCs checked);
   (e) ``kafka-audit scan`` through Spark ``local[1]`` and ``local[2]`` (one JVM each): the
       steady rate (a session's later scans) and, on its own row, a session's first scan, which
       also starts the Python workers;
   and the peak RSS of a process auditing the large segment as one task;
   (f) the command end to end (process start to exit): ``kafka-audit scan fixtures/`` with each
       engine, ``kafka-audit --help``, the CLI's import time (``python -X importtime``), and where
       a Spark scan's seconds go (imports, session start with and without the class-data archive,
       the job, the stop);
   (g) ``kafka-audit dump --records --print-data`` to /dev/null on segments of ~200-byte records
       (uncompressed and zstd, ``--dump-records`` each), against kafka-python decoding the same.
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

# Issues 6 and 14's targets: (figure, threshold, "min" or "max", description).
TARGETS = (
    ("walk_vs_limit", 0.85, "min", "batch-level walk >= 0.85 x the read+CRC limit"),
    ("audit_vs_inflate_limit", 0.7, "min", "audit core in process >= 0.7 x the read+CRC+inflate limit (issue 34)"),
    ("audit_vs_kafka_python", 4.0, "min", "full audit core >= 4 x kafka-python's decode (records/s)"),
    ("spark2_vs_spark1", 1.8, "min", "Spark local[2] >= 1.8 x local[1], steady"),
    ("scan_fixtures_local_s", 1.5, "max", "scan fixtures --engine local, end to end < 1.5 s"),
    ("help_s", 0.5, "max", "kafka-audit --help < 0.5 s"),
    ("scan_fixtures_spark_s", 6.6, "max", "scan fixtures (Spark), end to end <= 6.6 s"),
    ("dump_none_records_s", 330_000, "min", "dump --records --print-data >= 330,000 records/s, uncompressed"),
    ("dump_zstd_records_s", 400_000, "min", "dump --records --print-data >= 400,000 records/s, zstd"),
)
FIXTURES = HERE.parent / "fixtures"
RSS_TARGET_MB = 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=int, default=1024, help="size of the synthetic log dir in MiB (default 1024)")
    parser.add_argument("--data-dir", type=Path, default=HERE / "data", help="where generated dirs live")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each in-process measurement (fastest kept)")
    parser.add_argument(
        "--spark-repeat", type=int, default=3, help="scans per Spark master after the first (fastest kept)"
    )
    parser.add_argument("--no-spark", action="store_true", help="skip (e) and the Spark rows of (f): no JVM")
    parser.add_argument("--cli-repeat", type=int, default=3, help="runs of each end-to-end command (fastest kept)")
    parser.add_argument(
        "--dump-records", type=int, default=None, help="records per dump segment (default 500,000; 100,000 below 256 MiB)"
    )
    args = parser.parse_args()
    if args.dump_records is None:
        args.dump_records = 500_000 if args.size_mb >= 256 else 100_000

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
    say("bench: (a') limit: read + CRC-32C + inflate")
    results["inflate_limit"] = measure.best_of(
        args.repeat, "(a') read + CRC + inflate (limit)", measure.limit(files, inflate=True)
    )
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

    say("bench: (f) the command end to end")
    cli = measure_cli(args)
    say("bench: (g) dump --records --print-data")
    dumps = measure_dump(args)

    figures = summarise(results, rss)
    figures.update(cli)
    for codec, (ours, theirs) in dumps.items():
        figures[f"dump_{codec}_records_s"] = round(ours.records_s)
        figures[f"kafka_python_{codec}_records_s"] = round(theirs.records_s)
        figures[f"dump_{codec}_vs_kafka_python"] = round(ours.records_s / theirs.records_s, 2)
    print_report(args, marker, results, rss, figures, cli, dumps)
    print(json.dumps(figures))


def measure_cli(args) -> dict:
    """(f): end-to-end seconds of the commands, the import time, the Spark start-up breakdown."""
    figures = {
        "cli_import_s": round(measure.import_time(), 3),
        "help_s": round(measure.command(["--help"], 5), 3),
        "scan_fixtures_local_s": round(
            measure.command(["scan", str(FIXTURES), "--engine", "local", "--format", "json"], args.cli_repeat), 2
        ),
    }
    if not args.no_spark:
        # The first Spark run of a new Java or PySpark records the class archive (its JVM writes it
        # after the command): run once so that the timed runs use it.
        measure.command(["scan", str(FIXTURES), "--format", "json"], 1)
        figures["scan_fixtures_spark_s"] = round(
            measure.command(["scan", str(FIXTURES), "--format", "json"], args.cli_repeat), 2
        )
        for sharing in (True, False):
            marks = measure.spark_startup(FIXTURES, sharing, args.cli_repeat)
            key = "spark_start_with_archive" if sharing else "spark_start_without_archive"
            figures[key] = {k: round(v, 2) for k, v in marks.items() if k.endswith("_s")}
    return figures


def measure_dump(args) -> dict:
    """(g): per codec, (kafka-audit dump, kafka-python) on the same segment."""
    out = {}
    for codec in datagen.DUMP_CODECS:
        segment = datagen.ensure_dump_segment(args.data_dir, codec, args.dump_records, log=say)
        measure.warm([segment])
        ours = measure.dump_rate(segment, args.dump_records, args.cli_repeat)
        ours.name = f"(g) dump --print-data, {codec}"
        theirs = measure.best_of(args.repeat, f"(g) kafka-python, {codec}", measure.kafka_python_records(segment))
        if theirs.records != args.dump_records:
            raise SystemExit(f"bench: kafka-python reads {theirs.records} records in {segment}")
        out[codec] = (ours, theirs)
    return out


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
        "inflate_limit_mb_s": rate("inflate_limit"),
        "walk_mb_s": rate("walk"),
        "audit_mb_s": rate("audit"),
        "audit_records_s": rate("audit", records=True),
        "kafka_python_records_s": rate("kafka_python", records=True),
        "spark1_mb_s": rate("spark1"),
        "spark2_mb_s": rate("spark2"),
        "peak_rss_mb": round(rss["peak_rss_mb"], 1),
    }
    figures["walk_vs_limit"] = ratio(figures["walk_mb_s"], figures["limit_mb_s"])
    figures["audit_vs_inflate_limit"] = ratio(figures["audit_mb_s"], figures["inflate_limit_mb_s"])
    audit = results.get("audit")
    if audit is not None and not math.isnan(audit.cpu_s):
        figures["audit_cpu_s_per_gb"] = round(audit.cpu_s / (audit.bytes / 1e9), 2)
    figures["audit_vs_kafka_python"] = ratio(figures["audit_records_s"], figures["kafka_python_records_s"])
    figures["spark2_vs_spark1"] = ratio(figures["spark2_mb_s"], figures["spark1_mb_s"])
    # Beyond the required keys: the same ratio for a session's first scan (Python workers' start).
    figures["spark2_vs_spark1_cold"] = ratio(rate("spark2_cold"), rate("spark1_cold"))
    return figures


def print_report(args, marker: dict, results: dict, rss: dict, figures: dict, cli: dict, dumps: dict) -> None:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (math.nan,) * 3
    print()
    print(
        f"kafka-audit benchmark: {args.size_mb} MiB synthetic log dir, {marker['batches']:,} batches, "
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, load average {load[0]:.1f}"
    )
    header = f"{'measurement':<32} {'MB/s':>9} {'records/s':>12} {'wall s':>8} {'cpu s':>8}  note"
    print(header)
    print("-" * len(header))
    rows = list(results.values()) + [m for pair in dumps.values() for m in pair]
    for m in rows:
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
    print("(f) the command, process start to exit (fastest run):")
    print(f"  import kafka_audit.cli.app                 {cli['cli_import_s']:6.3f} s")
    print(f"  kafka-audit --help                     {cli['help_s']:6.3f} s")
    audit, decode = results["audit"], results.get("kafka_python")
    if decode is not None:
        print(
            f"  audit core per CPU second: {audit.records / audit.cpu_s:,.0f} records, "
            f"{(audit.records / audit.cpu_s) / (decode.records / decode.cpu_s):.2f}x kafka-python's"
        )
    print(f"  scan fixtures/ --engine local          {cli['scan_fixtures_local_s']:6.2f} s")
    if "scan_fixtures_spark_s" in cli:
        print(f"  scan fixtures/ (Spark, local[*])       {cli['scan_fixtures_spark_s']:6.2f} s")
        for key, label in (("spark_start_with_archive", "with"), ("spark_start_without_archive", "without")):
            marks = cli[key]
            print(
                f"  Spark scan {label} the class archive: imports {marks['imports_s']:.2f} s, session "
                f"{marks['session_s']:.2f} s, job {marks['scan_s']:.2f} s, stop {marks['stop_s']:.2f} s, "
                f"total {marks['total_s']:.2f} s"
            )
    for codec, (ours, theirs) in dumps.items():
        print(
            f"  dump {codec}: {ours.records_s:,.0f} records/s, {ours.records_s / theirs.records_s:.2f}x kafka-python "
            f"(per CPU second: {ours.records / ours.cpu_s:,.0f} against {theirs.records / theirs.cpu_s:,.0f}, "
            f"{(ours.records / ours.cpu_s) / (theirs.records / theirs.cpu_s):.2f}x)"
        )
    print()
    for key, threshold, kind, description in TARGETS:
        value = figures.get(key)
        met = value is not None and (value >= threshold if kind == "min" else value <= threshold)
        verdict = "n/a" if value is None else ("met" if met else "MISSED")
        print(f"target {description}: {value} -> {verdict}")
    rss_ok = "met" if rss["peak_rss_mb"] < RSS_TARGET_MB else "MISSED"
    print(f"target peak RSS of a worker auditing a large segment < {RSS_TARGET_MB} MB: {rss['peak_rss_mb']:.0f} -> {rss_ok}")
    if args.size_mb < 1024:
        print(f"note: the audit and Spark targets are stated for the 1 GiB dir; this run used {args.size_mb} MiB")


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
