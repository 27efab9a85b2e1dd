"""The fixed schemas of the Parquet datasets (SPEC section 3) and of the Spark job's rows.

One Arrow schema per table; the Spark side derives its ``StructType`` from it
(:func:`spark_schema`), so the executors' Arrow batches, the Spark DataFrames and the Parquet
files written by Spark or by pyarrow all have the same columns and types.

The job's rows (``engines/spark_job.py``) carry a ``kind`` column. Batch rows carry a run of a segment
task's batch summaries under its sort keys, as one Arrow record batch of typed columns
(``SUMMARY_COLUMNS``, in an Arrow IPC stream: ``engines/summary_columns.py``) in ``blob``; the
``batches`` dataset selects its typed rows (``SUMMARIES``) from them. Rare rows (findings, counts,
a replica's metadata) carry a JSON ``payload`` for readers and a pickled ``blob`` for the driver. A
new kind of rare row needs no new column.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from kafka_audit.record.batch_walk import COLUMNS

# -- the Parquet datasets ------------------------------------------------------------------------

# SPEC section 2's fields, ``details`` as a JSON string.
FINDINGS = pa.schema(
    [
        ("check", pa.string()),
        ("severity", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("segment", pa.string()),
        ("position", pa.int64()),
        ("offset", pa.int64()),
        ("batch_base_offset", pa.int64()),
        ("batch_last_offset", pa.int64()),
        ("record_index", pa.int64()),
        ("producer_id", pa.int64()),
        ("producer_epoch", pa.int32()),
        ("sequence", pa.int64()),
        ("transactional_id", pa.string()),
        ("timestamp", pa.int64()),
        ("time", pa.string()),
        ("error_code", pa.int32()),
        ("error_name", pa.string()),
        ("client_outcome", pa.string()),
        ("message", pa.string()),
        ("details", pa.string()),
        ("fingerprint", pa.string()),
        ("baseline", pa.bool_()),
    ]
)

# One row per record batch (per top-level message for v0/v1).
BATCHES = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("segment", pa.string()),
        ("position", pa.int64()),
        ("base_offset", pa.int64()),
        ("last_offset", pa.int64()),
        ("magic", pa.int32()),
        ("codec", pa.string()),
        ("record_count", pa.int64()),
        ("size", pa.int64()),
        ("producer_id", pa.int64()),
        ("producer_epoch", pa.int32()),
        ("base_sequence", pa.int64()),
        ("is_transactional", pa.bool_()),
        ("is_control", pa.bool_()),
        ("max_timestamp", pa.int64()),
        ("crc_valid", pa.bool_()),
    ]
)

# The ``producers`` rows of SPEC section 3; ``sequences`` maps an epoch (as text, a JSON key) to
# [first, last] sequence.
_BY_SEVERITY = pa.struct([("error", pa.int64()), ("warning", pa.int64()), ("info", pa.int64())])
PRODUCERS = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("producer_id", pa.int64()),
        ("transactional_id", pa.string()),
        ("epochs", pa.list_(pa.int32())),
        ("first_offset", pa.int64()),
        ("last_offset", pa.int64()),
        ("first_timestamp", pa.int64()),
        ("last_timestamp", pa.int64()),
        ("sequences", pa.map_(pa.string(), pa.list_(pa.int64()))),
        ("batches", pa.int64()),
        ("records", pa.int64()),
        ("transactions", pa.struct([("committed", pa.int64()), ("aborted", pa.int64()), ("open", pa.int64())])),
        ("findings", _BY_SEVERITY),
    ]
)

DATASETS = {"findings": FINDINGS, "batches": BATCHES, "producers": PRODUCERS}

# -- the Spark job's rows --------------------------------------------------------------------------

# Row kinds, in the order a replica's rows reach the partition step: its metadata first, then the
# segment step's counts and findings, then its batches in log order.
META, STATS, FINDING, BATCH = 0, 1, 2, 3
# A partition step's totals (the partition step's, or the segment step's for a replica it audited
# whole: ``task_packing``), and a whole replica's batch values kept for the ``batches`` dataset
# only (never sent to the partition step).
TOTALS, KEPT_BATCH = 4, 5
# The totals of a replica with peers (SPEC section 6), its digest inside, under its set's label:
# the replicas of one partition meet in one group of the set step (engines/replica_set_step.py).
SET_TOTALS = 6

# The segment tasks, one row each (names as bytes, see SUMMARY_FIELDS; ``file``, the pickled
# SegmentFile). ``slot`` picks the Spark task that audits it, ``place`` the
# partition step's group (one per replica); ``meta``, on one task of a replica audited whole in its
# slot, is its pickled PartitionMeta; ``check_place``, on the tasks of a segment whose indexes are
# checked apart (segment_indexes.IndexCheck), that check's group.
TASKS = pa.schema(
    [
        ("slot", pa.int32()),
        ("place", pa.int32()),
        ("topic", pa.binary()),
        ("partition", pa.int32()),
        ("replica", pa.binary()),
        ("file", pa.binary()),
        ("start", pa.int64()),
        ("stop", pa.int64()),
        ("newest", pa.bool_()),
        ("meta", pa.binary()),
        ("check_place", pa.int32()),
    ]
)

# ``BatchSummary``'s fields, in its order (the partition step rebuilds summaries from them).
# Names from file names travel as bytes (:func:`name_bytes`): a name that is not UTF-8 (a
# surrogate escape in Python) has no Arrow string.
SUMMARY_FIELDS = [
    pa.field(*spec)
    for spec in [
    ("topic", pa.binary()),
    ("partition", pa.int32()),
    ("segment", pa.binary()),
    ("segment_base_offset", pa.int64()),
    ("position", pa.int64()),
    ("base_offset", pa.int64()),
    ("last_offset", pa.int64()),
    ("magic", pa.int32()),
    ("valid", pa.bool_()),
    ("producer_id", pa.int64()),
    ("producer_epoch", pa.int32()),
    ("base_sequence", pa.int64()),
    ("last_sequence", pa.int64()),
    ("is_transactional", pa.bool_()),
    ("is_control", pa.bool_()),
    ("control_type", pa.int32()),
    ("coordinator_epoch", pa.int32()),
    ("max_timestamp", pa.int64()),
    ("record_count", pa.int64()),
    ("size", pa.int64()),
    ("compression", pa.string()),
    ("crc_valid", pa.bool_()),
    ]
]
SUMMARY_NAMES = [f.name for f in SUMMARY_FIELDS]

# Every ``BatchSummary`` field: the columns a run of summaries travels in (the replica comparison
# also reads the batch's partition leader epoch and stored CRC). First the four a segment task
# holds constant, run-end encoded (a run costs a few bytes whatever its length); then the compiled
# walk's columns (``record.batch_walk.COLUMNS``: their order and widths, so that its memory travels
# as it is): booleans as bytes (0/1), the codec id as the index of a dictionary of the codec labels.
RUN_END_COLUMNS = frozenset({"topic", "partition", "segment", "segment_base_offset"})
_WIDTHS = {"q": pa.int64(), "i": pa.int32(), "h": pa.int16(), "b": pa.int8()}
_CODEC_COLUMN = pa.dictionary(pa.int8(), pa.string())
SUMMARY_COLUMNS = pa.schema(
    [
        *(pa.field(f.name, pa.run_end_encoded(pa.int32(), f.type)) for f in SUMMARY_FIELDS if f.name in RUN_END_COLUMNS),
        *(pa.field(name, _CODEC_COLUMN if name == "compression" else _WIDTHS[code]) for name, code in COLUMNS),
    ]
)
# Names from the file system, as bytes in the columns.
NAME_COLUMNS = frozenset({"topic", "segment"})
# The fields that are booleans in a ``BatchSummary`` (a byte each in the columns).
BOOL_COLUMNS = frozenset(f.name for f in SUMMARY_FIELDS if f.type == pa.bool_())

# A batch summary as a typed row (the ``batches`` dataset's source), its names made text on the
# executor (:func:`name_text`: Spark's ``decode`` refuses bytes that are not UTF-8).
SUMMARIES = pa.schema([pa.field(f.name, pa.string()) if f.name in ("topic", "segment") else f
                       for f in SUMMARY_FIELDS])

# What the segment step emits and the partition step reads: the kind, the replica's ``place``,
# the sort keys of batch rows (the segment and the position of their first batch) and a value.
# A batch row's ``blob`` holds a run of a segment task's batch summaries, in log order, as an
# Arrow IPC stream of one record batch of ``SUMMARY_COLUMNS``.
SEGMENT_ROWS = pa.schema(
    [
        ("kind", pa.int8()),
        ("place", pa.int32()),
        ("segment_base_offset", pa.int64()),
        ("segment", pa.binary()),
        ("position", pa.int64()),
        ("payload", pa.string()),
        ("blob", pa.binary()),
    ]
)

# What the partition step emits.
REPLICA_ROWS = pa.schema([("kind", pa.int8()), ("payload", pa.string()), ("blob", pa.binary())])


def spark_schema(schema: pa.Schema):
    """The Spark ``StructType`` of an Arrow schema (classic and Connect alike)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def name_bytes(name: str) -> bytes:
    """A name from the file system as its bytes (undoing Python's surrogate escapes)."""
    return name.encode("utf-8", "surrogateescape")


def name_text(name: str) -> str:
    """A name as dataset text: bytes that are not UTF-8 shown as ``\\xNN`` (SPEC section 1), on
    the driver and on the executors alike (Spark's ``decode`` refuses them)."""
    return name_bytes(name).decode("utf-8", "backslashreplace")


def finding_json(finding: dict[str, Any]) -> str:
    """A finding as one JSON object (the ``findings`` dataset decodes it, ``details`` as text)."""
    return json.dumps(finding, default=str)


def findings_table(findings: list[dict[str, Any]]) -> pa.Table:
    """The ``findings`` dataset's rows of ``findings`` (section 2 dicts), as the Spark job's
    ``from_json`` of :func:`finding_json` gives them."""
    rows = [json.loads(finding_json(f)) for f in findings]
    for row in rows:
        row["details"] = json.dumps(row["details"], ensure_ascii=False, default=str)
        for key, value in row.items():
            if isinstance(value, str):
                row[key] = value.encode("utf-8", "replace").decode("utf-8")
    return pa.Table.from_pylist(rows, schema=FINDINGS)


def batches_table(summaries: Sequence[tuple]) -> pa.Table:
    """The ``batches`` dataset's rows of ``BatchSummary`` tuples."""
    columns = [list(column) for column in zip(*summaries)] if summaries else [[] for _ in SUMMARY_FIELDS]
    by_name = dict(zip(SUMMARY_NAMES, columns))
    by_name["codec"] = by_name["compression"]
    for name in ("topic", "segment"):
        by_name[name] = [name_text(value) for value in by_name[name]]
    return pa.table([pa.array(by_name[name], type=field.type) for name, field in zip(BATCHES.names, BATCHES)],
                    schema=BATCHES)
