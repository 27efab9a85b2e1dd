"""The Spark job's row sets as DataFrames (:class:`ScanFrames`), and the datasets of SPEC section 3
made from them: ``findings``, ``batches``, ``producers``, written as Parquet from the executors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from kafka_audit.audit.results import ScanResult
from kafka_audit.engines import schemas
from kafka_audit.engines.job_rows import expand_batches


@dataclass(slots=True)
class ScanFrames:
    """The job's two row sets, as DataFrames: the segment step's (``schemas.SEGMENT_ROWS``) and the
    partition step's (``schemas.REPLICA_ROWS``). Persisted when kept for datasets."""

    segment_rows: Any
    replica_rows: Any
    # Spark tasks of the segment step (how the progress display finds its stage).
    segment_tasks: int = 0

    def persisted(self) -> ScanFrames:
        """The same row sets, persisted (MEMORY_AND_DISK) for the datasets."""
        return ScanFrames(self.segment_rows.persist(), self.replica_rows.persist(), self.segment_tasks)

    def findings(self, spark, findings: list[dict[str, Any]]):
        """The ``findings`` dataset (SPEC section 3) of the scan's findings. The driver holds them
        complete (file accounting, the coordinator's transactional ids are added there), and they
        are few (at most 1,000 per check and task), so they go back to the session from there."""
        return spark.createDataFrame(schemas.findings_table(findings), schemas.spark_schema(schemas.FINDINGS))

    def batches(self):
        """The ``batches`` dataset: one typed row per record batch."""
        from pyspark.sql import functions as F

        values = self.segment_rows.where(F.col("kind").isin(schemas.BATCH, schemas.KEPT_BATCH)).select("blob")
        rows = values.mapInArrow(expand_batches, schemas.spark_schema(schemas.SUMMARIES))
        source = {"codec": F.col("compression")}
        return rows.select(*[source.get(name, F.col(name)).alias(name) for name in schemas.BATCHES.names])

    def producers(self, spark, rows: list[dict[str, Any]]):
        """The ``producers`` dataset of the scan's ``producers`` rows. The driver completes them
        (transactional ids and finding counts need every partition's findings), so they go back
        to the session from there; they are one row per producer and partition, not per batch."""
        table = pa.Table.from_pylist(rows, schema=schemas.PRODUCERS)
        return spark.createDataFrame(table, schemas.spark_schema(schemas.PRODUCERS))

    def write_parquet(self, spark, result: ScanResult, target: str) -> None:
        """Write the three datasets under ``target`` (a folder or URI), each replaced if present."""
        base = target.rstrip("/")
        datasets = {
            "findings": self.findings(spark, [f.to_dict() for f in result.findings]),
            "batches": self.batches(),
            "producers": self.producers(spark, result.producers),
        }
        for name, frame in datasets.items():
            frame.write.mode("overwrite").parquet(f"{base}/{name}")

    def unpersist(self) -> None:
        self.segment_rows.unpersist()
        self.replica_rows.unpersist()
