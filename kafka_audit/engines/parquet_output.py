"""``--output-parquet`` on the in-process engine: the datasets of SPEC section 3 written with
pyarrow (the Spark job writes the same schemas from its executors: ``spark_job.ScanFrames``).

``TARGET/findings/``, ``TARGET/batches/`` and ``TARGET/producers/`` each hold Parquet files of the
fixed schemas of :mod:`kafka_audit.engines.schemas`; a dataset already there is replaced. ``TARGET`` is a
local folder or a URI that ``pyarrow.fs`` opens (``file://``, ``s3://``, ``gs://``, ``hdfs://``).
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from kafka_audit.engines import schemas
from kafka_audit.rules.batch_summary import BatchSummary

PART = "part-00000.parquet"


class LocalDatasets:
    """Open the three datasets, stream batch rows in with :meth:`add_batches`, then
    :meth:`finish` with the findings and producer rows."""

    def __init__(self, target: str) -> None:
        if "://" in target:
            self.fs, base = pafs.FileSystem.from_uri(target)
        else:
            self.fs, base = pafs.LocalFileSystem(), os.path.abspath(target)
        self.folders = {name: f"{base.rstrip('/')}/{name}" for name in schemas.DATASETS}
        for folder in self.folders.values():
            if self.fs.get_file_info(folder).type == pafs.FileType.Directory:
                self.fs.delete_dir_contents(folder)
            self.fs.create_dir(folder, recursive=True)
        self._batches = pq.ParquetWriter(f"{self.folders['batches']}/{PART}", schemas.BATCHES, filesystem=self.fs)

    def add_batches(self, summaries: list[BatchSummary]) -> None:
        if summaries:
            self._batches.write_table(schemas.batches_table(summaries))

    def finish(self, findings: list[dict[str, Any]], producers: list[dict[str, Any]]) -> None:
        self._batches.close()
        self._write("findings", schemas.findings_table(findings))
        self._write("producers", pa.Table.from_pylist(producers, schema=schemas.PRODUCERS))

    def _write(self, name: str, table: pa.Table) -> None:
        pq.write_table(table, f"{self.folders[name]}/{PART}", filesystem=self.fs)
