"""Records of the coordinators' internal topics, decoded offline as DumpLogSegments'
``TransactionLogMessageParser`` and ``OffsetsMessageParser`` do.

``__transaction_state``: key ``version i16`` + TransactionLogKey (``transactionalId``); value
``version i16`` + TransactionLogValue (v0, and v1 flexible with the tagged ``PreviousProducerId`` (0),
``NextProducerId`` (1), ``ClientTransactionVersion`` (2) and ``NextProducerEpoch`` (3, KIP-939's
two-phase commit: the epoch beside ``NextProducerId``)); a null value is a tombstone (the transactional
id expired). Schemas: ``TransactionLogKey.json`` / ``TransactionLogValue.json`` of apache/kafka.

``__consumer_offsets`` and ``__share_group_state``: key ``type i16`` + the key's fields, value
``version i16`` + the value's fields, by the schemas of :mod:`kafka_audit.log.coordinator_schemas`
(every record type of Kafka 4.2's group and share coordinators).

Every decoder returns a dict; bytes that do not hold what their version says give a dict with
``error`` saying why, never an exception.
"""

from __future__ import annotations

import base64
from typing import Any

from kafka_audit.log.coordinator_schemas import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    GROUP_RECORDS,
    SHARE_RECORDS,
    RecordSchemas,
)
from kafka_audit.log.message_schema import Schema
from kafka_audit.record.message_reader import MalformedMessage, MessageReader, int32_array

# kafka.coordinator.transaction.TransactionState ids (TransactionState.fromId).
TRANSACTION_STATES = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}
# Versions a reader of these schemas knows (validVersions); a higher one is reported, not guessed.
_TXN_VALUE_VERSIONS = range(0, 2)


def _version(data: bytes) -> tuple[int, MessageReader]:
    reader = MessageReader(data)
    return reader.int16(), reader


def decode_transaction_log(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """A ``__transaction_state`` record: transactional id and the coordinator's metadata for it."""
    out: dict[str, Any] = {"record": "transaction"}
    try:
        if key is None:
            raise MalformedMessage("null key")
        key_version, reader = _version(key)
        if key_version != 0:
            raise MalformedMessage(f"unknown TransactionLogKey version {key_version}")
        out["transactional_id"] = reader.string()
        reader.expect_end()
        if value is None:
            out["tombstone"] = True
            return out
        version, reader = _version(value)
        out["version"] = version
        if version not in _TXN_VALUE_VERSIONS:
            raise MalformedMessage(f"unknown TransactionLogValue version {version}")
        reader.flexible = version >= 1
        out["producer_id"] = reader.int64()
        out["producer_epoch"] = reader.int16()
        out["transaction_timeout_ms"] = reader.int32()
        status = reader.int8()
        out["state"] = TRANSACTION_STATES.get(status, f"Unknown({status})")
        partitions = reader.array(_transaction_partitions)
        out["partitions"] = [f"{topic}-{p}" for topic, ids in partitions or () for p in ids or ()]
        out["last_update_timestamp"] = reader.int64()
        out["start_timestamp"] = reader.int64()
        out.update(
            reader.tagged_fields(
                {
                    0: ("previous_producer_id", MessageReader.int64),
                    1: ("next_producer_id", MessageReader.int64),
                    2: ("client_transaction_version", MessageReader.int16),
                    3: ("next_producer_epoch", MessageReader.int16),  # KIP-939
                }
            )
        )
        reader.expect_end()
    except MalformedMessage as exc:
        out["error"] = str(exc)
    return out


def _transaction_partitions(reader: MessageReader) -> tuple[str | None, list[int] | None]:
    topic = reader.string()
    ids = int32_array(reader)
    reader.tagged_fields()
    return topic, ids


def decode_consumer_offsets(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """A ``__consumer_offsets`` record (``GroupCoordinatorRecordSerde``): an offset commit, a
    classic group's metadata, or a consumer/share/streams group record."""
    out = decode_coordinator_record(GROUP_RECORDS, key, value)
    if out.get("record") == "GroupMetadata" and out.get("protocol_type") == "consumer":
        for member in out.get("members") or ():
            member["subscription"] = _embedded(CONSUMER_PROTOCOL_SUBSCRIPTION, member["subscription"])
            member["assignment"] = _embedded(CONSUMER_PROTOCOL_ASSIGNMENT, member["assignment"])
    return out


def _embedded(embedded: Schema, encoded: str) -> Any:
    """A classic consumer's subscription or assignment (base64 bytes of GroupMetadataValue),
    decoded as DumpLogSegments' ``prepareGroupMetadataValue`` does: ``version i16`` then the
    message, later fields ignored (the consumer protocol is forward compatible); bytes that do
    not decode stay as they are."""
    data = base64.b64decode(encoded)
    try:
        return embedded.read(data, MessageReader(data).int16(), pos=2, to_end=False)
    except MalformedMessage:
        return encoded


def decode_share_group_state(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """A ``__share_group_state`` record (``ShareCoordinatorRecordSerde``): ShareSnapshot or ShareUpdate."""
    return decode_coordinator_record(SHARE_RECORDS, key, value)


def decode_coordinator_record(records: dict[int, RecordSchemas], key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """``CoordinatorRecordSerde.deserialize``: the key's int16 is the record type, the key's
    fields follow at version 0; the value's int16 is its version, the value's fields follow; a
    null value is a tombstone. An unknown type (``UnknownRecordTypeException``) or value version
    (``UnknownRecordVersionException``) is reported under ``unknown``, with what could be read."""
    out: dict[str, Any] = {}
    try:
        if key is None:
            raise MalformedMessage("null key")
        record_type, _ = _version(key)
        entry = records.get(record_type)
        if entry is None:
            out.update(record="unknown", type=record_type, unknown=f"unknown record type {record_type}")
            return out
        name, key_schema, value_schema = entry
        out["record"] = name
        out.update(key_schema.read(key, 0, pos=2))
        if value is None:
            out["tombstone"] = True
            return out
        version, _ = _version(value)
        out["version"] = version
        if not value_schema.knows(version):
            out["unknown"] = f"unknown {value_schema.name} version {version}"
            return out
        out.update(value_schema.read(value, version, pos=2))
    except MalformedMessage as exc:
        out["error"] = str(exc)
    return out
