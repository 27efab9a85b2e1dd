"""The Spark job's set step (SPEC section 6): the partition steps' totals of the replicas of one
partition, each holding its batch digest (offsets, epochs, CRCs, producer fields: never payloads),
meet in one group (``groupBy(group).applyInArrow``) and are compared there, on an executor; only
the comparison's findings and the set's totals (counted once, from the kept replica) go on to the
driver. Every other row passes through in groups by its Spark partition.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Iterator

import pyarrow as pa

from kafka_audit.audit.partition_audit import PartitionTotals
from kafka_audit.audit.replica_sets import ReplicaSets
from kafka_audit.engines import schemas


def set_label(replica_set: tuple) -> str:
    """A replica set's group key: its (topic, partition, cluster id) as JSON."""
    return json.dumps(list(replica_set), ensure_ascii=True)


def keyed_by_set(replica_rows):
    """The partition step's rows with the ``group`` of the set step: a replica set's label for
    its replicas' totals, the Spark partition for any other row (passed on as it is)."""
    from pyspark.sql import functions as F

    other = F.concat(F.lit("#"), F.spark_partition_id().cast("string"))
    return replica_rows.withColumn("group", F.when(F.col("kind") == schemas.SET_TOTALS, F.col("payload")).otherwise(other))


def set_step_of(is_compacted: Callable[[str], bool]) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def set_step(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Executor side: one group's rows (``applyInArrow``, iterator form)."""
        held = ReplicaSets(is_compacted)
        out: list[tuple] = []
        for batch in batches:
            for kind, payload, blob in zip(batch.column("kind").to_pylist(), batch.column("payload").to_pylist(),
                                           batch.column("blob").to_pylist()):
                if kind == schemas.SET_TOTALS:
                    held.hold(pickle.loads(blob))
                else:
                    out.append((kind, payload, blob))
        if held.held:
            findings: list = []
            totals = PartitionTotals()
            held.finish(totals, findings)
            out.extend((schemas.FINDING, schemas.finding_json(f.to_dict()), pickle.dumps(f)) for f in findings)
            out.append((schemas.TOTALS, None, pickle.dumps(totals)))
        if out:
            kinds, payloads, blobs = zip(*out)
            yield pa.RecordBatch.from_arrays(
                [pa.array(kinds, pa.int8()), pa.array(payloads, pa.string()), pa.array(blobs, pa.binary())],
                schema=schemas.REPLICA_ROWS,
            )

    return set_step
