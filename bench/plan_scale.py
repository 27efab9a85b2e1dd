#!/usr/bin/env python
"""The driver's discovery and planning of N partitions (``python bench/plan_scale.py 10000``) over
``s3://``, with the store's listing answered from memory (s3fs ``find`` replaced by the keys of
``bench/remote_scale.py``'s layout): the driver's own CPU and memory, without a server whose
listing pages cost seconds each (``bench/remote_scale.py`` measures those requests; planning
sends none besides the listing). On a shared machine read the CPU seconds, not the wall time."""
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import remote_scale as r  # noqa: E402
import s3fs  # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith("VmRSS")).split()[1]) / 1024


def main(count: int) -> None:
    template = Path(tempfile.mkdtemp()) / "template"
    r.write_template(template)
    files = [(p.relative_to(template).as_posix(), p.stat().st_size) for p in sorted(template.rglob("*")) if p.is_file()]
    keys = [f"bench/logs/{name}" for name, _ in files if "/" not in name]
    infos = {key: {"name": key, "size": size, "type": "file"} for key, (_, size) in zip(keys, files)}
    for n in range(count):
        folder = f"t{n // r.PER_TOPIC:02d}-{n % r.PER_TOPIC}"
        for name, size in files:
            if name.startswith("part-0/"):
                key = f"bench/logs/{folder}/{name[len('part-0/'):]}"
                infos[key] = {"name": key, "size": size, "type": "file"}
    s3fs.S3FileSystem.find = lambda self, path, **kw: infos
    options = {"endpoint_url": "http://127.0.0.1:9", "key": "x", "secret": "y"}
    base = rss_mb()
    for run in range(2):
        wall, cpu = time.monotonic(), time.process_time()
        found, tasks, metas = r.plan_all("s3://bench/logs", options)
        print(f"run {run}: {count} partitions, {len(infos)} keys, {found.segment_count} segments, {len(tasks)} tasks: "
              f"{time.monotonic() - wall:.1f} s wall, {time.process_time() - cpu:.1f} s CPU, "
              f"RSS {rss_mb():.0f} MB (+{rss_mb() - base:.0f})", flush=True)
        del found, tasks, metas
    tracemalloc.start()
    kept = r.plan_all("s3://bench/logs", options)
    held, peak = tracemalloc.get_traced_memory()
    print(f"Python heap held after planning {held / 1e6:.0f} MB, peak {peak / 1e6:.0f} MB ({len(kept[1])} tasks)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
