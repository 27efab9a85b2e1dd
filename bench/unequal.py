#!/usr/bin/env python
"""Very unequal partitions against balanced ones (issue 25 item 4): does the plan split the big
partition's segments, and does the wall time stay within 1.3x of the balanced case?

    python bench/unequal.py --size-mb 1024 --rounds 2

Two log dirs of the same total size S (``--size-mb``), written once under ``bench/data/`` with the
fixture writer and reused (a marker file with a layout version, as ``datagen.ensure`` does):

- ``unequal``: 1,000 tiny partitions ``tiny-0..tiny-999`` of one small segment each (batches are
  appended until it holds at least :data:`TINY_BYTES`), beside one partition ``big-0``
  that takes the rest of S in segments of Kafka's default ``segment.bytes`` (1 GiB: one segment
  when S is 1 GiB).
- ``balanced``: 1,001 partitions ``even-0..even-1000``; each batch goes to the smallest partition so
  far until the dir holds S, so their sizes differ by at most one transaction.

Both are cut from the same stream of batches (:func:`_batches`, seeded, no clock): datagen's record
mix (1-64 records of a 12-byte key and a 100-1000 byte JSON-like value), codecs cycling
none/lz4/zstd, every other batch from a transactional producer (1 in 8 of its transactions
aborted); only how the batches are dealt to partitions differs.

Printed once: the plan of the unequal dir (``plan_tasks`` with the default ``split_bytes``): the
tasks of ``big-0`` and their bytes (a segment above 1.5x ``split_bytes`` is cut into byte ranges
at batch boundaries). Then one JSON line per round: per layout and engine (the in-process audit,
the fastest of three; Spark ``local[2]``, the fastest of three steady scans of one session, in a
subprocess, as ``bench/engines.py`` runs them) the wall seconds, MB/s and CPU seconds per GB, the
load average before and after each layout's turn, and per engine the ratio of the unequal dir's
wall time to the balanced one's (target: at most 1.3). Within a round each engine scans both dirs
back to back, their order alternating between rounds, so the ratio is taken between neighbouring
runs on a shared machine.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import json
import os
import random
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import datagen  # noqa: E402
import engines  # noqa: E402
import measure  # noqa: E402

from tests.support.writer import LogDirWriter, PartitionWriter, Producer  # noqa: E402

# Bump when a layout changes: a dir written by another version is regenerated.
LAYOUT_VERSION = 2
LAYOUTS = ("unequal", "balanced")
TINY_PARTITIONS = 1000
TINY_BYTES = 4 << 10
CODECS = (datagen.NONE, datagen.LZ4, datagen.ZSTD)


def _batches() -> Iterator[tuple[int, tuple]]:
    """(turn, records) of every batch both layouts are cut from, in order."""
    rng = random.Random(20240625)
    pool = datagen._value_pool(random.Random(1), 1 << 20)
    serial = 0
    for turn in itertools.count(1):
        count = rng.randint(*datagen.RECORDS_PER_BATCH)
        yield turn, datagen._records(rng, pool, count, serial, False)
        serial += count


def _append(writer: PartitionWriter, producers: tuple[Producer, Producer], batch: tuple[int, tuple]) -> int:
    """Append one batch of the stream (and its transaction marker); the bytes it added."""
    turn, recs = batch
    producer = producers[turn % 2]
    before = datagen._partition_size(writer)
    codec = CODECS[turn % 3]
    datagen.send(producer, writer, recs, codec, abort=turn % 16 == 1)
    return datagen._partition_size(writer) - before


def _write_unequal(out: LogDirWriter, target: int, producers, batches) -> None:
    total = 0
    for p in range(TINY_PARTITIONS):
        tiny = out.partition("tiny", p)
        while datagen._partition_size(tiny) < TINY_BYTES:
            total += _append(tiny, producers, next(batches))
    big = out.partition("big", 0)  # segment.bytes: Kafka's default, 1 GiB
    while total < target:
        total += _append(big, producers, next(batches))


def _write_balanced(out: LogDirWriter, target: int, producers, batches) -> None:
    """Each batch to the smallest partition so far (the lowest number among equals)."""
    sizes = [(0, p, out.partition("even", p)) for p in range(TINY_PARTITIONS + 1)]
    total = 0
    while total < target:
        size, p, writer = sizes[0]
        added = _append(writer, producers, next(batches))
        heapq.heapreplace(sizes, (size + added, p, writer))
        total += added


def generate(root: Path, size_mb: int, layout: str) -> dict:
    """Write the ``layout`` dir of ``size_mb`` MiB at ``root`` (replacing it); its marker."""
    tmp = root.with_name(root.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    producers = (Producer(3000), Producer(3001, transactional=True))
    write = _write_unequal if layout == "unequal" else _write_balanced
    with LogDirWriter(tmp) as out:
        write(out, size_mb << 20, producers, _batches())
        sizes = [datagen._partition_size(w) for w in out.partitions.values()]
    marker = {"layout_version": LAYOUT_VERSION, "layout": layout, "size_mb": size_mb, "partitions": len(sizes),
              "bytes": sum(sizes), "largest_partition": max(sizes), "smallest_partition": min(sizes)}
    (tmp / datagen.MARKER).write_text(json.dumps(marker) + "\n")
    shutil.rmtree(root, ignore_errors=True)
    os.replace(tmp, root)
    return marker


def ensure(root: Path, size_mb: int, layout: str) -> dict:
    """The marker of the ``layout`` dir at ``root``, writing the dir first unless a complete one is there."""
    try:
        marker = json.loads((root / datagen.MARKER).read_text())
    except (OSError, ValueError):
        marker = {}
    wanted = {"layout_version": LAYOUT_VERSION, "layout": layout, "size_mb": size_mb}
    if any(marker.get(key) != value for key, value in wanted.items()):
        print(f"  writing the {layout} dir of {size_mb} MiB at {root}", flush=True)
        marker = generate(root, size_mb, layout)
    return marker


def big_plan(root: Path) -> dict:
    """How ``plan_tasks`` (default ``split_bytes``) cuts ``big-0`` of the unequal dir."""
    from kafka_audit.audit.plan import plan_tasks
    from kafka_audit.audit.scan_options import DEFAULT_SPLIT_BYTES
    from kafka_audit.log.log_dir import discover

    tasks = plan_tasks(discover([str(root)]))
    big = sorted((t for t in tasks if t.topic == "big"), key=lambda t: (t.file.base_offset, t.start))
    return {"plan": "unequal", "split_bytes": DEFAULT_SPLIT_BYTES, "split_above_bytes": DEFAULT_SPLIT_BYTES * 3 // 2,
            "big_segment_bytes": sorted({t.file.size for t in big}), "big_tasks": len(big),
            "big_task_bytes": [t.byte_count for t in big], "tiny_tasks": len(tasks) - len(big)}


def one_round(number: int, roots: dict[str, Path]) -> dict:
    """Each engine scans both dirs back to back (the order alternating between rounds)."""
    order = LAYOUTS if number % 2 else LAYOUTS[::-1]
    scans = {"in-process": engines.in_process, "local[2]": lambda root: engines.spark(root, "local[2]")}
    layouts: dict[str, dict] = {layout: {"load_before": None, "rows": []} for layout in LAYOUTS}
    walls: dict[str, dict[str, float]] = {}
    for engine, scan in scans.items():
        for layout in order:
            entry = layouts[layout]
            entry["load_before"] = entry["load_before"] or engines.load()
            figures = scan(roots[layout])
            entry["rows"].append(engines.row(engine, figures))
            entry["load_after"] = engines.load()
            walls.setdefault(engine, {})[layout] = figures["wall_s"]
    ratios = {engine: round(wall["unequal"] / wall["balanced"], 3) for engine, wall in walls.items()}
    return {"round": number, "order": list(order), "layouts": layouts, "unequal_vs_balanced_wall": ratios}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--data-dir", type=Path, default=engines.HERE / "data")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    roots = {layout: args.data_dir / f"{layout}-{args.size_mb}mb" for layout in LAYOUTS}
    for layout, root in roots.items():
        marker = ensure(root, args.size_mb, layout)
        print(json.dumps({"dir": str(root), **marker}), flush=True)
        measure.warm(measure.segment_files(root))
    print(json.dumps(big_plan(roots["unequal"])), flush=True)
    for number in range(1, args.rounds + 1):
        print(json.dumps(one_round(number, roots)), flush=True)


if __name__ == "__main__":
    main()
