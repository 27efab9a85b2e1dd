"""How long ``kafka-audit report`` takes to write its HTML document, and how large it is.

    python bench/report.py [DIR] [--repeat 3] [--size-mb 1024] [--cli]

DIR defaults to the 1 GiB synthetic log dir of ``bench/run.py`` (generated first when absent,
as ``bench/run.py`` does). The audit runs once in this process (the local engine, with the
timeline events the report needs); then the document is rendered and written ``--repeat``
times (best kept): the time to write it is the report's own cost on top of the audit. With
``--cli`` the whole command (``kafka-audit report DIR --engine local``) is also timed once.
Prints the audit's counts, the document's size against its cap, the limits it was written
with, and the times.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
for path in (REPO, REPO / "bench"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import datagen  # noqa: E402

from kafka_audit.audit.scan_options import scan_options  # noqa: E402
from kafka_audit.engines.local import audit_in_process  # noqa: E402
from kafka_audit.log.log_dir import discover  # noqa: E402
from kafka_audit.report.html import MAX_REPORT_BYTES, write_report  # noqa: E402
from kafka_audit.report.html.evidence import segment_files  # noqa: E402
from kafka_audit.report.views import ReportFilter, finish_views  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", nargs="?", type=Path, help="log dir (default: the bench dir of --size-mb)")
    parser.add_argument("--size-mb", type=int, default=1024, help="size of the generated bench dir (default 1024)")
    parser.add_argument("--repeat", type=int, default=3, help="renders of the document (fastest kept)")
    parser.add_argument("--cli", action="store_true", help="also time the whole command once")
    args = parser.parse_args()
    root = args.dir or REPO / "bench" / "data" / f"log-dir-{args.size_mb}mb"
    if args.dir is None:
        datagen.ensure(root, args.size_mb)
    started = time.perf_counter()
    result = audit_in_process(discover([str(root)]), scan_options(timeline=True))
    audit_s = time.perf_counter() - started
    keep = ReportFilter()
    finish_views(result, keep)
    print(f"dir {root}: {result.summary['batches']:,} batches, {len(result.producers):,} producers, "
          f"{len(result.events):,} events, {len(result.findings):,} findings; audit {audit_s:.2f} s")
    segments = segment_files([str(root)], {f.segment for f in result.findings if f.segment})
    best = None
    with tempfile.TemporaryDirectory() as work:
        target = Path(work) / "report.html"
        for _ in range(args.repeat):
            started = time.perf_counter()
            stats = write_report(target, result, keep, segment_paths=segments)
            took = time.perf_counter() - started
            best = took if best is None else min(best, took)
        print(f"document: {stats.bytes:,} bytes (cap {MAX_REPORT_BYTES:,}), {stats.charts} charts, limits {stats.limits}")
        print(f"time to write the document: {best:.2f} s (best of {args.repeat})")
        if args.cli:
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "kafka_audit", "report", str(root), "--engine", "local",
                                   "--quiet", "--output", str(target)], capture_output=True, text=True, check=False)
            print(f"kafka-audit report --engine local: exit {done.returncode}, {time.perf_counter() - started:.2f} s "
                  f"wall; {done.stderr.strip()}")


if __name__ == "__main__":
    main()
