"""Offline decoding of Kafka's internal topics (SPEC section 3, ``dump``): ``__transaction_state``,
``__consumer_offsets``, ``__cluster_metadata`` and KRaft snapshot files, checked against what the
real-broker corpus READMEs, server.properties and server.log say the broker did."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest

from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.coordinator_records import decode_consumer_offsets, decode_transaction_log
from kafka_audit.log.internal_topics import decoder_for, is_kraft_snapshot, read_transaction_log
from kafka_audit.log.metadata_records import MetadataRecordDecoder
from kafka_audit.record.file_records import FileRecords
from kafka_audit.record.problem import Problem
from kafka_audit.report.dump import dump_file
from tests.support.audit_run import corpus_dir


@pytest.fixture(scope="module")
def real_broker() -> Path:
    return corpus_dir("real-broker")


@pytest.fixture(scope="module")
def real() -> Path:
    return corpus_dir("real")


def _transaction_log(data: Path) -> list[dict]:
    items = list(read_transaction_log(str(data / "__transaction_state-0" / "00000000000000000000.log"), StorageContext()))
    assert not [i for i in items if isinstance(i, Problem)]
    assert not [i for i in items if "error" in i]
    return items


def _records(path: Path) -> list[dict]:
    decoder = decoder_for(str(path))
    out = []
    with FileRecords(str(path)) as segment:
        for batch in segment.batches():
            assert not isinstance(batch, Problem)
            if batch.is_control:
                continue
            out.extend(decoder(r.key, r.value) for r in segment.records(batch, with_data=True).records)
    return out


# -- __transaction_state ------------------------------------------------------------------------


def test_transactions_dir_names_tx_a_and_tx_b_with_the_producer_ids_the_coordinator_logged(real_broker):
    data = real_broker / "transactions" / "data"
    server_log = (real_broker / "transactions" / "broker" / "server.log.txt").read_text(errors="replace")
    logged = set(re.findall(r"Initialized transactionalId (\S+) with producerId (\d+) and producer epoch (\d+)", server_log))
    # README: tx-A -> PID 0 epoch 0, tx-B -> PID 1 epoch 0, later tx-A -> PID 0 epoch 2.
    assert {("tx-A", "0", "0"), ("tx-B", "1", "0"), ("tx-A", "0", "2")} <= logged
    records = _transaction_log(data)
    seen = {(r["transactional_id"], str(r["producer_id"]), str(r["producer_epoch"])) for r in records if r["state"] == "Empty"}
    assert seen == logged
    # No transaction in flight at the end (README); producer-actions.json: tx-A's last transaction
    # (instance 2 txn#1) was aborted, tx-B's last one committed.
    last = {r["transactional_id"]: r for r in records}
    assert {tid: r["state"] for tid, r in last.items()} == {"tx-A": "CompleteAbort", "tx-B": "CompleteCommit"}
    assert last["tx-A"]["producer_epoch"] == 2
    # The fencing: the coordinator moved tx-A's open transaction to PrepareAbort at epoch 1
    # (the ABORT markers at offset 344 carry epoch 1), over both partitions of ``txn``.
    fence = [r for r in records if r["transactional_id"] == "tx-A" and r["producer_epoch"] == 1]
    assert [r["state"] for r in fence] == ["PrepareAbort", "CompleteAbort"]
    assert fence[0]["partitions"] == ["txn-0", "txn-1"]


def test_hanging_dir_shows_the_coordinator_timing_out_tx_hang(real_broker):
    records = _transaction_log(real_broker / "hanging-txn-timeout-aborted" / "data")
    by_id = {}
    for r in records:
        by_id.setdefault(r["transactional_id"], []).append(r)
    assert set(by_id) == {"tx-good", "tx-hang"}
    hang = by_id["tx-hang"]
    # README: tx-hang is PID 1 with transaction.timeout.ms=5000, aborted on timeout with epoch 1.
    assert {r["producer_id"] for r in hang} == {1}
    assert {r["transaction_timeout_ms"] for r in hang} == {5000}
    assert [(r["state"], r["producer_epoch"]) for r in hang] == [
        ("Empty", 0), ("Ongoing", 0), ("PrepareAbort", 1), ("CompleteAbort", 1)
    ]
    assert hang[1]["partitions"] == ["hang-0"]
    # About 6 s from the start of the transaction to the timeout rollback (README, server.log).
    assert 5000 <= hang[2]["last_update_timestamp"] - hang[2]["start_timestamp"] < 10_000
    assert {r["producer_id"] for r in by_id["tx-good"]} == {0}
    assert [r["state"] for r in by_id["tx-good"]].count("CompleteCommit") == 2  # two commits


def _txn_key(transactional_id: str) -> bytes:
    raw = transactional_id.encode()
    return struct.pack(">hh", 0, len(raw)) + raw


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def test_transaction_log_value_v1_flexible_with_tagged_fields():
    """TransactionLogValue v1 (KIP-890): compact strings/arrays and tagged fields 0, 1, 2, and 3
    (KIP-939's NextProducerEpoch); a tag no schema defines is kept as ``tag_<n>``."""
    body = struct.pack(">hqhib", 1, 7, 3, 60000, 1)  # version, producer id, epoch, timeout, Ongoing
    topic = b"orders"
    body += _uvarint(2) + _uvarint(len(topic) + 1) + topic + _uvarint(3) + struct.pack(">ii", 4, 9) + _uvarint(0)
    body += struct.pack(">qq", 1_700_000_000_500, 1_700_000_000_000)
    tags = [(0, struct.pack(">q", 5)), (1, struct.pack(">q", 8)), (2, struct.pack(">h", 2)), (3, struct.pack(">h", 4)), (9, b"\x01")]
    body += _uvarint(len(tags)) + b"".join(_uvarint(t) + _uvarint(len(v)) + v for t, v in tags)
    decoded = decode_transaction_log(_txn_key("tx-v1"), body)
    assert decoded == {
        "record": "transaction",
        "transactional_id": "tx-v1",
        "version": 1,
        "producer_id": 7,
        "producer_epoch": 3,
        "transaction_timeout_ms": 60000,
        "state": "Ongoing",
        "partitions": ["orders-4", "orders-9"],
        "last_update_timestamp": 1_700_000_000_500,
        "start_timestamp": 1_700_000_000_000,
        "previous_producer_id": 5,
        "next_producer_id": 8,
        "client_transaction_version": 2,
        "next_producer_epoch": 4,
        "tag_9": "01",
    }


def test_transaction_log_tombstone_and_bad_bytes_never_raise():
    assert decode_transaction_log(_txn_key("gone"), None) == {"record": "transaction", "transactional_id": "gone", "tombstone": True}
    truncated = decode_transaction_log(_txn_key("t"), struct.pack(">hqh", 0, 1, 0))
    assert "error" in truncated and truncated["producer_id"] == 1
    assert "unknown TransactionLogValue version 9" in decode_transaction_log(_txn_key("t"), struct.pack(">h", 9))["error"]
    assert decode_transaction_log(None, None)["error"] == "null key"
    assert "bytes left" in decode_transaction_log(_txn_key("t") + b"x", None)["error"]


# -- __consumer_offsets -------------------------------------------------------------------------


def _log_end_offsets(log_dir: Path) -> dict[tuple[str, int], int]:
    """Each partition's log end offset: one past the last offset of its last segment's batches
    (some of these dirs were copied from running brokers, whose checkpoints lag)."""
    ends = {}
    for folder in log_dir.iterdir():
        topic, _, number = folder.name.rpartition("-")
        if not folder.is_dir() or not number.isdigit():
            continue
        end = 0
        for segment in sorted(folder.glob("*.log")):
            with FileRecords(str(segment)) as records:
                for batch in records.batches():
                    if not isinstance(batch, Problem):
                        end = max(end, batch.last_offset + 1)
        ends[(topic, int(number))] = end
    return ends


@pytest.mark.parametrize("source", ["DanielMorales9__kafkafun", "Bheem6005__kafka", "marioBarbozaA__AIBulb"])
def test_consumer_offsets_commits_point_into_partitions_of_the_same_broker(real, source):
    """Every offset commit names a partition of this broker's log dir and an offset no higher
    than that partition's log end offset; group metadata names its protocol type and generation."""
    log_dir = real / source
    ends = _log_end_offsets(log_dir)
    commits = groups = 0
    for segment in sorted(log_dir.glob("__consumer_offsets-*/*.log")):
        for record in _records(segment):
            assert "error" not in record and "unknown" not in record, (segment, record)
            if record["record"] in ("LegacyOffsetCommit", "OffsetCommit") and not record.get("tombstone"):
                commits += 1
                assert (record["topic"], record["partition"]) in ends, record
                assert 0 <= record["offset"] <= ends[(record["topic"], record["partition"])], record
            elif record["record"] == "GroupMetadata" and not record.get("tombstone"):
                groups += 1
                assert record["protocol_type"] == "consumer" and record["generation"] >= 0
    assert groups > 0
    assert commits > 0 or source == "Bheem6005__kafka"  # its console consumers never committed


def test_offset_commit_value_versions():
    key = struct.pack(">hh", 1, 1) + b"g" + struct.pack(">h", 1) + b"t" + struct.pack(">i", 3)
    v1 = struct.pack(">hq", 1, 42) + struct.pack(">h", 0) + struct.pack(">qq", 1000, 2000)
    assert decode_consumer_offsets(key, v1) == {
        "record": "OffsetCommit", "group": "g", "topic": "t", "partition": 3,
        "version": 1, "offset": 42, "metadata": "", "commit_timestamp": 1000, "expire_timestamp": 2000,
    }
    v4 = struct.pack(">hqi", 4, 42, 5) + _uvarint(1) + struct.pack(">q", 1000) + _uvarint(0)
    assert decode_consumer_offsets(key, v4)["leader_epoch"] == 5
    assert decode_consumer_offsets(key, None)["tombstone"] is True
    assert decode_consumer_offsets(struct.pack(">h", 99), b"") == {"record": "unknown", "type": 99, "unknown": "unknown record type 99"}


# -- __cluster_metadata and KRaft snapshots -----------------------------------------------------


def test_cluster_metadata_holds_the_topics_configs_broker_and_producer_id_block(real_broker):
    base = real_broker / "transactions"
    records = _records(base / "data" / "__cluster_metadata-0" / "00000000000000000000.log")
    assert not [r for r in records if "error" in r]
    topics = {r["name"] for r in records if r["record"] == "TopicRecord"}
    assert topics == {"txn", "__transaction_state"}  # README: topic txn; 1-partition __transaction_state
    txn_partitions = sorted(r["partition_id"] for r in records if r["record"] == "PartitionRecord" and r["topic"] == "txn")
    assert txn_partitions == [0, 1]  # README: 2 partitions
    configs = {(r["resource_name"], r["name"]): r["value"] for r in records if r["record"] == "ConfigRecord"}
    assert configs[("txn", "segment.bytes")] == "65536"  # README: segment.bytes=65536
    properties = (base / "broker" / "server.properties").read_text()
    node_id = int(re.search(r"^node\.id=(\d+)", properties, re.M).group(1))
    listener = re.search(r"^advertised\.listeners=(\S+)", properties, re.M).group(1)
    brokers = [r for r in records if r["record"] == "RegisterBrokerRecord"]
    endpoints = [[f"{e['name']}://{e['host']}:{e['port']}" for e in b["end_points"]] for b in brokers]
    assert brokers and all(b["broker_id"] == node_id for b in brokers) and all(listener in e for e in endpoints)
    # The producer ids the broker handed out (0, 1, 2) lie below the end of its block.
    blocks = [r for r in records if r["record"] == "ProducerIdsRecord"]
    assert blocks and blocks[-1]["broker_id"] == node_id and blocks[-1]["next_producer_id"] > 2
    # metadata.version 3.6-IV2 is feature level 14 (MetadataVersion.IBP_3_6_IV2).
    assert {r["feature_level"] for r in records if r["record"] == "FeatureLevelRecord" and r["name"] == "metadata.version"} == {14}


@pytest.mark.parametrize("source", ["fuzibotond__Experts-in-team-innovation", "marioBarbozaA__AIBulb"])
def test_every_metadata_record_of_real_kraft_nodes_decodes_exactly(real, source):
    records = _records(real / source / "__cluster_metadata-0" / "00000000000000000000.log")
    assert records and not [r for r in records if "error" in r]
    partitions = [r for r in records if r["record"] == "PartitionRecord"]
    assert partitions and all("topic" in r for r in partitions)  # each names a topic created before it


def test_bootstrap_checkpoint_is_a_kraft_snapshot_dumped_as_record_batches(real_broker, capsys):
    path = real_broker / "transactions" / "data" / "bootstrap.checkpoint"
    assert is_kraft_snapshot(str(path)) and not is_kraft_snapshot("leader-epoch-checkpoint")
    lines = [json.loads(line) for line in dump_file(str(path), as_json=True, records=True, print_data=False)]
    assert [b["is_control"] for b in lines] == [True, False, True]
    # SnapshotHeader (3) first, SnapshotFooter (4) last: KRaft's snapshot framing.
    assert [lines[0]["control"]["type"], lines[2]["control"]["type"]] == [3, 4]
    assert lines[1]["records"][0]["decoded"] == {
        "record": "FeatureLevelRecord", "version": 0, "name": "metadata.version", "feature_level": 14
    }


def test_dump_text_decodes_the_transaction_log_by_folder_name(real_broker):
    path = real_broker / "hanging-txn-timeout-aborted" / "data" / "__transaction_state-0" / "00000000000000000000.log"
    text = "\n".join(dump_file(str(path), as_json=False, records=True, print_data=False))
    assert '"transactional_id": "tx-hang"' in text and '"state": "CompleteAbort"' in text
    # An ordinary topic's records are not decoded.
    plain = real_broker / "hanging-txn-timeout-aborted" / "data" / "hang-0" / "00000000000000000000.log"
    assert decoder_for(str(plain)) is None
    assert isinstance(decoder_for(str(real_broker / "transactions" / "data" / "__cluster_metadata-0" / "x.log")), MetadataRecordDecoder)
