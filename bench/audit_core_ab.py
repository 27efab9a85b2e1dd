#!/usr/bin/env python
"""The audit core (``audit_in_process``: every check, every record, one process) of two trees of
kafka-audit, side by side on the same synthetic dir: a redesign's cost in speed (issue 23).

    python bench/audit_core_ab.py --before /tmp/house-before --after . --size-mb 256 --repeat 5

Each tree runs in its own child process (``sys.path`` starting at the tree, so its own compiled
extensions), runs alternating; per tree the fastest wall time and the least CPU seconds of
``--repeat`` runs are kept (the machine is shared). Prints both and the after/before ratios.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
try:  # the local engine in engines/, apart from the plan (issue 33)
    from kafka_audit.log.log_dir import discover
    from kafka_audit.audit.scan_options import ScanOptions
    from kafka_audit.engines.local import audit_in_process
except ImportError:
    try:  # the tree by layer (issue 23)
        from kafka_audit.log.log_dir import discover
        from kafka_audit.audit.plan import ScanOptions, audit_in_process
    except ImportError:  # the flat tree before it (89e6e64)
        from kafka_audit.formats.log_dir import discover
        from kafka_audit.audit import ScanOptions, audit_in_process
discovery = discover([sys.argv[2]])
wall, cpu = time.perf_counter(), time.process_time()
result = audit_in_process(discovery, ScanOptions())
print(json.dumps({"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu,
                  "bytes": result.summary["bytes"], "records": result.summary["records"],
                  "findings": len(result.findings)}))
"""


def once(tree: Path, root: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(tree), str(root)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--size-mb", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    import datagen

    root = HERE / "data" / f"log-dir-{args.size_mb}mb"
    datagen.ensure(root, args.size_mb)
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    for _ in range(args.repeat):
        for name, tree in (("before", args.before), ("after", args.after)):
            runs[name].append(once(tree.resolve(), root))
    best = {}
    for name, results in runs.items():
        assert len({(r["bytes"], r["records"], r["findings"]) for r in results}) == 1, results
        best[name] = {"wall_s": min(r["wall_s"] for r in results), "cpu_s": min(r["cpu_s"] for r in results),
                      **{k: results[0][k] for k in ("bytes", "records", "findings")}}
        mb_s = best[name]["bytes"] / 1e6 / best[name]["wall_s"]
        print(f"{name:6} wall {best[name]['wall_s']:.2f} s ({mb_s:.1f} MB/s)  cpu {best[name]['cpu_s']:.2f} s  "
              f"{best[name]['records']:,} records, {best[name]['findings']} findings")
    assert (best["before"]["records"], best["before"]["findings"]) == (best["after"]["records"], best["after"]["findings"])
    ratio_wall = best["before"]["wall_s"] / best["after"]["wall_s"]
    ratio_cpu = best["before"]["cpu_s"] / best["after"]["cpu_s"]
    print(f"after/before speed: {ratio_wall:.3f} by wall time, {ratio_cpu:.3f} by CPU time")
    print(json.dumps({"before": best["before"], "after": best["after"], "speed_ratio_wall": ratio_wall,
                      "speed_ratio_cpu": ratio_cpu}))


if __name__ == "__main__":
    main()
