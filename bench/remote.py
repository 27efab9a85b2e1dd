#!/usr/bin/env python
"""kafka-audit on S3: the scan rate of an ``s3://`` copy against s3fs's raw ranged reads of it.

    python bench/remote.py --size-mb 256       # from the repository root, in the project's env

1. Writes (or reuses) the synthetic log dir of ``bench/run.py`` (``bench/datagen.py``).
2. Starts a local S3 API server (moto's server mode on 127.0.0.1, stopped by its PID at the end)
   and uploads the dir to it.
3. Measures, as MB/s of ``.log`` bytes, fastest of ``--repeat`` runs, for the whole dir (many
   1 MiB segments: request-bound) and for ``bench.large-0`` alone (one large segment: transfer-bound):
   (r) raw: s3fs reading every segment object in ranged GETs of the reader's chunk size, one after
       the other, sizes from one listing: what the server and the client library can deliver;
       (r') the same over every object the scan reads (segments and their sidecars), the rate
       still counting the segments' bytes;
   (s) the audit core over ``s3://`` (``audit_in_process``, every check, every record);
   (l) the audit core over the local dir (page cache), as ``bench/run.py`` (c).
4. Prints the figures and, as its last line, one JSON object: for ``dir`` and ``large``,
   ``<k>_raw_s3_mb_s``, ``<k>_raw_s3_all_objects_mb_s``, ``<k>_s3_scan_mb_s``,
   ``<k>_local_scan_mb_s``, ``<k>_s3_scan_vs_raw`` and ``<k>_s3_scan_vs_raw_all_objects``
   (target >= 0.8).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import datagen  # noqa: E402
import measure  # noqa: E402

from kafka_audit.audit.scan_options import ScanOptions  # noqa: E402
from kafka_audit.engines.local import audit_in_process  # noqa: E402
from kafka_audit.io.storage import StorageSettings  # noqa: E402
from kafka_audit.io.storage_context import StorageContext  # noqa: E402
from kafka_audit.log.log_dir import discover  # noqa: E402
from kafka_audit.record.range_buffer import CHUNK_BYTES  # noqa: E402
from tests.support.s3_server import S3Server, upload_tree  # noqa: E402

TARGET = 0.8
BUCKET = "bench"


def raw_reads(fs, sizes: dict[str, int], counted: set[str]):
    """s3fs's own ranged reads of every object in ``sizes`` (sizes from one listing, as the scan
    has them), ``CHUNK_BYTES`` per GET, in order; the rate counts the bytes of the ``counted``
    objects (the segments)."""

    def run():
        total = 0
        for key, size in sizes.items():
            for start in range(0, size, CHUNK_BYTES):
                data = fs.cat_file(key, start=start, end=min(size, start + CHUNK_BYTES))
                total += len(data) if key in counted else 0
        return total, 0, f"{len(sizes)} objects"

    return run


def scan(path: str, storage_options: dict | None):
    def run():
        with StorageContext(StorageSettings.of(storage_options)) as request:
            result = audit_in_process(discover([path], storage=request), ScanOptions())
        return result.summary["bytes"], result.summary["records"], f"{len(result.findings)} findings"

    return run


def measure_s3(fs, server, root: Path, prefix: str, repeat: int, label: str) -> dict:
    """Raw reads of the segments, raw reads of every object, and the scan, of one PATH."""
    listing = fs.find(prefix, detail=True)
    sizes = {key: int(info["size"]) for key, info in sorted(listing.items()) if info.get("size")}
    segments = {key for key in sizes if key.endswith(".log")}
    only_segments = {key: size for key, size in sizes.items() if key in segments}
    say(f"bench: {label}: raw ranged reads, audit core over s3://")
    return {
        "raw": measure.best_of(repeat, f"{label}: raw reads, segments", raw_reads(fs, only_segments, segments)),
        "raw_all": measure.best_of(repeat, f"{label}: raw reads, all objects", raw_reads(fs, sizes, segments)),
        "scan": measure.best_of(repeat, f"{label}: audit core, s3://", scan(f"s3://{prefix}", server.storage_options())),
        "local": measure.best_of(repeat, f"{label}: audit core, local", scan(str(root), None)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=int, default=256, help="size of the synthetic log dir in MiB (default 256)")
    parser.add_argument("--data-dir", type=Path, default=HERE / "data", help="where generated dirs live")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement (fastest kept)")
    args = parser.parse_args()

    root = args.data_dir / f"log-dir-{args.size_mb}mb"
    say(f"bench: data {root}")
    datagen.ensure(root, args.size_mb, log=say)
    measure.warm(measure.segment_files(root))
    large = datagen.large_segment(root).parent

    with tempfile.TemporaryDirectory() as scratch:
        server = S3Server(Path(scratch) / "moto.log").start()
        try:
            fs = server.filesystem()
            fs.mkdir(BUCKET)
            started = time.perf_counter()
            upload_tree(fs, root, f"{BUCKET}/logs")
            say(f"bench: uploaded to {server.endpoint} in {time.perf_counter() - started:.1f} s")
            results = {
                "dir": measure_s3(fs, server, root, f"{BUCKET}/logs", args.repeat, "whole dir"),
                "large": measure_s3(fs, server, large, f"{BUCKET}/logs/{large.name}", args.repeat, large.name),
            }
        finally:
            server.stop()

    figures = {}
    for key, group in results.items():
        for m in group.values():
            print(f"{m.name:<42} {m.mb_s:8.1f} MB/s  {m.bytes / 1e6:8.1f} MB of segments in {m.wall_s:6.2f} s  {m.note}")
        figures[f"{key}_raw_s3_mb_s"] = round(group["raw"].mb_s, 1)
        figures[f"{key}_raw_s3_all_objects_mb_s"] = round(group["raw_all"].mb_s, 1)
        figures[f"{key}_s3_scan_mb_s"] = round(group["scan"].mb_s, 1)
        figures[f"{key}_local_scan_mb_s"] = round(group["local"].mb_s, 1)
        for name, raw in (("raw", group["raw"]), ("raw_all_objects", group["raw_all"])):
            ratio = group["scan"].mb_s / raw.mb_s
            figures[f"{key}_s3_scan_vs_{name}"] = round(ratio, 3)
            verdict = "met" if ratio >= TARGET else "MISSED"
            print(f"{key}: s3 scan / {raw.name.split(': ')[1]} = {ratio:.2f} (target >= {TARGET}: {verdict})")
    print(json.dumps(figures))


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
