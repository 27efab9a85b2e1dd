"""Records of the coordinators' internal topics, decoded offline as DumpLogSegments'
``TransactionLogMessageParser`` and ``OffsetsMessageParser`` do.

``__transaction_state``: key ``version i16`` + TransactionLogKey (``transactionalId``); value
``version i16`` + TransactionLogValue (v0, and v1 flexible with the tagged ``PreviousProducerId``,
``NextProducerId``, ``ClientTransactionVersion``); a null value is a tombstone (the transactional
id expired). Schemas: ``TransactionLogKey.json`` / ``TransactionLogValue.json`` of apache/kafka.

``__consumer_offsets``: key ``version i16``: 0 and 1 OffsetCommitKey (group, topic, partition),
2 GroupMetadataKey (group); values OffsetCommitValue v0-v4 and GroupMetadataValue v0-v4 (v4
flexible). Schemas: ``OffsetCommit*.json`` / ``GroupMetadata*.json`` of the group coordinator.

Every decoder returns a dict; bytes that do not hold what their version says give a dict with
``error`` saying why, never an exception.
"""

from __future__ import annotations

from typing import Any

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
_OFFSET_COMMIT_VALUE_VERSIONS = range(0, 5)
_GROUP_METADATA_VALUE_VERSIONS = range(0, 5)
OFFSET_COMMIT_KEY_VERSIONS = (0, 1)
GROUP_METADATA_KEY_VERSION = 2


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
    """A ``__consumer_offsets`` record: an offset commit or a group's metadata."""
    out: dict[str, Any] = {}
    try:
        if key is None:
            raise MalformedMessage("null key")
        key_version, reader = _version(key)
        if key_version in OFFSET_COMMIT_KEY_VERSIONS:
            out["record"] = "offset_commit"
            out["group"] = reader.string()
            out["topic"] = reader.string()
            out["partition"] = reader.int32()
            reader.expect_end()
            if value is None:
                out["tombstone"] = True
            else:
                out.update(_offset_commit_value(value))
        elif key_version == GROUP_METADATA_KEY_VERSION:
            out["record"] = "group_metadata"
            out["group"] = reader.string()
            reader.expect_end()
            if value is None:
                out["tombstone"] = True
            else:
                out.update(_group_metadata_value(value))
        else:
            # The new group coordinator's record types (KIP-848) are not decoded here.
            out["record"] = f"coordinator_record_{key_version}"
    except MalformedMessage as exc:
        out["error"] = str(exc)
    return out


def _offset_commit_value(value: bytes) -> dict[str, Any]:
    version, reader = _version(value)
    if version not in _OFFSET_COMMIT_VALUE_VERSIONS:
        raise MalformedMessage(f"unknown OffsetCommitValue version {version}")
    reader.flexible = version >= 4
    out: dict[str, Any] = {"version": version, "offset": reader.int64()}
    if version >= 3:
        out["leader_epoch"] = reader.int32()
    out["metadata"] = reader.string()
    out["commit_timestamp"] = reader.int64()
    if version == 1:
        out["expire_timestamp"] = reader.int64()
    reader.tagged_fields()
    reader.expect_end()
    return out


def _group_metadata_value(value: bytes) -> dict[str, Any]:
    version, reader = _version(value)
    if version not in _GROUP_METADATA_VALUE_VERSIONS:
        raise MalformedMessage(f"unknown GroupMetadataValue version {version}")
    reader.flexible = version >= 4
    out: dict[str, Any] = {
        "version": version,
        "protocol_type": reader.string(),
        "generation": reader.int32(),
        "protocol": reader.string(),
        "leader": reader.string(),
    }
    if version >= 2:
        out["current_state_timestamp"] = reader.int64()
    out["members"] = reader.array(lambda r: _member(r, version)) or []
    reader.tagged_fields()
    reader.expect_end()
    return out


def _member(reader: MessageReader, version: int) -> dict[str, Any]:
    member: dict[str, Any] = {"member_id": reader.string()}
    if version >= 3:
        member["group_instance_id"] = reader.string()
    member["client_id"] = reader.string()
    member["client_host"] = reader.string()
    if version >= 1:
        member["rebalance_timeout"] = reader.int32()
    member["session_timeout"] = reader.int32()
    subscription = reader.bytes_()
    assignment = reader.bytes_()
    member["subscription_size"] = -1 if subscription is None else len(subscription)
    member["assignment_size"] = -1 if assignment is None else len(assignment)
    reader.tagged_fields()
    return member
