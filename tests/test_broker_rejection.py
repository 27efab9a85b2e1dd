"""``broker_rejection``: broker log lines joined with the replayed log (rules/rejection/broker_rejection.py
through the partition step), on log dirs written by tests/support/writer.py and on the real 3.6.2
broker logs of the real-broker corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.cli.app import main
from kafka_audit.engines.local import audit_in_process
from kafka_audit.io.broker_log import read_broker_logs
from kafka_audit.log.log_dir import discover
from kafka_audit.rules.events import EventKind
from tests.support.audit_run import BUNDLED
from tests.support.broker_logs import ISSUE_SERVER_LOG, epoch_ms, write_issue_log_dir
from tests.support.writer import LogDirWriter, Producer, records
from tests.test_cli import cli, shared_session  # noqa: F401  (fixtures)

T0 = "2022-03-14 16:10:00"


def scan(log_dir: Path, server_log: str, tmp_path: Path, **options):
    path = tmp_path / "server.log"
    path.write_text(server_log)
    return audit_in_process(discover([str(log_dir)]), ScanOptions(broker_log=read_broker_logs([str(path)]), **options))


def rejections(result) -> list:
    return [f for f in result.findings if f.check == "broker_rejection"]


def append_failed(time: str, partition: str, exception_line: str, broker: int = 1) -> str:
    """A ReplicaManager entry: error(s"Error processing append operation on partition $topicPartition", t)."""
    return (
        f"[{time}] ERROR [ReplicaManager broker={broker}] Error processing append operation on partition {partition} "
        f"(kafka.server.ReplicaManager)\n{exception_line}\n"
    )


@pytest.fixture(scope="module")
def issue(tmp_path_factory):
    """The issue's two lines placed beside a log dir holding test-8 and test-55."""
    root = tmp_path_factory.mktemp("issue")
    write_issue_log_dir(root / "data")
    return scan(root / "data", ISSUE_SERVER_LOG, root)


def test_issue_new_epoch_line_names_the_only_candidate_its_state_and_the_cause(issue):
    [finding] = [f for f in rejections(issue) if f.partition == 8]
    assert (finding.error_code, finding.error_name, finding.severity) == (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", "warning")
    assert (finding.producer_id, finding.producer_epoch, finding.sequence) == (557891, 3, 4)
    assert finding.time == "2022-03-14T16:11:02.431Z"
    state = finding.details["state_at_time"]
    # test-8: 557891 wrote epoch 2 sequences 0..49 in 10 batches of 5 (offsets 0..67, every other
    # batch 900003's, one every 2 s from 16:10:00, records 1 ms apart): its last batch is sequences
    # 45..49, max timestamp 16:10:36.004.
    assert state["producer_id_source"] == "only candidate" and state["candidates"] == [557891]
    assert state["last_batch"]["last_sequence"] == 49 and state["last_batch"]["producer_epoch"] == 2
    assert state["last_batch"]["time"] == "2022-03-14T16:10:36.004Z"
    assert finding.details["explanation"] == (
        "the line names no producer id, and the only producer of test-8 whose epoch was below 3 then is 557891: "
        "producer 557891's last batch before 16:11:02 was epoch 2, sequences 45..49 at offset 67 (16:10:36); "
        "the request came with the new epoch 3 and sequence 4, and a new epoch must start at sequence 0: epoch 3's "
        "sequences 0..3 never reached the log before this batch, so the broker answered OUT_OF_ORDER_SEQUENCE_NUMBER"
    )


def test_issue_unknown_producer_line_is_explained_by_retention(issue):
    [finding] = [f for f in rejections(issue) if f.partition == 55]
    assert (finding.error_name, finding.producer_id, finding.details["broker_id"]) == ("UNKNOWN_PRODUCER_ID", 557891, 22)
    state = finding.details["state_at_time"]
    # 557891 wrote offsets 0..2519 (63 batches of 40, one a second from 16:00:00); retention deleted
    # the segments below 2620 at 16:10:58: only the snapshot at 2620 still holds its state.
    assert state["last_batch"]["source"] == "snapshot"
    assert (state["deleted_by_retention"], state["log_start_offset"], state["expired"]) == (True, 2620, False)
    assert finding.details["explanation"] == (
        "producer 557891's last batch before 16:11:05 was epoch 0, sequences 2480..2519 at offset 2519 "
        "(from the producer snapshot, 16:01:02); it was deleted by retention at 16:10:58 (log start 2620 > its last "
        "offset 2519); the broker had no state and answered UNKNOWN_PRODUCER_ID (KIP-360)"
    )
    assert finding.details["log_line"] == "\n".join(ISSUE_SERVER_LOG.splitlines()[4:6])


def test_issue_summary_counts_the_lines(issue):
    assert issue.summary["broker_log_rejections"] == 2
    assert issue.summary["broker_log_lines_unmatched"] == 0
    assert issue.summary["findings_by_check"]["broker_rejection"] == 2


def test_lines_about_partitions_outside_the_scan_are_counted(tmp_path):
    write_issue_log_dir(tmp_path / "data")
    result = audit_in_process(
        discover([str(tmp_path / "data")], partitions={8}),
        ScanOptions(broker_log=read_broker_logs([str(_write(tmp_path, ISSUE_SERVER_LOG))])),
    )
    assert [f.partition for f in rejections(result)] == [8]
    assert result.summary["broker_log_lines_unmatched"] == 4  # test-55's 3 retention lines and its rejection


def _write(folder: Path, text: str) -> Path:
    path = folder / "server.log"
    path.write_text(text)
    return path


def _one_producer_dir(root: Path, *, epoch: int = 0, batches: int = 10, tick_ms: int = 1000, transactional=False) -> Path:
    with LogDirWriter(root) as log_dir:
        writer = log_dir.partition("orders", 0, clock=epoch_ms(T0), tick_ms=tick_ms)
        producer = Producer(5, epoch=epoch, transactional=transactional)
        if transactional:
            producer.begin()
        for _ in range(batches):
            producer.send(writer, records(["v"] * 5))
    return root


def test_same_epoch_gap_names_the_missing_sequences(tmp_path):
    log_dir = _one_producer_dir(tmp_path / "data")
    line = append_failed(
        "2022-03-14 16:10:30,000", "orders-0",
        "org.apache.kafka.common.errors.OutOfOrderSequenceException: Out of order sequence number for producer 5 at "
        "offset 50 in partition orders-0: 60 (incoming seq. number), 49 (current end sequence number)",
    )
    [finding] = rejections(scan(log_dir, line, tmp_path))
    assert finding.offset == 50
    assert finding.details["explanation"] == (
        "producer 5's last batch before 16:10:30 was epoch 0, sequences 45..49 at offset 49 (16:10:09); the broker "
        "expected sequence 50 and got 60: sequences 50..59 never reached the log, an earlier batch of this producer "
        "failed or was lost and the producer sent the next one; the broker answered OUT_OF_ORDER_SEQUENCE_NUMBER"
    )


def test_state_is_taken_before_the_line_time_not_at_the_end_of_the_log(tmp_path):
    """Batches after the line's time are not what the broker knew."""
    log_dir = _one_producer_dir(tmp_path / "data")
    line = append_failed(
        "2022-03-14 16:10:04,500", "orders-0",
        "org.apache.kafka.common.errors.OutOfOrderSequenceException: Out of order sequence number for producer 5 at "
        "offset 25 in partition orders-0: 30 (incoming seq. number), 24 (current end sequence number)",
    )
    [finding] = rejections(scan(log_dir, line, tmp_path))
    last = finding.details["state_at_time"]["last_batch"]
    assert (last["last_sequence"], last["last_offset"], last["time"]) == (24, 24, "2022-03-14T16:10:04.004Z")


def test_expired_producer_state_explains_unknown_producer_id(tmp_path):
    log_dir = _one_producer_dir(tmp_path / "data")
    line = append_failed(
        "2022-03-14 16:40:00,000", "orders-0",
        "org.apache.kafka.common.errors.UnknownProducerIdException: Found no record of producerId=5 on the broker at "
        "offset 50in partition orders-0. It is possible that the last message with the producerId=5 has been removed "
        "due to hitting the retention limit.",
    )
    [finding] = rejections(scan(log_dir, line, tmp_path, producer_id_expiration_ms=600_000))
    state = finding.details["state_at_time"]
    assert (state["expired"], state["idle_ms"], state["deleted_by_retention"]) == (True, 1_790_996, False)
    assert finding.details["explanation"].endswith(
        "it had been idle 29 min, past producer.id.expiration.ms 600000, so the broker had expired its state; "
        "the broker had no state and answered UNKNOWN_PRODUCER_ID (KIP-360)"
    )


def test_fenced_epoch_names_when_the_newer_epoch_started(tmp_path):
    with LogDirWriter(tmp_path / "data") as log_dir:
        writer = log_dir.partition("orders", 0, clock=epoch_ms(T0), tick_ms=1000)
        old, new = Producer(5, epoch=2), Producer(5, epoch=3)
        old.send(writer, records(["a"] * 5))
        new.send(writer, records(["b"] * 5))
        new.send(writer, records(["c"] * 5))
    line = append_failed(
        "2022-03-14 16:10:10,000", "orders-0",
        "org.apache.kafka.common.errors.InvalidProducerEpochException: Epoch of producer 5 at offset 15 in orders-0 is 2, "
        "which is smaller than the last seen epoch 3",
    )
    [finding] = rejections(scan(tmp_path / "data", line, tmp_path))
    assert finding.client_outcome == "abortable"
    assert finding.details["explanation"].endswith(
        "the request came with epoch 2, below the current epoch 3, first written at offset 5 (16:10:01): a zombie "
        "instance fenced by the newer one, and the broker answered INVALID_PRODUCER_EPOCH"
    )


def test_a_message_without_producer_id_lists_every_candidate(tmp_path):
    with LogDirWriter(tmp_path / "data") as log_dir:
        writer = log_dir.partition("orders", 0, clock=epoch_ms(T0), tick_ms=1000)
        for producer in (Producer(5, epoch=1), Producer(6, epoch=0), Producer(7, epoch=4)):
            producer.send(writer, records(["a"] * 3))
    line = append_failed(
        "2022-03-14 16:10:10,000", "orders-0",
        "org.apache.kafka.common.errors.OutOfOrderSequenceException: Invalid sequence number for new epoch: 2 (request "
        "epoch), 7 (seq. number)",
    )
    [finding] = rejections(scan(tmp_path / "data", line, tmp_path))
    assert finding.producer_id is None
    assert finding.details["state_at_time"]["candidates"] == [6, 5]  # epochs below 2, most recent first
    assert "before 16:10:10: 6, 5;" in finding.details["explanation"]


def test_open_transaction_explains_invalid_txn_state(tmp_path):
    log_dir = _one_producer_dir(tmp_path / "data", batches=2, transactional=True)
    line = append_failed(
        "2022-03-14 16:10:05,000", "orders-0",
        "org.apache.kafka.common.errors.InvalidTxnStateException: Expected transactional write from producer 5 at offset "
        "(offset=10 segment=[0:200]) in partition orders-0",
    )
    [finding] = rejections(scan(log_dir, line, tmp_path))
    assert finding.details["state_at_time"]["open_transaction"] is True
    assert "its transaction was open (transactional batch at offset 9, no marker after it)" in finding.details["explanation"]


def test_a_batch_refused_for_its_content_points_at_where_it_would_have_gone(tmp_path):
    log_dir = _one_producer_dir(tmp_path / "data")
    line = (
        "[2022-03-14 16:10:05,500] DEBUG [KafkaApi-1] Produce request with correlation id 9 from client c on partition "
        "orders-0 failed due to org.apache.kafka.common.errors.RecordTooLargeException (kafka.server.KafkaApis)\n"
    )
    [finding] = rejections(scan(log_dir, line, tmp_path))
    assert (finding.error_code, finding.producer_id) == (10, None)
    assert finding.details["explanation"] == (
        "the broker refused a batch for orders-0 because the batch was larger than max.message.bytes and wrote none "
        "of it; the log's last batch before 16:10:05 ends at offset 29, so the refused batch would have followed it"
    )


def broker_events(result, topic: str, partition: int) -> list:
    """The timeline events the broker log gave one partition (ScanOptions.timeline), in time
    order; the replay's own ``log_start_moved`` row (where the scanned log starts) has no time."""
    mine = [
        e for e in result.events
        if (e.topic, e.partition) == (topic, partition)
        and (e.kind == EventKind.BROKER_LOG or (e.kind == EventKind.LOG_START_MOVED and e.timestamp is not None))
    ]
    return sorted(mine, key=lambda e: e.timestamp)


def test_timeline_events_of_retention_and_rejections(tmp_path):
    write_issue_log_dir(tmp_path / "data")
    events = broker_events(scan(tmp_path / "data", ISSUE_SERVER_LOG, tmp_path, timeline=True), "test", 55)
    assert [(e.kind, e.offset, e.producer_id, e.to_dict()["time"]) for e in events] == [
        (EventKind.BROKER_LOG, 0, None, "2022-03-14T16:10:58.102Z"),
        (EventKind.BROKER_LOG, 1280, None, "2022-03-14T16:10:58.102Z"),
        (EventKind.LOG_START_MOVED, 2620, None, "2022-03-14T16:10:58.140Z"),
        (EventKind.BROKER_LOG, None, 557891, "2022-03-14T16:11:05.017Z"),
    ]
    assert events[1].message == "segment at base offset 1280 deleted due to retention time 3600000ms breach"
    assert events[2].message == "log start offset moved to 2620"
    assert events[3].message.startswith("UNKNOWN_PRODUCER_ID: producer 557891's last batch before 16:11:05 was epoch 0")


def test_the_real_retention_log_adds_no_finding_and_dates_the_log_start(tmp_path):
    """retention-producer-expiry: its server.log has retention lines and no produce error, so the
    scan's findings do not change; the timeline gets the log start move to 2620 at 08:51:33.056."""
    case = BUNDLED / "real-broker" / "retention-producer-expiry"
    found = discover([str(case / "data")])
    plain = audit_in_process(found, ScanOptions())
    log = read_broker_logs([str(case / "broker" / "server.log.txt")])
    joined = audit_in_process(found, ScanOptions(broker_log=log))
    assert [f.to_dict() for f in joined.findings] == [f.to_dict() for f in plain.findings]
    assert (joined.summary["broker_log_lines"], joined.summary["broker_log_lines_unmatched"]) == (25, 0)
    events = broker_events(audit_in_process(found, ScanOptions(broker_log=log, timeline=True)), "ret", 0)
    moved = [e.to_dict() for e in events if e.kind == EventKind.LOG_START_MOVED]
    assert [(e["offset"], e["time"]) for e in moved] == [(2620, "2026-11-23T08:51:33.056Z")]


@pytest.mark.spark
def test_the_spark_job_gives_the_in_process_findings(spark, tmp_path):
    """The lines travel to the executors inside each partition's PartitionMeta."""
    from kafka_audit.engines import spark_job as pipeline

    write_issue_log_dir(tmp_path / "data")
    found = discover([str(tmp_path / "data")])
    options = ScanOptions(broker_log=read_broker_logs([str(_write(tmp_path, ISSUE_SERVER_LOG))]), timeline=True)
    on_spark = pipeline.run_scan(spark, found, options)
    in_process = audit_in_process(found, options)
    assert [f.to_dict() for f in on_spark.findings] == [f.to_dict() for f in in_process.findings]
    assert len(rejections(on_spark)) == 2
    for partition in (8, 55):
        spark_events = [e.to_dict() for e in broker_events(on_spark, "test", partition)]
        assert spark_events == [e.to_dict() for e in broker_events(in_process, "test", partition)] != []
    assert on_spark.summary["broker_log_rejections"] == 2


@pytest.mark.spark
def test_scan_broker_log_option_end_to_end(cli, tmp_path):
    write_issue_log_dir(tmp_path / "data")
    result = cli("scan", tmp_path / "data", "--broker-log", _write(tmp_path, ISSUE_SERVER_LOG), "--format", "json", "--quiet")
    assert result.exit_code == 0, result.output  # broker_rejection is a warning
    report = json.loads(result.stdout)
    found = [f for f in report["findings"] if f["check"] == "broker_rejection"]
    assert [(f["partition"], f["producer_id"], f["error_name"]) for f in found] == [
        (8, 557891, "OUT_OF_ORDER_SEQUENCE_NUMBER"),
        (55, 557891, "UNKNOWN_PRODUCER_ID"),
    ]
    assert report["summary"]["broker_log_lines_unmatched"] == 0


def test_an_unreadable_broker_log_is_exit_2_with_one_line(capsys, tmp_path):
    write_issue_log_dir(tmp_path / "data")
    with pytest.raises(SystemExit) as stop:
        main(["scan", str(tmp_path / "data"), "--broker-log", str(tmp_path / "nope.log")])
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert err.strip() == f"kafka-audit: --broker-log {tmp_path / 'nope.log'}: no such file or directory"


def test_retention_without_a_dated_line_says_the_deletion_is_undated(tmp_path):
    """Only the error line, no retention line: the log start (2620) says the batch is gone now,
    nothing says it was gone at 16:11:05."""
    write_issue_log_dir(tmp_path / "data")
    only_error = "\n".join(ISSUE_SERVER_LOG.splitlines()[4:6]) + "\n"
    [finding] = rejections(scan(tmp_path / "data", only_error, tmp_path))
    assert finding.details["state_at_time"]["deleted_by_retention"] is None
    assert finding.details["explanation"].endswith(
        "retention has since deleted it (log start now 2620 > its last offset 2519) but the given broker logs date no "
        "deletion before 16:11:05; the broker had no state and answered UNKNOWN_PRODUCER_ID (KIP-360)"
    )


def test_unknown_producer_id_that_neither_retention_nor_expiry_explains(tmp_path):
    log_dir = _one_producer_dir(tmp_path / "data")
    line = append_failed(
        "2022-03-14 16:10:30,000", "orders-0",
        "org.apache.kafka.common.errors.UnknownProducerIdException: Found no record of producerId=5 on the broker. It is "
        "possible that the last message with the producerId=5 has been removed due to hitting the retention limit.",
    )
    [finding] = rejections(scan(log_dir, line, tmp_path))
    assert "yet that batch was still in the log and the producer idle only 21.0 s" in finding.details["explanation"]


def test_old_fencing_wording_finds_the_producer_at_the_brokers_epoch(tmp_path):
    with LogDirWriter(tmp_path / "data") as log_dir:
        writer = log_dir.partition("orders", 0, clock=epoch_ms(T0), tick_ms=1000)
        Producer(5, epoch=3).send(writer, records(["a"] * 3))
        Producer(6, epoch=0).send(writer, records(["b"] * 3))
    line = append_failed(
        "2022-03-14 16:10:10,000", "orders-0",
        "org.apache.kafka.common.errors.ProducerFencedException: Producer's epoch is no longer valid. There is probably "
        "another producer with a newer epoch. 2 (request epoch), 3 (server epoch)",
    )
    [finding] = rejections(scan(tmp_path / "data", line, tmp_path))
    assert (finding.producer_id, finding.error_name, finding.client_outcome) == (5, "PRODUCER_FENCED", "fatal")
    assert finding.details["explanation"].startswith(
        "the line names no producer id, and the only producer of orders-0 whose epoch was 3 then is 5: producer 5's "
        "last batch before 16:10:10 was epoch 3"
    )


def test_a_line_placed_in_the_real_idle_window_finds_the_state_the_real_broker_expired(tmp_path):
    """retention-producer-expiry: P (producer id 0) stopped at sequence 2999 and idled 25 s with
    producer.id.expiration.ms=10000 (server.properties); the real broker's own log then says
    "Wrote producer snapshot at offset 3100 with 0 producer ids" (08:52:02). A Kafka 2.3 broker
    would have answered P's next batch UNKNOWN_PRODUCER_ID (the 3.6 broker accepted it): that line,
    placed at 08:52:01 in the real log, is explained by the real batches and the expiry."""
    case = BUNDLED / "real-broker" / "retention-producer-expiry"
    real = (case / "broker" / "server.log.txt").read_text()
    assert "Wrote producer snapshot at offset 3100 with 0 producer ids" in real
    line = append_failed(
        "2026-11-23 08:52:01,000", "ret-0",
        "org.apache.kafka.common.errors.UnknownProducerIdException: Found no record of producerId=0 on the broker. It is "
        "possible that the last message with the producerId=0 has been removed due to hitting the retention limit.",
    )
    [finding] = rejections(scan(case / "data", real + line, tmp_path, producer_id_expiration_ms=10_000))
    state = finding.details["state_at_time"]
    # README "Kafka's own view": 0/0: 2520-3419 @ 2620-3519, so sequence 2999 sits at offset 3099.
    assert (state["last_batch"]["last_sequence"], state["last_batch"]["last_offset"]) == (2999, 3099)
    # The log start moved to 2620 at 08:51:33.056 (the real line), below P's batch: not deleted.
    assert (state["log_start_offset"], state["deleted_by_retention"], state["expired"]) == (2620, False, True)
    assert "past producer.id.expiration.ms 10000, so the broker had expired its state" in finding.details["explanation"]


def test_scan_broker_log_on_the_local_engine(capsys, tmp_path):
    write_issue_log_dir(tmp_path / "data")
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    _write(log_dir, ISSUE_SERVER_LOG)
    with pytest.raises(SystemExit) as stop:
        main(["scan", str(tmp_path / "data"), "--broker-log", str(log_dir), "--engine", "local", "--format", "json", "--quiet"])
    assert stop.value.code == 0
    report = json.loads(capsys.readouterr().out)
    assert [(f["partition"], f["error_code"]) for f in report["findings"] if f["check"] == "broker_rejection"] == [(8, 45), (55, 59)]
    assert (report["summary"]["engine"], report["summary"]["broker_log_files"]) == ("local", 1)


def test_the_library_call_takes_broker_logs(tmp_path):
    """SPEC section 5: kafka_audit.scan(paths, **options) with the scan options, --broker-log among them."""
    from kafka_audit import scan as library_scan

    write_issue_log_dir(tmp_path / "data")
    result = library_scan(tmp_path / "data", broker_logs=[_write(tmp_path, ISSUE_SERVER_LOG)])
    assert [(f["partition"], f["error_name"]) for f in result.findings if f["check"] == "broker_rejection"] == [
        (8, "OUT_OF_ORDER_SEQUENCE_NUMBER"), (55, "UNKNOWN_PRODUCER_ID"),
    ]
    with pytest.raises(ValueError, match="no such file or directory"):
        library_scan(tmp_path / "data", broker_logs=[tmp_path / "missing.log"])
