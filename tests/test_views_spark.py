"""The ``producers`` rows and timeline events come out of the Spark job's partition step exactly
as out of the in-process audit (SPEC section 1: both engines give identical results)."""

from __future__ import annotations

import pytest

from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.engines import spark_job as pipeline
from kafka_audit.engines.local import audit_in_process
from kafka_audit.log.log_dir import discover
from kafka_audit.report.views import event_order
from tests.conftest import FIXTURES
from tests.test_views import REAL_BROKER


@pytest.mark.spark
def test_spark_and_in_process_give_the_same_producers_and_events(spark):
    paths = [str(FIXTURES / "faulty"), str(FIXTURES / "producer-errors")]
    if REAL_BROKER.is_dir():
        paths += [str(REAL_BROKER / "transactions" / "data"), str(REAL_BROKER / "hanging-txn-timeout-aborted" / "data")]
    discovery = discover(paths)
    local = audit_in_process(discovery, ScanOptions(timeline=True))
    on_spark = pipeline.run_scan(spark, discovery, ScanOptions(timeline=True))
    assert on_spark.producers == local.producers
    assert len(local.producers) > 10
    assert sorted(on_spark.events, key=event_order) == sorted(local.events, key=event_order)
    assert any(str(e.kind) == "transaction_abort" for e in local.events)
