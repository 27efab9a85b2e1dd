"""``--output-parquet`` and the Python API ``kafka_audit.scan`` (SPEC sections 1, 3 and 5), on a
classic session, on Spark Connect and in process."""

from __future__ import annotations

import json
from collections import Counter

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import kafka_audit
from kafka_audit.engines import schemas
from kafka_audit.engines.local import audit_in_process
from kafka_audit.log.log_dir import discover
from kafka_audit.rules.findings import FIELD_NAMES
from tests.conftest import FIXTURES
from tests.test_pipeline import options_of

FAULTY = FIXTURES / "faulty"
OPTIONS = json.loads((FAULTY / "EXPECTED.json").read_text())["options"]
API_OPTIONS = {
    key: OPTIONS[key]
    for key in ("max_message_bytes", "timestamp_before_max_ms", "timestamp_after_max_ms", "reference_time",
                "transaction_timeout_ms", "producer_id_expiration_ms")
    if key in OPTIONS
} | {"compacted_topics": OPTIONS.get("compacted_topics", ())}


@pytest.fixture(scope="module")
def reference():
    found = discover([str(FAULTY)])
    return audit_in_process(found, options_of(FAULTY))


def check_datasets(target, reference) -> None:
    """Each dataset has its fixed schema and the scan's counts, read by pyarrow and pandas."""
    for name, schema in schemas.DATASETS.items():
        assert ds.dataset(target / name, format="parquet").schema == schema, name
    findings = pd.read_parquet(target / "findings")
    batches = ds.dataset(target / "batches", format="parquet").to_table()
    assert len(findings) == len(reference.findings)
    assert Counter(findings["check"]) == Counter(f.check for f in reference.findings)
    assert [json.loads(d) for d in findings.sort_values(["check", "message"])["details"]] == [
        f.details for f in sorted(reference.findings, key=lambda f: (f.check, f.message))
    ]
    assert batches.num_rows == reference.summary["batches"]
    assert set(batches.column("codec").to_pylist()) == set(reference.summary["codecs"])


@pytest.mark.spark
def test_the_api_on_a_session_returns_findings_and_dataframes_and_leaves_it_running(any_spark, reference, tmp_path):
    result = kafka_audit.scan(FAULTY, spark=any_spark, output_parquet=str(tmp_path / "out"), **API_OPTIONS)
    assert result.findings == [f.to_dict() for f in reference.findings]
    assert result.summary["batches"] == reference.summary["batches"]
    assert result.summary["engine"] == "spark"
    assert result.findings_df.count() == len(reference.findings)
    assert result.batches_df.count() == reference.summary["batches"]
    assert result.producers_df.columns == schemas.PRODUCERS.names
    by_check = {row["check"]: row["n"] for row in result.findings_df.groupBy("check").agg({"*": "count"})
                .withColumnRenamed("count(1)", "n").collect()}
    assert by_check == reference.summary["findings_by_check"]
    check_datasets(tmp_path / "out", reference)
    # Spark SQL reads the datasets back; the session still runs after the call.
    any_spark.read.parquet(str(tmp_path / "out" / "batches")).createOrReplaceTempView("audit_batches")
    rows = any_spark.sql("SELECT count(*) AS n, sum(record_count) AS records FROM audit_batches").collect()
    assert rows[0]["n"] == reference.summary["batches"]
    result.unpersist()


def test_the_api_without_a_session_runs_in_process_and_writes_with_pyarrow(reference, tmp_path):
    result = kafka_audit.scan([str(FAULTY)], output_parquet=str(tmp_path / "out"), **API_OPTIONS)
    assert result.findings == [f.to_dict() for f in reference.findings]
    assert result.summary["engine"] == "local" and result.findings_df is None
    check_datasets(tmp_path / "out", reference)
    again = kafka_audit.scan(FAULTY, output_parquet=str(tmp_path / "out"), **API_OPTIONS)  # replaced, not appended
    assert again.findings == result.findings
    check_datasets(tmp_path / "out", reference)


def test_the_api_says_why_it_cannot_scan(tmp_path):
    with pytest.raises(ValueError, match="no Kafka segment"):
        kafka_audit.scan(tmp_path)
    with pytest.raises(ValueError, match="engine"):
        kafka_audit.scan(FAULTY, engine="flink")


def test_the_dataset_schemas_agree_with_the_job_rows():
    """The ``batches`` columns are the job's batch columns under the same types (names from the
    file system travel as bytes and become text in the dataset)."""
    job = {f.name: f.type for f in schemas.SUMMARY_FIELDS}
    for f in schemas.BATCHES:
        sent = job["compression" if f.name == "codec" else f.name]
        assert sent == (pa.binary() if f.name in ("topic", "segment") else f.type), f.name
    assert schemas.FINDINGS.names == list(FIELD_NAMES)


def _sorted_batches(folder) -> pa.Table:
    table = ds.dataset(folder, format="parquet").to_table()
    return table.sort_by([("topic", "ascending"), ("partition", "ascending"), ("segment", "ascending"),
                          ("position", "ascending")])


@pytest.mark.spark
@pytest.mark.parametrize("name", ["faulty", "producer-errors"])
def test_the_batches_dataset_on_spark_is_the_in_process_one(any_spark, name, tmp_path):
    """The ``batches`` rows Spark expands from the job's batch values are, row for row and type
    for type, those the in-process engine writes from its summaries with pyarrow."""
    log_dir = FIXTURES / name
    given = json.loads((log_dir / "EXPECTED.json").read_text())["options"]
    options = {key: given[key] for key in API_OPTIONS if key in given}
    kafka_audit.scan(log_dir, output_parquet=str(tmp_path / "local"), **options)
    kafka_audit.scan(log_dir, spark=any_spark, output_parquet=str(tmp_path / "spark"), **options).unpersist()
    local, spark = _sorted_batches(tmp_path / "local" / "batches"), _sorted_batches(tmp_path / "spark" / "batches")
    assert local.num_rows > 0 and spark.schema == local.schema == schemas.BATCHES
    assert spark.to_pylist() == local.to_pylist()


def test_batch_values_give_back_every_summary_in_order():
    """A segment task's summaries, cut into values of a few, come back whole and in log order
    (the partition step) and as the ``batches`` dataset's typed rows (its expansion)."""
    from kafka_audit.audit.segment_audit import SegmentAuditor
    from kafka_audit.engines.job_rows import batch_summaries, expand_batches, segment_row_batch, task_rows
    from kafka_audit.engines.summary_columns import summary_columns
    from kafka_audit.rules.batch_summary import BatchSummary
    from kafka_audit.rules.validation.log_validator import ValidationConfig
    from tests.support.segment_tasks import segment_task

    folder = next(p for p in sorted(FAULTY.iterdir()) if p.is_dir() and len(list(p.glob("*.log"))) > 0)
    log = sorted(folder.glob("*.log"))[0]
    topic, partition = folder.name.rsplit("-", 1)
    task = segment_task(topic, int(partition), folder.name, str(log), f"{folder.name}/{log.name}", int(log.stem),
                        size=log.stat().st_size)
    summaries = [s for s in SegmentAuditor(task, ValidationConfig()).run() if isinstance(s, BatchSummary)]
    assert len(summaries) > 3
    rows = list(task_rows([7], [summary_columns(summaries)], 3, schemas.BATCH))
    assert len(rows) == -(-len(summaries) // 3)
    assert [(r[0], r[1], r[2], r[3], r[4]) for r in rows] == [
        (schemas.BATCH, 7, s.segment_base_offset, schemas.name_bytes(s.segment), s.position) for s in summaries[::3]
    ]
    batch = segment_row_batch(rows)
    assert list(batch_summaries(iter([batch.slice(0, 1), batch.slice(1)]))) == summaries
    expanded = pa.Table.from_batches(list(expand_batches(iter([batch]))))
    typed = schemas.batches_table(summaries)
    assert expanded.num_rows == typed.num_rows
    for name in schemas.BATCHES.names:
        column = expanded.column("compression" if name == "codec" else name).to_pylist()
        assert column == typed.column(name).to_pylist(), name
