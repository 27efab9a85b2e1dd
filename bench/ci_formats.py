"""How long the CI formats take and how large they get on a scan with many findings (issue 24).

``python bench/ci_formats.py --findings 100000`` builds that many findings (a partition's worth of
out-of-order sequences, the most common finding of a damaged log, spread over 100 partitions),
gives them their fingerprints as a scan does, and writes each CI format once: wall seconds, bytes,
and for SARIF the gzip size GitHub's 10 MB limit counts and the results kept.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time

from kafka_audit import __version__
from kafka_audit.audit.results import ScanResult
from kafka_audit.report.ci_formats import github, gitlab, junit, sarif
from kafka_audit.rules.findings import assign_fingerprints, make_finding


def synthetic(count: int, partitions: int = 100) -> ScanResult:
    findings = []
    for number in range(count):
        partition, offset = number % partitions, 1000 + 3 * (number // partitions)
        findings.append(
            make_finding(
                "out_of_order_sequence" if number % 10 else "crc_mismatch",
                f"Out of order sequence number for producer {number} at offset {offset} in partition orders-{partition}",
                topic="orders", partition=partition, segment=f"orders-{partition}/00000000000000000000.log",
                position=offset * 80, offset=offset, details={"expected_sequence": number},
            )
        )
    findings.sort(key=lambda f: f.sort_key)
    assign_fingerprints(findings)
    summary = {"paths": ["captured-logs"], "partitions": partitions}
    return ScanResult(findings, summary, partitions=[("orders", p) for p in range(partitions)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--findings", type=int, default=100_000)
    args = parser.parse_args()
    result = synthetic(args.findings)
    writers = {
        "sarif": lambda: sarif.to_sarif(result, __version__),
        "junit": lambda: junit.to_junit(result, "error"),
        "github": lambda: github.to_github(result),
        "github step summary": lambda: github.step_summary(result, "error", github.STEP_SUMMARY_LIMIT),
        "gitlab": lambda: gitlab.to_gitlab(result),
    }
    print(f"{args.findings:,} findings")
    for name, write in writers.items():
        started = time.perf_counter()
        text = write()
        wall = time.perf_counter() - started
        size = len(text.encode("utf-8"))
        line = f"{name:20s} {wall:7.2f} s {size / 1e6:9.2f} MB"
        if name == "sarif":
            kept = len(json.loads(text)["runs"][0]["results"])
            line += f"  gzip {len(gzip.compress(text.encode('utf-8'))) / 1e6:.2f} MB, {kept:,} results kept"
        print(line)


if __name__ == "__main__":
    main()
