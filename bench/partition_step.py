"""The partition step alone (``audit_partition``: offsets, indexes, producer-state replay, producer
activity), in CPU seconds, on summaries the segment step made once.

    python bench/partition_step.py [DIR] [--repeat 3] [--cache FILE] [--profile]

The segment step runs once (or its output is loaded from ``--cache``, a pickle this script wrote
earlier for the same DIR): the compiled walk's runs as columns (``SummaryColumns``), the other
batches as summaries, as the local engine passes them. Then every partition's ``audit_partition``
is timed with ``time.process_time``, best of ``--repeat``, two ways side by side: fed one
``BatchSummary`` per batch (the runs flattened first, outside the timing: the Spark engine's
input today) and fed the runs as columns (the local engine's). Prints the batches, partitions,
findings, events and CPU seconds of each; ``--profile`` prints the top of a cProfile run of the
columns' way by tottime.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from kafka_audit.audit.log_dir_facts import with_inferred_compaction  # noqa: E402
from kafka_audit.audit.partition_audit import audit_partition  # noqa: E402
from kafka_audit.audit.plan import log_order, partition_metas, plan_tasks  # noqa: E402
from kafka_audit.audit.scan_options import ScanOptions  # noqa: E402
from kafka_audit.audit.segment_audit import SegmentAuditor  # noqa: E402
from kafka_audit.log.log_dir import discover  # noqa: E402
from kafka_audit.rules.batch_summary import BatchSummary, SummaryColumns, flatten  # noqa: E402

DEFAULT_DIR = REPO / "bench" / "data" / "log-dir-1024mb"


def segment_step(directory: str, timeline: bool) -> tuple[dict, dict]:
    found = discover([directory])
    options = with_inferred_compaction(ScanOptions(timeline=timeline), found)
    metas = partition_metas(found, options)
    summaries: dict = {key: [] for key in metas}
    for task in plan_tasks(found, options.split_bytes):
        auditor = SegmentAuditor(task, options.validation, options.reference_time)
        batches = [item for item in auditor.run(columns=True) if isinstance(item, (BatchSummary, SummaryColumns))]
        summaries[task.replica_key].append((log_order(task), batches))
    ordered = {
        key: [b for _, batches in sorted(parts, key=lambda t: t[0]) for b in batches] for key, parts in summaries.items()
    }
    return metas, ordered


def partition_step(metas: dict, ordered: dict) -> tuple[int, int]:
    """Every partition's step on its items (summaries, or runs as columns); findings and events."""
    findings = events = 0
    for key, meta in metas.items():
        found, totals = audit_partition(meta, iter(ordered[key]))
        findings += len(found)
        events += len(totals.events)
    return findings, events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", nargs="?", default=str(DEFAULT_DIR))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache", help="pickle of the segment step's summaries (written when missing)")
    parser.add_argument("--timeline", action="store_true", help="with PartitionMeta.replay.timeline (events built)")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    if args.cache and os.path.exists(args.cache):
        with open(args.cache, "rb") as f:
            metas, ordered = pickle.load(f)
    else:
        metas, ordered = segment_step(args.directory, False)
        if args.cache:
            with open(args.cache, "wb") as f:
                pickle.dump((metas, ordered), f)
    for meta in metas.values():
        meta.replay = replace(meta.replay, timeline=args.timeline)
    flat = {key: list(flatten(items)) for key, items in ordered.items()}
    batches = sum(len(b) for b in flat.values())
    runs = sum(isinstance(i, SummaryColumns) for items in ordered.values() for i in items)
    print(f"{batches} batches ({runs} runs as columns), {len(metas)} partitions")
    for label, inputs in (("summaries", flat), ("columns", ordered)):
        times = []
        for _ in range(args.repeat):
            start = time.process_time()
            findings, events = partition_step(metas, inputs)
            times.append(time.process_time() - start)
        print(
            f"partition step, {label:9}: {findings} findings, {events} events, CPU s best {min(times):.3f} "
            f"of {', '.join(f'{t:.3f}' for t in times)}"
        )
    if args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        partition_step(metas, ordered)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
