"""KRaft metadata records of ``__cluster_metadata`` and its snapshots (``*.checkpoint``,
``bootstrap.checkpoint``), decoded as DumpLogSegments' ``ClusterMetadataLogMessageParser`` does.

A record's key is null; its value is ``MetadataRecordSerde``'s frame: ``frameVersion``,
``apiKey`` and ``version`` as unsigned varints, then the record (flexible versions: compact
strings and arrays, tagged fields). The record type names are ``MetadataRecordType``'s; the
fields decoded are those of ``metadata/src/main/resources/common/metadata/*.json`` that a
postmortem needs (topics, partitions and their leaders, brokers, producer-id blocks, feature
levels, configs); other types are named with their fields left undecoded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka_audit.record.message_reader import MalformedMessage, MessageReader, int32_array

# MetadataRecordType: api key -> record name.
RECORD_TYPES = {
    0: "RegisterBrokerRecord",
    1: "UnregisterBrokerRecord",
    2: "TopicRecord",
    3: "PartitionRecord",
    4: "ConfigRecord",
    5: "PartitionChangeRecord",
    6: "AccessControlRecord",
    7: "FenceBrokerRecord",
    8: "UnfenceBrokerRecord",
    9: "RemoveTopicRecord",
    10: "DelegationTokenRecord",
    11: "UserScramCredentialRecord",
    12: "FeatureLevelRecord",
    14: "ClientQuotaRecord",
    15: "ProducerIdsRecord",
    16: "RemoveFeatureLevelRecord",
    17: "BrokerRegistrationChangeRecord",
    18: "AccessControlEntryRecord",
    19: "RemoveAccessControlEntryRecord",
    20: "NoOpRecord",
    21: "ZkMigrationStateRecord",
    22: "RemoveUserScramCredentialRecord",
    23: "BeginTransactionRecord",
    24: "EndTransactionRecord",
    25: "AbortTransactionRecord",
    26: "RemoveDelegationTokenRecord",
    27: "RegisterControllerRecord",
    28: "ClearElrRecord",
    29: "UnregisterControllerRecord",
}
# MetadataRecordSerde.DEFAULT_FRAME_VERSION
FRAME_VERSION = 1

Body = Callable[[MessageReader, int], dict[str, Any]]


def _endpoint(reader: MessageReader) -> str:
    name, host, port, _protocol = reader.string(), reader.string(), reader.uint16(), reader.int16()
    reader.tagged_fields()
    return f"{name}://{host}:{port}"


def _feature_range(reader: MessageReader) -> dict[str, Any]:
    feature = {"name": reader.string(), "min_supported": reader.int16(), "max_supported": reader.int16()}
    reader.tagged_fields()
    return feature


def _uuid_array(reader: MessageReader) -> list[str] | None:
    return reader.array(MessageReader.uuid)


def _register_broker(r: MessageReader, version: int) -> dict[str, Any]:
    out: dict[str, Any] = {"broker_id": r.int32()}
    if version >= 2:
        out["is_migrating_zk_broker"] = r.boolean()
    out["incarnation_id"] = r.uuid()
    out["broker_epoch"] = r.int64()
    out["endpoints"] = r.array(_endpoint)
    out["features"] = r.array(_feature_range)
    out["rack"] = r.string()
    out["fenced"] = r.boolean()
    if version >= 1:
        out["in_controlled_shutdown"] = r.boolean()
    out.update(r.tagged_fields({0: ("log_dirs", _uuid_array)}))
    return out


def _register_controller(r: MessageReader, version: int) -> dict[str, Any]:
    out = {"controller_id": r.int32(), "incarnation_id": r.uuid(), "zk_migration_ready": r.boolean()}
    out["endpoints"] = r.array(_endpoint)
    out["features"] = r.array(_feature_range)
    out.update(r.tagged_fields())
    return out


def _broker_and_epoch(r: MessageReader, version: int) -> dict[str, Any]:
    out = {"broker_id": r.int32(), "broker_epoch": r.int64()}
    out.update(r.tagged_fields())
    return out


def _broker_registration_change(r: MessageReader, version: int) -> dict[str, Any]:
    out = {"broker_id": r.int32(), "broker_epoch": r.int64()}
    out.update(
        r.tagged_fields(
            {
                0: ("fenced", MessageReader.int8),
                1: ("in_controlled_shutdown", MessageReader.int8),
                2: ("log_dirs", _uuid_array),
            }
        )
    )
    return out


def _topic(r: MessageReader, version: int) -> dict[str, Any]:
    out = {"name": r.string(), "topic_id": r.uuid()}
    out.update(r.tagged_fields())
    return out


def _remove_topic(r: MessageReader, version: int) -> dict[str, Any]:
    out = {"topic_id": r.uuid()}
    out.update(r.tagged_fields())
    return out


def _partition(r: MessageReader, version: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "partition_id": r.int32(),
        "topic_id": r.uuid(),
        "replicas": int32_array(r),
        "isr": int32_array(r),
        "removing_replicas": int32_array(r),
        "adding_replicas": int32_array(r),
        "leader": r.int32(),
        "leader_epoch": r.int32(),
        "partition_epoch": r.int32(),
    }
    if version >= 1:
        out["directories"] = _uuid_array(r)
    out.update(
        r.tagged_fields(
            {
                0: ("leader_recovery_state", MessageReader.int8),
                1: ("eligible_leader_replicas", int32_array),
                2: ("last_known_elr", int32_array),
            }
        )
    )
    return out


def _partition_change(r: MessageReader, version: int) -> dict[str, Any]:
    out: dict[str, Any] = {"partition_id": r.int32(), "topic_id": r.uuid()}
    out.update(
        r.tagged_fields(
            {
                0: ("isr", int32_array),
                1: ("leader", MessageReader.int32),
                2: ("replicas", int32_array),
                3: ("removing_replicas", int32_array),
                4: ("adding_replicas", int32_array),
                5: ("leader_recovery_state", MessageReader.int8),
            }
        )
    )
    return out


def _config(r: MessageReader, version: int) -> dict[str, Any]:
    out = {"resource_type": r.int8(), "resource_name": r.string(), "name": r.string(), "value": r.string()}
    out.update(r.tagged_fields())
    return out


def _feature_level(r: MessageReader, version: int) -> dict[str, Any]:
    out = {"name": r.string(), "feature_level": r.int16()}
    out.update(r.tagged_fields())
    return out


def _producer_ids(r: MessageReader, version: int) -> dict[str, Any]:
    out = {"broker_id": r.int32(), "broker_epoch": r.int64(), "next_producer_id": r.int64()}
    out.update(r.tagged_fields())
    return out


def _zk_migration_state(r: MessageReader, version: int) -> dict[str, Any]:
    out = {"zk_migration_state": r.int8()}
    out.update(r.tagged_fields())
    return out


def _controller_id(r: MessageReader, version: int) -> dict[str, Any]:
    out = {"controller_id": r.int32()}
    out.update(r.tagged_fields())
    return out


def _tagged_name(tag_name: str) -> Body:
    def body(r: MessageReader, version: int) -> dict[str, Any]:
        return r.tagged_fields({0: (tag_name, MessageReader.string)})

    return body


_BODIES: dict[int, Body] = {
    0: _register_broker,
    1: _broker_and_epoch,
    2: _topic,
    3: _partition,
    4: _config,
    5: _partition_change,
    7: _broker_and_epoch,
    8: _broker_and_epoch,
    9: _remove_topic,
    12: _feature_level,
    15: _producer_ids,
    17: _broker_registration_change,
    20: lambda r, version: r.tagged_fields(),
    21: _zk_migration_state,
    23: _tagged_name("name"),
    24: lambda r, version: r.tagged_fields(),
    25: _tagged_name("reason"),
    27: _register_controller,
    29: _controller_id,
}


class MetadataRecordDecoder:
    """Decodes one file's metadata records in log order; remembers topic names by topic id so
    that partition records name their topic."""

    def __init__(self) -> None:
        self.topic_names: dict[str, str] = {}

    def __call__(self, key: bytes | None, value: bytes | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        try:
            if value is None:
                raise MalformedMessage("null value")
            reader = MessageReader(value, flexible=True)
            frame = reader.unsigned_varint()
            if frame != FRAME_VERSION:
                raise MalformedMessage(f"unknown metadata frame version {frame}")
            api_key, version = reader.unsigned_varint(), reader.unsigned_varint()
            out["record"] = RECORD_TYPES.get(api_key, f"UnknownRecord({api_key})")
            out["version"] = version
            body = _BODIES.get(api_key)
            if body is None:
                out["fields"] = "not decoded"
                return out
            out.update(body(reader, version))
            reader.expect_end()
        except MalformedMessage as exc:
            out["error"] = str(exc)
            return out
        self._name_topics(out)
        return out

    def _name_topics(self, out: dict[str, Any]) -> None:
        if out["record"] == "TopicRecord":
            self.topic_names[out["topic_id"]] = out["name"]
        elif "topic_id" in out and out["topic_id"] in self.topic_names:
            out["topic"] = self.topic_names[out["topic_id"]]
