#!/usr/bin/env python
"""The v2 record decoder (``default_record.decode_records``) of two trees of kafka-audit, side by
side: CPU nanoseconds per record on payloads of a few shapes (issue 33).

    python bench/decode_records_ab.py --before /tmp/house-before --after . --rounds 5

``decode_records`` reads the records dump prints, the batches the compiled screen refuses and
control batches. Each payload is 200 records written by this tree's ``encode_record`` (the same
bytes for both trees). Each tree runs in its own child process (``sys.path`` starting at the
tree); the rounds alternate the trees, and each round keeps the best of 3 timings of each
(the machine is shared). Prints per shape and mode the median of the rounds and the
after/before ratio of those medians; both trees must decode the same records.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

RECORDS = 200
# (label, key, value size, headers): keys and values of a few bytes, of 100 (two-byte lengths),
# and with two headers.
SHAPES = (("10 B values", b"key", 10, ()), ("100 B values", b"key", 100, ()),
          ("100 B values, 2 headers", b"key", 100, (("a", b"x"), ("b", b"yy"))))

CHILD = """
import hashlib, json, sys, time, timeit
sys.path.insert(0, sys.argv[1])
count = int(sys.argv[2])
from kafka_audit.record.default_record import decode_records
payloads = json.loads(sys.stdin.read())
out = {}
for label, hex_data in payloads.items():
    data = bytes.fromhex(hex_data)
    for with_data in (True, False):
        decoded = decode_records(data, 0, 0, count, None, with_data)
        assert decoded.error is None, decoded.error
        digest = hashlib.sha256(repr(decoded.records).encode()).hexdigest()
        best = min(timeit.repeat(lambda: decode_records(data, 0, 0, count, None, with_data),
                                 timer=time.process_time, number=50, repeat=3))
        out[f"{label}, {'with data' if with_data else 'sizes only'}"] = (best / 50 / count * 1e9, digest)
print(json.dumps(out))
"""


def payloads() -> dict[str, str]:
    from kafka_audit.record.default_record import encode_record

    return {
        label: b"".join(encode_record(0, i * 37, i, key, b"v" * size, headers) for i in range(RECORDS)).hex()
        for label, key, size, headers in SHAPES
    }


def once(tree: Path, data: str) -> dict[str, list]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(tree), str(RECORDS)], input=data, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    data = json.dumps(payloads())
    runs: dict[str, list[dict[str, list]]] = {"before": [], "after": []}
    for _ in range(args.rounds):
        for name, tree in (("before", args.before), ("after", args.after)):
            runs[name].append(once(tree.resolve(), data))
    figures = {}
    for case in runs["after"][0]:
        digests = {run[case][1] for name in runs for run in runs[name]}
        assert len(digests) == 1, f"{case}: the trees decode different records"
        before = statistics.median(run[case][0] for run in runs["before"])
        after = statistics.median(run[case][0] for run in runs["after"])
        figures[case] = {"before_ns": round(before), "after_ns": round(after), "after_over_before": round(after / before, 3)}
        print(f"{case:40} before {before:7.0f} ns  after {after:7.0f} ns  after/before {after / before:.3f}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
