"""The segment step alone (every task's ``SegmentAuditor.run``, as the local engine runs them: one
storage context, ``with_read_ahead``), in user and system CPU seconds and minor page faults per
GB read, side by side for one or more trees.

    python bench/segment_step.py [DIR] [--tree PATH ...] [--rounds 3]

Each round runs, for each tree in turn, a fresh process (``PYTHONPATH`` the tree) that plans
DIR's tasks, runs the segment step once to warm up, then once measured with ``getrusage``. The
rounds interleave the trees, so that the load of a shared machine falls on each alike; the
figures are the best of the rounds. The load averages are printed before and after, and the
limit (a') of ``bench/run.py`` (read, CRC-32C, inflate; ``measure.limit``) measured in the same
processes, user+sys.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DIR = REPO / "bench" / "data" / "log-dir-256mb"
_GB = 1e9


def probe(directory: str) -> dict:
    """One measured pass of the segment step over ``directory`` (after a warm-up pass)."""
    import kafka_audit
    from kafka_audit.audit.log_dir_facts import with_inferred_compaction
    from kafka_audit.audit.plan import plan_tasks
    from kafka_audit.audit.scan_options import ScanOptions
    from kafka_audit.audit.segment_audit import SegmentAuditor
    from kafka_audit.audit.segment_task import with_read_ahead
    from kafka_audit.io.storage_context import StorageContext
    from kafka_audit.log.log_dir import discover

    found = discover([directory])
    options = with_inferred_compaction(ScanOptions(), found)
    tasks = list(plan_tasks(found, options.split_bytes))

    def segment_step() -> int:
        read = 0
        with StorageContext() as storage:
            for task in with_read_ahead(tasks, storage):
                auditor = SegmentAuditor(task, options.validation, options.reference_time, storage)
                for _ in auditor.run(True):
                    pass
                read += auditor.stats.bytes
        return read

    segment_step()
    before = resource.getrusage(resource.RUSAGE_SELF)
    read = segment_step()
    after = resource.getrusage(resource.RUSAGE_SELF)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import measure

    the_limit = measure.limit(measure.segment_files(Path(directory)), inflate=True)
    the_limit()
    limit_before = resource.getrusage(resource.RUSAGE_SELF)
    the_limit()
    limit_after = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "limit_s": limit_after.ru_utime - limit_before.ru_utime + limit_after.ru_stime - limit_before.ru_stime,
        "package": os.path.dirname(kafka_audit.__file__),
        "tasks": len(tasks),
        "bytes": read,
        "user_s": after.ru_utime - before.ru_utime,
        "sys_s": after.ru_stime - before.ru_stime,
        "minflt": after.ru_minflt - before.ru_minflt,
        "maxrss_mb": after.ru_maxrss / 1024,
    }


def run_probe(tree: Path, directory: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--probe", directory],
        capture_output=True, text=True, cwd=tree, env=env, check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"bench: the probe in {tree} failed:\n{done.stderr[-2000:]}")
    result: dict = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(result["package"]).resolve() != (tree / "kafka_audit").resolve():
        raise SystemExit(f"bench: the probe for {tree} imported {result['package']}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir", nargs="?", default=str(DEFAULT_DIR))
    parser.add_argument("--tree", action="append", type=Path, help="a source tree to measure (default: this one)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--probe", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        print(json.dumps(probe(args.probe)))
        return
    trees = [tree.resolve() for tree in (args.tree or [REPO])]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    runs: dict[Path, list[dict]] = {tree: [] for tree in trees}
    for _ in range(args.rounds):
        for tree in trees:
            runs[tree].append(run_probe(tree, args.dir))
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'tree':<28} {'user s':>7} {'sys s':>7} {'user+sys':>8} {'faults/GB':>10} {'max RSS MB':>10}  (best of {args.rounds})")
    for tree, results in runs.items():
        gb = results[0]["bytes"] / _GB
        user = min(r["user_s"] for r in results)
        system = min(r["sys_s"] for r in results)
        total = min(r["user_s"] + r["sys_s"] for r in results)
        faults = min(r["minflt"] for r in results) / gb
        rss = max(r["maxrss_mb"] for r in results)
        print(f"{str(tree)[-28:]:<28} {user:7.3f} {system:7.3f} {total:8.3f} {faults:10.0f} {rss:10.1f}")
    limit = min(r["limit_s"] for results in runs.values() for r in results)
    label = "the limit (a'): read, CRC, inflate"
    print(f"{label:<44} {limit:8.3f}  (bench/measure.py limit, in the same processes)")
    print(json.dumps({str(tree): results for tree, results in runs.items()}))


if __name__ == "__main__":
    main()
