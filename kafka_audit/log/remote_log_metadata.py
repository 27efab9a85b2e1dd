"""Records of ``__remote_log_metadata`` (KIP-405), decoded as ``RemoteLogMetadataSerde`` reads them,
and each remote segment's latest state as ``RemoteLogMetadataCache`` keeps it.

A record's key is null; its value is ``AbstractApiMessageSerde``'s frame: frame version (1),
``apiKey`` and ``version`` as unsigned varints, then the message in its flexible form
(``storage/src/main/resources/message/*.json``): 0 ``RemoteLogSegmentMetadataRecord``, 1
``RemoteLogSegmentMetadataUpdateRecord``, 2 ``RemotePartitionDeleteMetadataRecord``, 3
``RemoteLogSegmentMetadataSnapshotRecord``, each at version 0 (``validVersions: "0"``), the only
version Kafka defines. Their one tagged field: ``TxnIndexEmpty`` (tag 0) of the segment and
snapshot records; the update and partition-delete records define none (a tag a record carries
anyway is kept as ``tag_<n>``, as Kafka keeps unknown tagged fields). States (``RemoteLogSegmentState``): 0
COPY_SEGMENT_STARTED, 1 COPY_SEGMENT_FINISHED, 2 DELETE_SEGMENT_STARTED, 3 DELETE_SEGMENT_FINISHED;
``RemotePartitionDeleteState``: 0 DELETE_PARTITION_MARKED, 1 DELETE_PARTITION_STARTED, 2
DELETE_PARTITION_FINISHED.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kafka_audit.io.storage_context import StorageContext
from kafka_audit.record.file_records import FileRecords
from kafka_audit.record.message_reader import MalformedMessage, MessageReader, framed_message
from kafka_audit.record.problem import Problem

FRAME_VERSION = 1
RECORD_TYPES = {
    0: "RemoteLogSegmentMetadataRecord",
    1: "RemoteLogSegmentMetadataUpdateRecord",
    2: "RemotePartitionDeleteMetadataRecord",
    3: "RemoteLogSegmentMetadataSnapshotRecord",
}
SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED", 3: "DELETE_SEGMENT_FINISHED"}
PARTITION_DELETE_STATES = {0: "DELETE_PARTITION_MARKED", 1: "DELETE_PARTITION_STARTED", 2: "DELETE_PARTITION_FINISHED"}
COPY_STARTED, COPY_FINISHED, DELETE_STARTED, DELETE_FINISHED = (SEGMENT_STATES[i] for i in range(4))


def _topic_id_partition(r: MessageReader) -> dict[str, Any]:
    out = {"topic": r.string(), "topic_id": r.uuid(), "partition": r.int32()}
    r.tagged_fields()
    return out


def _segment_id(r: MessageReader) -> dict[str, Any]:
    out = {**_topic_id_partition(r), "segment_id": r.uuid()}
    r.tagged_fields()
    return out


def _leader_epoch(r: MessageReader) -> list[int]:
    entry = [r.int32(), r.int64()]
    r.tagged_fields()
    return entry


def _state(r: MessageReader, states: dict[int, str]) -> str:
    value = r.int8()
    return states.get(value, f"UNKNOWN({value})")


def _segment_body(r: MessageReader, snapshot: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"segment_id": r.uuid()} if snapshot else _segment_id(r)
    out["start_offset"], out["end_offset"] = r.int64(), r.int64()
    out["broker_id"], out["max_timestamp_ms"], out["event_timestamp_ms"] = r.int32(), r.int64(), r.int64()
    out["segment_leader_epochs"] = r.array(_leader_epoch)
    out["segment_size_in_bytes"] = r.int32()
    custom = r.bytes_()
    out["custom_metadata_size"] = None if custom is None else len(custom)
    out["state"] = _state(r, SEGMENT_STATES)
    out.update(r.tagged_fields({0: ("txn_index_empty", MessageReader.boolean)}))
    return out


def _update_body(r: MessageReader) -> dict[str, Any]:
    out = _segment_id(r)
    out["broker_id"], out["event_timestamp_ms"] = r.int32(), r.int64()
    custom = r.bytes_()
    out["custom_metadata_size"] = None if custom is None else len(custom)
    out["state"] = _state(r, SEGMENT_STATES)
    out.update(r.tagged_fields())
    return out


def _partition_delete_body(r: MessageReader) -> dict[str, Any]:
    out = _topic_id_partition(r)
    out["broker_id"], out["event_timestamp_ms"] = r.int32(), r.int64()
    out["state"] = _state(r, PARTITION_DELETE_STATES)
    out.update(r.tagged_fields())
    return out


# The highest version of each record type (storage/src/main/resources/message/*Record.json:
# validVersions "0" for all four).
_MAX_VERSION = 0
# RECORD_TYPES's RemoteLogSegmentMetadataSnapshotRecord: a segment record with the same body.
_SNAPSHOT_RECORD = 3


def decode_remote_log_metadata(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """One record's value decoded (``record``, ``version`` and its fields), or ``error``."""
    out: dict[str, Any] = {}
    try:
        reader, frame = framed_message(value)
        if frame != FRAME_VERSION:
            raise MalformedMessage(f"unknown frame version {frame} (only {FRAME_VERSION} is supported)")
        api_key, version = reader.unsigned_varint(), reader.unsigned_varint()
        out["record"] = RECORD_TYPES.get(api_key, f"UnknownRecord({api_key})")
        out["version"] = version
        if api_key not in RECORD_TYPES or version > _MAX_VERSION:
            out["error"] = f"unknown record type {api_key} version {version}"
            return out
        if api_key in (0, 3):
            out.update(_segment_body(reader, snapshot=api_key == _SNAPSHOT_RECORD))
        elif api_key == 1:
            out.update(_update_body(reader))
        else:
            out.update(_partition_delete_body(reader))
        reader.expect_end()
    except MalformedMessage as exc:
        out["error"] = str(exc)
    return out


@dataclass(slots=True)
class RemoteSegmentState:
    """One remote segment's metadata: the ``RemoteLogSegmentMetadataRecord`` and its latest state."""

    topic: str
    topic_id: str
    partition: int
    segment_id: str
    start_offset: int
    end_offset: int
    segment_size_in_bytes: int
    state: str
    txn_index_empty: bool | None = None
    # Where its records lie in __remote_log_metadata: the first and the latest.
    first_offset: int | None = None
    last_offset: int | None = None
    event_timestamp_ms: int | None = None


@dataclass(slots=True)
class RemoteLogState:
    """Every remote segment met in the records read, by segment id; partitions marked for deletion;
    records that could not be read (``internal_records_unknown``)."""

    segments: dict[str, RemoteSegmentState] = field(default_factory=dict)
    deleted_partitions: dict[tuple[str, int], str] = field(default_factory=dict)
    unknown_records: int = 0
    notes: list[str] = field(default_factory=list)

    def apply(self, record: dict[str, Any], offset: int | None) -> None:
        """``RemoteLogMetadataCache``: an add (or snapshot) records the segment, an update moves
        its state."""
        if "error" in record:
            self.unknown_records += 1
            return
        kind = record["record"]
        if kind == RECORD_TYPES[2]:
            self.deleted_partitions[(record["topic"], record["partition"])] = record["state"]
            return
        known = self.segments.get(record["segment_id"])
        if kind == RECORD_TYPES[1]:
            if known is None:
                self.notes.append(f"__remote_log_metadata offset {offset}: update of unknown segment {record['segment_id']}")
                return
            known.state, known.last_offset = record["state"], offset
            known.event_timestamp_ms = record["event_timestamp_ms"]
            return
        if kind == RECORD_TYPES[3] and known is None:
            return  # a snapshot record carries no topic: only known segments are refreshed
        topic, topic_id, partition = (known.topic, known.topic_id, known.partition) if known else (
            record["topic"], record["topic_id"], record["partition"])
        self.segments[record["segment_id"]] = RemoteSegmentState(
            topic=topic, topic_id=topic_id, partition=partition, segment_id=record["segment_id"],
            start_offset=record["start_offset"], end_offset=record["end_offset"],
            segment_size_in_bytes=record["segment_size_in_bytes"], state=record["state"],
            txn_index_empty=record.get("txn_index_empty"),
            first_offset=offset if known is None else known.first_offset, last_offset=offset,
            event_timestamp_ms=record["event_timestamp_ms"],
        )


def read_remote_log_metadata(paths: Iterable[str], storage: StorageContext) -> RemoteLogState:
    """Read the live segments of ``__remote_log_metadata`` partitions (in offset order each, under
    the request's ``storage``) into one state."""
    state = RemoteLogState()
    for path in paths:
        try:
            with FileRecords(path, storage=storage) as segment:
                for batch in segment.batches():
                    if isinstance(batch, Problem) or batch.is_control:
                        continue  # the scan reports the segment's problems itself
                    decoded = segment.records(batch, with_data=True)
                    for record in decoded.records:
                        state.apply(decode_remote_log_metadata(record.key, record.value), record.offset)
        except (OSError, ValueError) as exc:
            state.notes.append(f"__remote_log_metadata: cannot read {path} ({exc})")
    return state
