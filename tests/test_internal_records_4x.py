"""Kafka 4.x internal records (issue 22 item 3): ``__consumer_offsets`` (classic, KIP-848
consumer-group, KIP-932 share-group and streams records), ``__share_group_state`` and the KRaft
metadata records, decoded by the schemas of the 4.2 source.

The oracle is Kafka's own view of the real-broker-4 corpus: DumpLogSegments 4.2.1 with its
offsets and cluster-metadata decoders (``kafka-dump-log/`` beside each ``data/``), whose key and
payload JSON every record we decode must equal, field for field (Kafka's camelCase names as our
snake_case ones)."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest

from kafka_audit.log.coordinator_records import decode_consumer_offsets, decode_share_group_state
from kafka_audit.log.internal_topics import count_unread, decoder_for
from kafka_audit.log.metadata_records import MetadataRecordDecoder
from kafka_audit.record.file_records import FileRecords
from kafka_audit.record.problem import Problem
from kafka_audit.report.dump import dump_file
from tests.support.audit_run import corpus_dir

# "| offset: 5 CreateTime: ... key: {...} payload: {...}" (the key is absent for metadata records).
_DUMP_LINE = re.compile(r"\| offset: (\d+) .*?(?:key: (\{.*\}) )?payload: (.*)$")


def _snake(value):
    """Kafka's JSON names (``memberEpoch``, ``kRaftVersion``) as ours (``member_epoch``)."""
    if isinstance(value, dict):
        return {re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", k).lower(): _snake(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_snake(v) for v in value]
    return value


def _decoded(path: Path) -> dict[int, dict]:
    decoder = decoder_for(str(path))
    out = {}
    with FileRecords(str(path)) as segment:
        for batch in segment.batches():
            assert not isinstance(batch, Problem)
            if not batch.is_control:
                for record in segment.records(batch, with_data=True).records:
                    out[record.offset] = decoder(record.key, record.value)
    return out


def _kafka_view(line_key: str | None, payload: str) -> dict:
    """What DumpLogSegments printed for one record, as one flat dict like ours."""
    expected = _snake(json.loads(line_key)["data"]) if line_key else {}
    if payload == "<DELETE>":
        return {**expected, "tombstone": True}
    value = json.loads(payload)
    return {**expected, "version": int(value["version"]), **_snake(value["data"])}


def _dumped_files(case: str):
    base = corpus_dir("real-broker-4") / case
    for dump in sorted((base / "kafka-dump-log").glob("*/*.dump.txt")):
        folder = dump.parent.name
        if folder.startswith(("__consumer_offsets", "__cluster_metadata")) and not dump.name.endswith(".snapshot.dump.txt"):
            yield base / "data" / folder / dump.name.removesuffix(".dump.txt"), dump


@pytest.mark.parametrize("case", ["consumer-group-848", "tv2-transactions", "idempotent-4x"])
def test_every_internal_record_decodes_as_kafka_dump_log_4_2_1_decodes_it(case):
    checked = 0
    for segment, dump in _dumped_files(case):
        ours = _decoded(segment)
        for line in dump.read_text().splitlines():
            match = _DUMP_LINE.match(line)
            if match is None:
                continue
            offset, key, payload = int(match.group(1)), match.group(2), match.group(3)
            got = ours[offset]
            assert "error" not in got and "unknown" not in got, (segment, offset, got)
            expected = _kafka_view(key, payload)
            # Our additions: the record's name, and the topic name a metadata record's topic id has.
            fields = {k: v for k, v in got.items() if k != "record" and not (k == "topic" and got["record"].endswith("Record"))}
            # Kafka prints an absent nullable tagged field as null; we print what the bytes hold.
            expected = {k: v for k, v in expected.items() if k in fields or v is not None}
            assert fields == expected, (segment, offset)
            checked += 1
    assert checked > 20


def test_the_kip_848_records_are_named_by_their_key_types():
    """README: types 1 and 2 of the classic protocol, 3, 5, 6, 7, 8 of the consumer-group
    protocol; none unknown (CoordinatorRecordType of the 4.2 group coordinator)."""
    data = corpus_dir("real-broker-4") / "consumer-group-848" / "data"
    names = set()
    for segment in sorted(data.glob("__consumer_offsets-*/*.log")):
        names |= {r["record"] for r in _decoded(segment).values()}
    assert names == {
        "OffsetCommit", "GroupMetadata", "ConsumerGroupMetadata", "ConsumerGroupMemberMetadata",
        "ConsumerGroupTargetAssignmentMetadata", "ConsumerGroupTargetAssignmentMember",
        "ConsumerGroupCurrentMemberAssignment",
    }


def test_dump_text_names_the_consumer_group_records_and_no_placeholder():
    path = corpus_dir("real-broker-4") / "consumer-group-848" / "data" / "__consumer_offsets-2" / "00000000000000000000.log"
    text = "".join(dump_file(str(path), as_json=False, records=True, print_data=False))
    assert "coordinator_record_" not in text and '"unknown"' not in text
    assert '"record": "ConsumerGroupCurrentMemberAssignment"' in text
    assert '"assigned_partitions": [{"topic_id": "FtpYmO9FSuqO0XNEjPMgug", "partitions": [0, 1]}]' in text


# -- hand-built records: share groups, unknown types and versions, strictness ------------------


def _str16(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def _compact(text: str) -> bytes:
    return bytes([len(text) + 1]) + text.encode()


_TOPIC_ID = bytes(range(16))
_TOPIC_ID_TEXT = "AAECAwQFBgcICQoLDA0ODw"  # Uuid.toString: URL-safe base64, no padding


def _share_key(record_type: int) -> bytes:
    return struct.pack(">h", record_type) + _str16("sg") + _TOPIC_ID + struct.pack(">i", 3)


def test_share_snapshot_with_its_tagged_delivery_complete_count():
    """ShareSnapshotValue v0 (share-coordinator, flexible): epochs, start offset, the tagged
    DeliveryCompleteCount (tag 0), timestamps and one state batch."""
    value = struct.pack(">hiiiq", 0, 2, 1, 7, 100) + struct.pack(">qq", 1_000, 2_000)
    value += bytes([2]) + struct.pack(">qqbh", 100, 109, 2, 1) + bytes([0])  # one batch, its tags
    value += bytes([1, 0, 4]) + struct.pack(">i", 10)  # tagged fields: tag 0, 4 bytes
    assert decode_share_group_state(_share_key(0), value) == {
        "record": "ShareSnapshot", "group_id": "sg", "topic_id": _TOPIC_ID_TEXT, "partition": 3, "version": 0,
        "snapshot_epoch": 2, "state_epoch": 1, "leader_epoch": 7, "start_offset": 100,
        "create_timestamp": 1_000, "write_timestamp": 2_000,
        "state_batches": [{"first_offset": 100, "last_offset": 109, "delivery_state": 2, "delivery_count": 1}],
        "delivery_complete_count": 10,
    }
    assert decode_share_group_state(_share_key(1), None) == {
        "record": "ShareUpdate", "group_id": "sg", "topic_id": _TOPIC_ID_TEXT, "partition": 3, "tombstone": True,
    }


def test_share_group_metadata_in_consumer_offsets():
    key = struct.pack(">h", 11) + _str16("sg")
    value = struct.pack(">hiq", 0, 4, -5) + bytes([0])
    assert decode_consumer_offsets(key, value) == {
        "record": "ShareGroupMetadata", "group_id": "sg", "version": 0, "epoch": 4, "metadata_hash": -5,
    }


def test_unknown_types_and_versions_are_named_not_guessed():
    assert decode_consumer_offsets(struct.pack(">h", 9) + _str16("g"), b"\x00\x00") == {
        "record": "unknown", "type": 9, "unknown": "unknown record type 9",
    }
    too_new = decode_consumer_offsets(struct.pack(">h", 3) + _str16("g"), struct.pack(">h", 1) + b"\x00\x00\x00\x01\x00")
    assert too_new == {"record": "ConsumerGroupMetadata", "group_id": "g", "version": 1,
                       "unknown": "unknown ConsumerGroupMetadataValue version 1"}
    decoder = MetadataRecordDecoder()
    assert decoder(None, bytes([1, 99, 0])) == {"record": "unknown", "api_key": 99, "version": 0,
                                                "unknown": "unknown metadata record type 99"}
    assert decoder(None, bytes([1, 12, 5]))["unknown"] == "unknown FeatureLevelRecord version 5"
    assert decoder(None, bytes([2, 12, 0]))["unknown"] == "unknown metadata frame version 2"


def test_strict_reading_of_flexible_versions():
    key = struct.pack(">h", 3) + _str16("g")
    ok = struct.pack(">hi", 0, 1) + bytes([1, 0, 8]) + struct.pack(">q", 42)
    assert decode_consumer_offsets(key, ok)["metadata_hash"] == 42
    # A tagged field whose bytes hold more than its value.
    padded = struct.pack(">hi", 0, 1) + bytes([1, 0, 9]) + struct.pack(">q", 42) + b"\x00"
    assert "holds 1 bytes more" in decode_consumer_offsets(key, padded)["error"]
    # Tags out of order.
    disordered = struct.pack(">hi", 0, 1) + bytes([2, 5, 0, 1, 0])
    assert "after tagged field" in decode_consumer_offsets(key, disordered)["error"]
    # Bytes after the message; a null where the schema allows none (ClientId of a member).
    assert "bytes left" in decode_consumer_offsets(key, ok + b"\x00")["error"]
    member_key = struct.pack(">h", 5) + _str16("g") + _str16("m")
    member = struct.pack(">h", 0) + bytes([0, 0, 0])  # InstanceId null, RackId null, ClientId null
    assert "non-nullable field client_id" in decode_consumer_offsets(member_key, member)["error"]
    # The non-flexible key of a flexible value: int16 lengths.
    assert decode_consumer_offsets(struct.pack(">h", 3) + _compact("g"), ok)["error"]


_CONTROL_LINE = re.compile(r"\| offset: (\d+) .*headerKeys: \[\] (LeaderChange:|SnapshotHeader|SnapshotFooter|KRaftVersion|KRaftVoters) (\{.*\})$")


@pytest.mark.parametrize("case", ["tv2-transactions", "consumer-group-848"])
def test_kraft_control_records_decode_as_kafka_dump_log_prints_them(case):
    """LeaderChange, KRaftVersion, KRaftVoters (the metadata log's first batch) and SnapshotHeader,
    KRaftVersion, KRaftVoters, SnapshotFooter (a KRaft snapshot), as DumpLogSegments 4.2.1 prints them."""
    base = corpus_dir("real-broker-4") / case
    checked = 0
    for name in ("00000000000000000000.log", "00000000000000000000-0000000000.checkpoint"):
        segment = base / "data" / "__cluster_metadata-0" / name
        lines = [json.loads(line) for line in dump_file(str(segment), as_json=True, records=True, print_data=False)]
        ours = {r["offset"]: r["decoded"] for b in lines if b.get("is_control") for r in b["records"]}
        for line in (base / "kafka-dump-log" / "__cluster_metadata-0" / f"{name}.dump.txt").read_text().splitlines():
            match = _CONTROL_LINE.match(line)
            if match:
                got = dict(ours[int(match.group(1))])
                assert got.pop("record") == match.group(2).rstrip(":")
                assert got == _snake(json.loads(match.group(3)))
                checked += 1
    assert checked == 7


def test_the_scan_counts_every_internal_record_its_decoder_cannot_read():
    """The segment step counts a record of an unknown type or version, and one that does not
    decode by its schema (SPEC section 3's ``internal_records_unknown``); a tombstone is read, and
    every record a real Kafka 4 broker wrote is read."""
    from kafka_audit.log.internal_topics import unread_test_for_topic

    samples = {
        "__consumer_offsets": [
            ((struct.pack(">h", 9) + _str16("g"), b"\x00\x00"), True),  # unknown type
            ((struct.pack(">h", 3) + _str16("g"), struct.pack(">h", 1)), True),  # unknown value version
            ((struct.pack(">h", 3) + _str16("g"), struct.pack(">hh", 0, 1)), True),  # a value cut inside its epoch
            ((struct.pack(">h", 3) + _str16("g"), struct.pack(">hi", 0, 1) + b"\x00"), False),  # ConsumerGroupMetadataValue v0
            ((struct.pack(">h", 3) + _str16("g"), None), False),  # a tombstone
            ((None, None), True),
        ],
        "__share_group_state": [((_share_key(0), struct.pack(">h", 3)), True), ((struct.pack(">h", 2), b""), True)],
        "__cluster_metadata": [((None, bytes([1, 99, 0])), True), ((None, bytes([1, 12, 5])), True),
                               ((None, bytes([2, 12, 0])), True), ((None, bytes([1, 12, 0, 1])), True),
                               ((None, bytes([1, 12, 0, 5]) + b"\x00" * 4), True)],
        "__transaction_state": [((struct.pack(">hh", 0, 1) + b"t", struct.pack(">h", 7)), True),
                                ((struct.pack(">hh", 3, 1) + b"t", None), True),
                                ((struct.pack(">hh", 0, 1) + b"t", None), False)],
    }
    for topic, records in samples.items():
        unread = unread_test_for_topic(topic)
        assert unread is not None
        for (key, value), expected in records:
            assert unread(key, value) == expected, (topic, key, value)
    assert unread_test_for_topic("orders") is None
    data = corpus_dir("real-broker-4") / "consumer-group-848" / "data"
    for segment in sorted(data.glob("__*/*.log")):
        test = unread_test_for_topic(segment.parent.name.rsplit("-", 1)[0])
        assert test is not None
        with FileRecords(str(segment)) as records:
            for batch in records.batches():
                assert not isinstance(batch, Problem)
                assert count_unread(records, batch, test) == 0, (segment, batch.base_offset)
