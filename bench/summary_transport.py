"""The Spark job's transport of batch summaries alone, in CPU nanoseconds per summary, both ways, on
the items the segment step made once (``SegmentAuditor.run(columns=True)``: the compiled walk's
runs as ``SummaryColumns``, the Python walk's summaries as tuples), side by side:

- ``pickle``: pickled tuples, the transport before Arrow;
- ``tuples``: every summary a tuple converted by Arrow (``summary_columns``: the job before the
  compiled walk's runs were sent as columns), read back as tuples (``summaries_of``);
- ``columns``: the job now: runs wrapped as their memory, the tuples between them converted
  (``PendingValues``), read back as ``SummaryColumns`` (``summary_runs``: a copy per column);
  ``columns_iterated_decode_ns`` also makes the tuples of the runs (what a partition step that
  reads tuples pays on top).

    python bench/summary_transport.py [DIR] [--tasks 8] [--repeat 5]

Encode: segment tasks' items to values of up to 4,096 summaries, made for about 10,000 summaries
at once as the segment step does. Decode: the values back as the partition step reads them.
Prints one JSON line: bytes and CPU ns per summary of each, best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from kafka_audit.audit.plan import plan_tasks  # noqa: E402
from kafka_audit.audit.segment_audit import SegmentAuditor  # noqa: E402
from kafka_audit.engines.job_rows import ROWS_PER_BATCH, PendingValues  # noqa: E402
from kafka_audit.engines.summary_columns import read_value, summaries_of, summary_runs  # noqa: E402
from kafka_audit.log.log_dir import discover  # noqa: E402
from kafka_audit.rules.batch_summary import BatchSummary, SummaryColumns, flatten  # noqa: E402
from kafka_audit.rules.findings import Finding  # noqa: E402
from kafka_audit.rules.validation.log_validator import ValidationConfig  # noqa: E402

PER_VALUE = 4_096
DEFAULT_DIR = REPO / "bench" / "data" / "log-dir-256mb"
Items = list[BatchSummary | SummaryColumns]


def segment_items(log_dir: Path, count: int) -> list[Items]:
    """The segment step's items of the ``count`` largest tasks of ``log_dir``."""
    tasks = sorted(plan_tasks(discover([str(log_dir)])), key=lambda task: -task.byte_count)[:count]
    return [
        [item for item in SegmentAuditor(task, ValidationConfig()).run(columns=True) if not isinstance(item, Finding)]
        for task in tasks
    ]


def best_ns(work: Callable[[], object], count: int, rounds: int) -> float:
    """The fastest of ``rounds`` runs of ``work``, in CPU ns per summary."""
    times = []
    for _ in range(rounds):
        began = time.process_time_ns()
        work()
        times.append(time.process_time_ns() - began)
    return round(min(times) / count, 1)


def pickled(tasks: list[list[BatchSummary]]) -> list[bytes]:
    return [
        pickle.dumps(list(map(tuple, task[i : i + PER_VALUE])), pickle.HIGHEST_PROTOCOL)
        for task in tasks
        for i in range(0, len(task), PER_VALUE)
    ]


def arrow(tasks: list[Items] | list[list[BatchSummary]]) -> list[bytes]:
    """As the segment step sends them: tasks made columns together, about 10,000 summaries at once."""
    values, pending = [], PendingValues()
    for task in tasks:
        pending.add([0], task)
        if len(pending) >= ROWS_PER_BATCH or task is tasks[-1]:
            values.extend(row[-1] for row in pending.rows())
    return values


def tuples_back(values: list[bytes]) -> list[BatchSummary]:
    return [s for v in values for b in read_value(v) for s in summaries_of(b)]


def runs_back(values: list[bytes]) -> list[BatchSummary | SummaryColumns]:
    return [item for v in values for b in read_value(v) for item in summary_runs(b)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", nargs="?", default=str(DEFAULT_DIR))
    parser.add_argument("--tasks", type=int, default=8, help="segment tasks of the plan (largest first)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    items = segment_items(Path(args.directory), args.tasks)
    tasks = [list(flatten(task)) for task in items]
    count = sum(map(len, tasks))
    old, rows, new = pickled(tasks), arrow(tasks), arrow(items)
    make = BatchSummary._make
    expected = [s for task in tasks for s in task]
    assert tuples_back(rows) == expected == list(flatten(runs_back(new)))
    print(json.dumps({
        "summaries": count,
        "runs": sum(isinstance(item, SummaryColumns) for task in items for item in task),
        "pickle_bytes": round(sum(map(len, old)) / count, 1),
        "tuples_bytes": round(sum(map(len, rows)) / count, 1),
        "columns_bytes": round(sum(map(len, new)) / count, 1),
        "pickle_encode_ns": best_ns(lambda: pickled(tasks), count, args.repeat),
        "tuples_encode_ns": best_ns(lambda: arrow(tasks), count, args.repeat),
        "columns_encode_ns": best_ns(lambda: arrow(items), count, args.repeat),
        "pickle_decode_ns": best_ns(lambda: [s for v in old for s in map(make, pickle.loads(v))], count, args.repeat),
        "tuples_decode_ns": best_ns(lambda: tuples_back(rows), count, args.repeat),
        "columns_decode_ns": best_ns(lambda: runs_back(new), count, args.repeat),
        "columns_iterated_decode_ns": best_ns(lambda: list(flatten(runs_back(new))), count, args.repeat),
    }))


if __name__ == "__main__":
    main()
