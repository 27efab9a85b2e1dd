"""The Kafka version a log dir was written under (issue 22 item 4, SPEC sections 1 and 3): the
summary's ``metadata_version`` / ``transaction_version`` from the FeatureLevelRecords of
``bootstrap.checkpoint`` and ``__cluster_metadata``, the broker default of
``log.message.timestamp.after.max.ms`` of that version (3600000 on Kafka 4.x,
``ServerLogConfigs.LOG_MESSAGE_TIMESTAMP_AFTER_MAX_MS_DEFAULT``; off on 3.x and when unknown), and
``internal_records_unknown``."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from kafka_audit.audit.log_dir_facts import with_log_dir_facts
from kafka_audit.engines.local import audit_in_process
from kafka_audit.log.log_dir import discover
from kafka_audit.report.dump import dump_file
from tests.support.audit_run import corpus_dir, scan, scan_options
from tests.support.writer import TS_BASE, BatchSpec, LogDirWriter, RecordSpec, records

HOUR = 3_600_000
REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "corpus, levels",
    [
        # README: metadata.version 29 (4.2-IV1), transaction.version 2.
        ("real-broker-4/tv2-transactions", (29, 2)),
        ("real-broker-4/consumer-group-848", (29, 2)),
        # Kafka 3.6.2: metadata.version 14 (3.6-IV2), no transaction.version feature yet.
        ("real-broker/transactions", (14, None)),
    ],
)
def test_the_summary_names_the_feature_levels_the_log_dir_records(corpus, levels):
    name, case = corpus.split("/")
    summary = scan(corpus_dir(name) / case / "data").summary
    assert (summary["metadata_version"], summary["transaction_version"]) == levels
    assert summary["internal_records_unknown"] == 0


def test_one_partition_folder_of_a_kafka_4_log_dir_reads_the_log_dirs_bootstrap_checkpoint():
    data = corpus_dir("real-broker-4") / "idempotent-4x" / "data"
    summary = scan(data / "idem-d-0").summary
    assert (summary["metadata_version"], summary["transaction_version"]) == (29, 2)


def test_a_log_dir_without_kraft_metadata_records_no_version():
    summary = scan(REPO / "fixtures" / "producer-errors").summary
    assert (summary["metadata_version"], summary["transaction_version"]) == (None, None)


def test_the_healthy_fixtures_metadata_log_decodes_as_kafka_3_9_wrote_it():
    """``fixtures/healthy``'s ``__cluster_metadata`` holds real records (fixtures/generate.py):
    every one decodes, its FeatureLevelRecord gives metadata.version 21 (3.9-IV0), so the 3.x
    timestamp defaults apply and nothing is found."""
    summary = scan(REPO / "fixtures" / "healthy").summary
    assert (summary["metadata_version"], summary["transaction_version"]) == (21, None)
    assert summary["internal_records_unknown"] == 0 and summary["findings_by_check"] == {}
    segment = REPO / "fixtures" / "healthy" / "__cluster_metadata-0" / "00000000000000000000.log"
    text = "".join(dump_file(str(segment), as_json=False, records=True, print_data=False))
    assert '"error"' not in text and '"unknown"' not in text
    assert '"record": "TopicRecord", "version": 0, "name": "orders.eu-west"' in text
    assert '"record": "KRaftVoters", "version": 0, "voters": [{"voter_id": 1' in text


def test_the_timestamp_bound_defaults_to_the_writing_versions_broker_default():
    data = corpus_dir("real-broker-4") / "tv2-transactions" / "data"
    kafka_4 = with_log_dir_facts(scan_options(), discover([str(data)])).validation
    assert kafka_4.timestamp_after_max_ms == HOUR and kafka_4.timestamp_before_max_ms is None
    kafka_3 = with_log_dir_facts(scan_options(), discover([str(corpus_dir("real-broker") / "transactions" / "data")]))
    assert (kafka_3.validation.timestamp_before_max_ms, kafka_3.validation.timestamp_after_max_ms) == (None, None)
    # An option given wins over the default.
    given = with_log_dir_facts(scan_options(["--timestamp-after-max-ms", "5"]), discover([str(data)]))
    assert given.validation.timestamp_after_max_ms == 5


def _log_dir_with_a_future_record(root: Path, bootstrap: Path | None, cluster_id: str = "a3Jhd2xlZC1maXh0dXJl") -> Path:
    """A log dir (with ``bootstrap`` copied in) whose one record is 2 h ahead of TS_BASE."""
    with LogDirWriter(root, cluster_id=cluster_id) as writer:
        w = writer.partition("late")
        w.append(BatchSpec(records=records(["on time"]), base_timestamp=TS_BASE))
        w.append(BatchSpec(records=records(["early bird"]), base_timestamp=TS_BASE + 2 * HOUR))
    if bootstrap is not None:
        shutil.copy(bootstrap, root / "bootstrap.checkpoint")
    return root


def test_a_kafka_4_log_dir_gets_the_one_hour_future_bound_a_kafka_3_log_dir_does_not(tmp_path):
    reference = ["--reference-time", str(TS_BASE)]
    four = corpus_dir("real-broker-4") / "tv2-transactions" / "data" / "bootstrap.checkpoint"
    found = scan(_log_dir_with_a_future_record(tmp_path / "four", four), reference).findings
    assert [(f.check, f.offset) for f in found] == [("timestamp_out_of_range", 1)]
    assert found[0].details["rule"] == (
        "Kafka 4.x broker default log.message.timestamp.after.max.ms=3600000 (the log dir's metadata.version is 29)"
    )
    three = corpus_dir("real-broker") / "transactions" / "data" / "bootstrap.checkpoint"
    assert scan(_log_dir_with_a_future_record(tmp_path / "three", three), reference).findings == []
    assert scan(_log_dir_with_a_future_record(tmp_path / "unknown", None), reference).findings == []


def _two_clusters(root: Path) -> list[str]:
    """A Kafka 4.2 cluster's log dir and a Kafka 3.6 cluster's (their own ``cluster.id``), each
    with a record 2 h ahead of TS_BASE."""
    four = corpus_dir("real-broker-4") / "tv2-transactions" / "data" / "bootstrap.checkpoint"
    three = corpus_dir("real-broker") / "transactions" / "data" / "bootstrap.checkpoint"
    return [
        str(_log_dir_with_a_future_record(root / "four", four, cluster_id="Zm91ci1jbHVzdGVyLTQy")),
        str(_log_dir_with_a_future_record(root / "three", three, cluster_id="dGhyZWUtY2x1c3Rlci0z")),
    ]


def _findings_by_log_dir(result) -> list[tuple[str, str, int]]:
    return [(Path(f.segment).parent.parent.name, f.check, f.offset) for f in result.findings]


def test_clusters_of_two_kafka_versions_scanned_together_each_keep_their_brokers_defaults(tmp_path):
    """Feature levels are a cluster's own (FeaturesImage): the 3.6 log dir keeps the 3.x default
    (no future bound) beside the 4.2 one, as when each is scanned alone."""
    paths = _two_clusters(tmp_path)
    together = audit_in_process(discover(paths), scan_options(["--reference-time", str(TS_BASE)]))
    assert _findings_by_log_dir(together) == [("four", "timestamp_out_of_range", 1)]
    summary = together.summary
    assert (summary["metadata_version"], summary["transaction_version"]) == (29, 2)
    assert summary["feature_levels_by_cluster"] == {
        "Zm91ci1jbHVzdGVyLTQy": {"metadata_version": 29, "transaction_version": 2},
        "dGhyZWUtY2x1c3Rlci0z": {"metadata_version": 14, "transaction_version": None},
    }


@pytest.mark.spark
def test_the_spark_job_gives_each_cluster_its_own_defaults(tmp_path, spark):
    from kafka_audit.engines.spark_job import run_scan

    paths = _two_clusters(tmp_path)
    options = scan_options(["--reference-time", str(TS_BASE)])
    assert _findings_by_log_dir(run_scan(spark, discover(paths), options)) == [("four", "timestamp_out_of_range", 1)]


def test_healthy_kafka_4_logs_stay_free_of_timestamp_findings():
    """The healthy 4.2.1 dirs, scanned with the 4.x bound against their files' times."""
    for case in ("tv2-transactions", "idempotent-4x", "consumer-group-848"):
        result = scan(corpus_dir("real-broker-4") / case / "data")
        assert not [f for f in result.findings if f.check.startswith("timestamp")], case


def test_internal_records_of_unknown_type_are_counted_and_dumped(tmp_path):
    """A ``__consumer_offsets`` record of a type no 4.2 schema has (9) and a ConsumerGroupMetadata
    value of a version after 0 are counted in the summary and named in ``dump``."""
    unknown_type = RecordSpec(key=struct.pack(">hh", 9, 1) + b"g", value=struct.pack(">h", 0))
    unknown_version = RecordSpec(key=struct.pack(">hh", 3, 1) + b"g", value=struct.pack(">hi", 1, 7) + b"\x00")
    known = RecordSpec(key=struct.pack(">hh", 3, 1) + b"g", value=struct.pack(">hi", 0, 7) + b"\x00")
    with LogDirWriter(tmp_path) as writer:
        writer.partition("__consumer_offsets", 0).append(BatchSpec(records=(known, unknown_type, unknown_version)))
    result = audit_in_process(discover([str(tmp_path)]), scan_options())
    assert result.summary["internal_records_unknown"] == 2
    segment = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    text = "".join(dump_file(str(segment), as_json=False, records=True, print_data=False))
    assert '"unknown": "unknown record type 9"' in text
    assert '"unknown": "unknown ConsumerGroupMetadataValue version 1"' in text
    assert '"record": "ConsumerGroupMetadata", "group_id": "g", "version": 0, "epoch": 7' in text


def test_remote_log_metadata_records_of_unknown_type_or_version_are_counted(tmp_path):
    """``__remote_log_metadata`` (RemoteLogMetadataSerde): a record type after 3 and a version
    after 1 are counted in ``internal_records_unknown``, never skipped silently; known ones are not."""
    from tests.support.rsm_writer import segment_metadata_record

    known = segment_metadata_record("t", "AAAAAAAAAAAAAAAAAAAAAA", 0, "AQEBAQEBAQEBAQEBAQEBAQ", 0, 9, 100)
    unknown_version = segment_metadata_record("t", "AAAAAAAAAAAAAAAAAAAAAA", 0, "AgICAgICAgICAgICAgICAg", 10, 19, 100,
                                              version=2)
    unknown_type = bytes((1, 9, 0)) + b"\x00"
    with LogDirWriter(tmp_path) as writer:
        writer.partition("__remote_log_metadata", 0).append(
            BatchSpec(records=tuple(RecordSpec(key=None, value=v) for v in (known, unknown_version, unknown_type)))
        )
    result = audit_in_process(discover([str(tmp_path)]), scan_options())
    assert result.summary["internal_records_unknown"] == 2


def test_internal_records_that_do_not_decode_by_their_schema_are_counted_and_shown(tmp_path):
    """SPEC section 3: a ``__cluster_metadata`` record of a known type and version whose bytes do
    not decode by its schema (a FeatureLevelRecord cut short, a KRaftVersion control record
    without its tagged fields) is counted in ``internal_records_unknown`` and shown in the table;
    a well-formed one is not counted."""
    from kafka_audit.record.record_batch import ControlRecordType
    from kafka_audit.report.scan_report import summary_rows
    from tests.support.writer import ControlSpec

    cut_short = bytes((1, 12, 0)) + b"metadata-1"  # FeatureLevelRecord v0: a name of 108 bytes
    well_formed = bytes((1, 12, 0, 17)) + b"metadata.version" + struct.pack(">h", 21) + b"\x00"
    with LogDirWriter(tmp_path) as writer:
        w = writer.partition("__cluster_metadata", 0)
        w.append(BatchSpec(control=ControlSpec(ControlRecordType.KRAFT_VERSION, value=b"\x00\x00\x00\x01")))
        w.append(BatchSpec(records=tuple(RecordSpec(key=None, value=v) for v in (well_formed, cut_short))))
    result = audit_in_process(discover([str(tmp_path)]), scan_options())
    assert result.summary["internal_records_unknown"] == 2
    assert result.summary["metadata_version"] == 21
    assert ("internal", "2 records of unknown type or version, or not decodable") in summary_rows(result.summary)
