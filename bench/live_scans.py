"""100 scans of a live partition on both engines (issue 30 item 1; tests/test_live.py runs 15 + 3).

A real writer process (tests/support/live_writer.py) appends v2 batches of every codec to the
newest segment, a fourth of them in two halves with a pause between, while scans run one after
another: in this process (``--engine local``'s audit) and on a Spark session. Each scan is then
compared with a scan of the finished copy cut at the size that scan listed. Printed: scans per
engine, error findings (must be 0), scans whose findings differ from their copy's (must be 0),
incomplete tails seen (info while the file grew, warning otherwise), scans that saw the file
change, and the CPU and wall seconds.

    python bench/live_scans.py [--local 85] [--spark 15]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from kafka_audit.audit.scan_options import ScanOptions  # noqa: E402
from kafka_audit.engines.local import audit_in_process  # noqa: E402
from kafka_audit.log.log_dir import discover  # noqa: E402
from tests.support.live_writer import FOLDER, LiveWriter, build_log_dir, copy_at, newest_segment  # noqa: E402


def _key(finding) -> tuple:
    details = finding.details
    return (finding.check, finding.segment, finding.position, finding.offset, details.get("bytes"),
            details.get("truncate_to_offset"))


def _run(engine: str, count: int, work: Path, spark=None) -> dict:
    root = work / engine / "data"
    offset = build_log_dir(root)
    writer = LiveWriter(root, offset, count=100_000, pause_s=0.002).start()
    newest = f"{FOLDER}/{newest_segment(root).name}"
    scans = []
    wall, cpu = time.monotonic(), time.process_time()
    try:
        for _ in range(count):
            found = discover([str(root)])
            if spark is None:
                result = audit_in_process(found, ScanOptions())
            else:
                from kafka_audit.engines.spark_job import run_scan

                result = run_scan(spark, found, ScanOptions())
            scans.append((result, result.summary["segment_bytes"][newest]["found"]))
    finally:
        writer.stop()
    wall, cpu = time.monotonic() - wall, time.process_time() - cpu
    tails: Counter = Counter()
    differ = errors = changed = 0
    for number, (result, size) in enumerate(scans):
        errors += sum(f.severity == "error" for f in result.findings)
        changed += bool(result.summary["files_changed"])
        tails.update(f.severity for f in result.findings if f.check == "incomplete_tail")
        copy = copy_at(root, work / engine / f"copy-{number}" / "data", size)
        still = audit_in_process(discover([str(copy)]), ScanOptions())
        differ += sorted(map(_key, result.findings)) != sorted(map(_key, still.findings))
        shutil.rmtree(copy.parent)
    return {
        "engine": engine, "scans": count, "error_findings": errors, "differ_from_finished_copy": differ,
        "incomplete_tail": dict(tails), "scans_seeing_files_changed": changed,
        "distinct_listed_sizes": len({size for _, size in scans}), "wall_s": round(wall, 1),
        "driver_cpu_s": round(cpu, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--local", type=int, default=85)
    parser.add_argument("--spark", type=int, default=15)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="live-scans-") as work:
        if args.local:
            rows.append(_run("local", args.local, Path(work)))
            print(json.dumps(rows[-1]), flush=True)
        if args.spark:
            from kafka_audit.engines.spark_session import create_spark_session

            scratch = Path(work) / "spark"
            scratch.mkdir()
            spark = create_spark_session("local[2]", {"spark.default.parallelism": "2"}, str(scratch))
            try:
                rows.append(_run("spark", args.spark, Path(work), spark))
                print(json.dumps(rows[-1]), flush=True)
            finally:
                spark.stop()
    total = sum(r["scans"] for r in rows)
    print(f"scans {total}, error findings {sum(r['error_findings'] for r in rows)}, "
          f"differing from the finished copy {sum(r['differ_from_finished_copy'] for r in rows)}, "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB")


if __name__ == "__main__":
    main()
