"""Replicas side by side (SPEC section 6), in CPU seconds: a scan of three replicas of the bench
log dir (three brokers' log dirs, each a hard-linked copy of the same data with its own
meta.properties: identical replicas, the comparison walks every batch digest) against a scan of
one replica, in process (``audit_in_process``), best of ``--repeat``.

    python bench/replicas.py [--size-mb 1024] [--repeat 2]

Prints both CPU times and their ratio: 3.0 is three scans and a free comparison; above it, what
digesting and comparing the replicas costs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import datagen  # noqa: E402

from kafka_audit.audit.scan_options import ScanOptions  # noqa: E402
from kafka_audit.engines.local import audit_in_process  # noqa: E402
from kafka_audit.log.log_dir import discover  # noqa: E402

DATA = REPO / "bench" / "data"


def replica_dirs(source: Path, target: Path, count: int = 3) -> list[str]:
    """``count`` brokers' log dirs holding ``source``'s files (hard links), node ids 1..count."""
    if not (target / f"broker-{count}" / "meta.properties").is_file():
        shutil.rmtree(target, ignore_errors=True)
        for node in range(1, count + 1):
            broker = target / f"broker-{node}"
            for folder, _, files in os.walk(source):
                here = broker / Path(folder).relative_to(source)
                here.mkdir(parents=True, exist_ok=True)
                for name in files:
                    if name not in ("meta.properties", datagen.MARKER):
                        os.link(Path(folder) / name, here / name)
            (broker / "meta.properties").write_text(f"version=1\ncluster.id=YmVuY2gtcmVwbGljYXM\nnode.id={node}\n")
    return [str(target / f"broker-{node}") for node in range(1, count + 1)]


def cpu_seconds(paths: list[str], repeat: int) -> tuple[float, dict]:
    best, summary = float("inf"), {}
    for _ in range(repeat):
        started = time.process_time()
        result = audit_in_process(discover(paths), ScanOptions())
        best = min(best, time.process_time() - started)
        summary = result.summary
    return best, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    source = DATA / f"log-dir-{args.size_mb}mb"
    datagen.ensure(source, args.size_mb)
    brokers = replica_dirs(source, DATA / f"replicas-{args.size_mb}mb")
    one, single = cpu_seconds(brokers[:1], args.repeat)
    three, triple = cpu_seconds(brokers, args.repeat)
    print(f"one replica:    {one:8.2f} s CPU  {single['bytes'] / 1e6:9.1f} MB  {single['batches']:>9,} batches")
    print(f"three replicas: {three:8.2f} s CPU  {triple['bytes'] / 1e6:9.1f} MB  {triple['batches']:>9,} batches  "
          f"replica_sets={triple['replica_sets']}  findings={triple['findings_by_check']}")
    print(f"ratio three/one: {three / one:.2f}  (per replica {three / one / 3:.2f}x a single-replica scan)")


if __name__ == "__main__":
    main()
