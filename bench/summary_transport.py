"""The Spark job's transport of batch summaries alone, in CPU nanoseconds per summary: the pickled
runs it replaced and the Arrow record batches it sends (``engines/summary_columns.py``), both ways,
on summaries the segment step made once; and the two ways to make Python values of the columns
(``to_pylist`` per column, or NumPy's ``tolist``).

    python bench/summary_transport.py [DIR] [--tasks 8] [--repeat 5]

Encode: segment tasks' summaries to values of up to 4,096 (pickled tuples of each task, or Arrow
IPC streams of the summary columns, made for about 10,000 summaries at once as the segment step
does, each task's values slices of them). Decode: the values back to ``BatchSummary`` objects, as the partition step
reads them. Prints one JSON line: bytes and CPU ns per summary of each, best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from collections.abc import Callable
from itertools import repeat
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from kafka_audit.engines.job_rows import ROWS_PER_BATCH, PendingValues  # noqa: E402
from kafka_audit.engines.summary_columns import _NAMES, _new, _values, read_value, summaries_of  # noqa: E402
from kafka_audit.rules.batch_summary import BatchSummary  # noqa: E402
from tests.support.fixture_summaries import segment_summaries  # noqa: E402

PER_VALUE = 4_096
DEFAULT_DIR = REPO / "bench" / "data" / "log-dir-256mb"


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


def arrow(tasks: list[list[BatchSummary]]) -> list[bytes]:
    """As the segment step sends them: tasks made columns together, about 10,000 summaries at once."""
    values, pending = [], PendingValues()
    for task in tasks:
        pending.add([0], task)
        if len(pending) >= ROWS_PER_BATCH or task is tasks[-1]:
            values.extend(row[-1] for row in pending.rows())
    return values


def numpy_summaries(values: list[bytes]) -> list[BatchSummary]:
    """As ``summaries_of``, but plain number columns made Python values by NumPy (``tolist``)."""
    import pyarrow as pa

    out: list[BatchSummary] = []
    for value in values:
        for batch in read_value(value):
            columns = []
            for name in _NAMES:
                column = batch.column(name)
                if (pa.types.is_integer(column.type) or pa.types.is_boolean(column.type)) and not column.null_count:
                    columns.append(column.to_numpy(zero_copy_only=False).tolist())
                else:
                    columns.append(_values(name, column, batch.num_rows))
            out.extend(map(_new, repeat(BatchSummary), zip(*columns)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", nargs="?", default=str(DEFAULT_DIR))
    parser.add_argument("--tasks", type=int, default=8, help="segment tasks of the plan (largest first)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    tasks = segment_summaries(Path(args.directory))[: args.tasks]
    count = sum(map(len, tasks))
    old, new = pickled(tasks), arrow(tasks)
    make = BatchSummary._make
    expected = [s for task in tasks for s in task]
    assert [s for v in new for b in read_value(v) for s in summaries_of(b)] == expected == numpy_summaries(new)
    print(json.dumps({
        "summaries": count,
        "pickle_bytes": round(sum(map(len, old)) / count, 1),
        "arrow_bytes": round(sum(map(len, new)) / count, 1),
        "pickle_encode_ns": best_ns(lambda: pickled(tasks), count, args.repeat),
        "arrow_encode_ns": best_ns(lambda: arrow(tasks), count, args.repeat),
        "pickle_decode_ns": best_ns(lambda: [s for v in old for s in map(make, pickle.loads(v))], count, args.repeat),
        "arrow_decode_ns": best_ns(lambda: [s for v in new for b in read_value(v) for s in summaries_of(b)], count,
                                   args.repeat),
        "arrow_numpy_decode_ns": best_ns(lambda: numpy_summaries(new), count, args.repeat),
    }))


if __name__ == "__main__":
    main()
