"""How fast ``--broker-log`` files are read (kafka_audit/io/broker_log.py): prints lines/s and
MB/s for a synthetic ``server.log`` (plain and gzip).

    python bench/broker_log.py --lines 1000000

The file mixes what a busy broker logs: mostly INFO lines of other kinds (rolls, snapshots,
fetcher and coordinator lines, taken from the real 3.6.2 logs of the test corpus), one produce
error with its stack trace every 1,000 lines, one retention pair every 500 lines. Deterministic
(no clock, no randomness); written under ``bench/data/`` (in ``.gitignore``).
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafka_audit.io.broker_log import read_broker_logs  # noqa: E402

NOISE = (
    "[{t}] INFO [LocalLog partition=ret-{p}, dir=/var/lib/kafka/data] Rolled new log segment at offset {n} in 4 ms. (kafka.log.LocalLog)",
    "[{t}] INFO [ProducerStateManager partition=ret-{p}]Wrote producer snapshot at offset {n} with 1 producer ids in 2 ms. (org.apache.kafka.storage.internals.log.ProducerStateManager)",
    "[{t}] INFO [ReplicaFetcherManager on broker 1] Removed fetcher for partitions Set(ret-{p}) (kafka.server.ReplicaFetcherManager)",
    "[{t}] INFO [GroupCoordinator 1]: Member consumer-{n} in group g has left, removing it from the group (kafka.coordinator.group.GroupCoordinator)",
)
ERROR = (
    "[{t}] ERROR [ReplicaManager broker=1] Error processing append operation on partition ret-{p} (kafka.server.ReplicaManager)\n"
    "org.apache.kafka.common.errors.OutOfOrderSequenceException: Out of order sequence number for producer {n} at offset {n} "
    "in partition ret-{p}: 12 (incoming seq. number), 10 (current end sequence number)\n"
    "\tat org.apache.kafka.storage.internals.log.ProducerAppendInfo.checkSequence(ProducerAppendInfo.java:194)\n"
    "\tat kafka.log.UnifiedLog.append(UnifiedLog.scala:1068)"
)
RETENTION = (
    "[{t}] INFO [UnifiedLog partition=ret-{p}, dir=/var/lib/kafka/data] Deleting segment LogSegment(baseOffset={n}, size=16273, "
    "lastModifiedTime=1795423866272, largestRecordTimestamp=Some(1795423866058)) due to log retention size 65536 breach. "
    "Log size after deletion will be 392652. (kafka.log.UnifiedLog)\n"
    "[{t}] INFO [UnifiedLog partition=ret-{p}, dir=/var/lib/kafka/data] Incremented log start offset to {n} due to segment "
    "deletion (kafka.log.UnifiedLog)"
)


def write_log(path: Path, count: int) -> None:
    with open(path, "w") as handle:
        for n in range(count):
            stamp = f"2026-11-23 {8 + n // 3_600_000 % 16:02d}:{n // 60_000 % 60:02d}:{n // 1000 % 60:02d},{n % 1000:03d}"
            template = ERROR if n % 1000 == 999 else RETENTION if n % 500 == 250 else NOISE[n % len(NOISE)]
            handle.write(template.format(t=stamp, p=n % 12, n=n) + "\n")


def measure(path: Path) -> tuple[float, int]:
    started = time.perf_counter()
    log = read_broker_logs([str(path)])
    return time.perf_counter() - started, len(log.lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--data-dir", type=Path, default=Path(__file__).resolve().parent / "data")
    args = parser.parse_args()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    plain = args.data_dir / f"server-{args.lines}.log"
    if not plain.exists():
        write_log(plain, args.lines)
    packed = plain.with_suffix(".log.gz")
    if not packed.exists():
        with open(plain, "rb") as source, gzip.open(packed, "wb") as target:
            target.write(source.read())
    with open(plain) as lines:
        physical = sum(1 for _ in lines)
    for name, path in (("plain", plain), ("gzip", packed)):
        seconds, kept = measure(path)
        size = os.path.getsize(plain) / 1e6
        print(
            f"{name:5}  {physical:,} lines ({size:.1f} MB text) in {seconds:.2f} s: "
            f"{physical / seconds:,.0f} lines/s, {size / seconds:.1f} MB/s; {kept:,} lines of interest"
        )


if __name__ == "__main__":
    main()
