"""KRaft metadata records of ``__cluster_metadata`` and its snapshots (``*.checkpoint``,
``bootstrap.checkpoint``), decoded as DumpLogSegments' ``ClusterMetadataLogMessageParser`` does.

A record's key is null; its value is ``MetadataRecordSerde``'s frame: ``frameVersion``,
``apiKey`` and ``version`` as unsigned varints, then the record at that version. The schemas are
those of Kafka 4.2's ``metadata/src/main/resources/common/metadata/*.json`` (aiven/inkless
b1fcb5f6f784, the Apache Kafka 4.2 tree; the names are ``MetadataRecordType``'s), in the notation of
:mod:`kafka_audit.log.message_schema`. A type or version that is not among them is reported as
``unknown``, never guessed.
"""

from __future__ import annotations

from typing import Any

from kafka_audit.log.message_schema import schema
from kafka_audit.record.message_reader import MalformedMessage, framed_message

# MetadataRecordSerde.DEFAULT_FRAME_VERSION
FRAME_VERSION = 1

_SCHEMAS: dict[int, tuple[str, str, str, str]] = {
    0: (
        'RegisterBrokerRecord', '0-3', '0+',
        'BrokerId:int32 IsMigratingZkBroker(2+):bool IncarnationId:uuid BrokerEpoch:int64 '
        'EndPoints:[{Name:string Host:string Port:uint16 SecurityProtocol:int16}] Features:[{Name:string '
        'MinSupportedVersion:int16 MaxSupportedVersion:int16}] Rack:string? Fenced:bool '
        'InControlledShutdown(1+):bool LogDirs(3+)@0:[uuid]',
    ),
    1: (
        'UnregisterBrokerRecord', '0', '0+',
        'BrokerId:int32 BrokerEpoch:int64',
    ),
    2: (
        'TopicRecord', '0', '0+',
        'Name:string TopicId:uuid',
    ),
    3: (
        'PartitionRecord', '0-2', '0+',
        'PartitionId:int32 TopicId:uuid Replicas:[int32] Isr:[int32] RemovingReplicas:[int32] '
        'AddingReplicas:[int32] Leader:int32 LeaderRecoveryState@0:int8 LeaderEpoch:int32 PartitionEpoch:int32 '
        'Directories(1+):[uuid] EligibleLeaderReplicas(2+)@1:[int32]? LastKnownElr(2+)@2:[int32]?',
    ),
    4: (
        'ConfigRecord', '0', '0+',
        'ResourceType:int8 ResourceName:string Name:string Value:string?',
    ),
    5: (
        'PartitionChangeRecord', '0-2', '0+',
        'PartitionId:int32 TopicId:uuid Isr@0:[int32]? Leader@1:int32 Replicas@2:[int32]? '
        'RemovingReplicas@3:[int32]? AddingReplicas@4:[int32]? LeaderRecoveryState@5:int8 '
        'Directories(1+)@8:[uuid]? EligibleLeaderReplicas(2+)@6:[int32]? LastKnownElr(2+)@7:[int32]?',
    ),
    7: (
        'FenceBrokerRecord', '0', '0+',
        'Id:int32 Epoch:int64',
    ),
    8: (
        'UnfenceBrokerRecord', '0', '0+',
        'Id:int32 Epoch:int64',
    ),
    9: (
        'RemoveTopicRecord', '0', '0+',
        'TopicId:uuid',
    ),
    10: (
        'DelegationTokenRecord', '0', '0+',
        'Owner:string Requester:string Renewers:[string] IssueTimestamp:int64 MaxTimestamp:int64 '
        'ExpirationTimestamp:int64 TokenId:string',
    ),
    11: (
        'UserScramCredentialRecord', '0', '0+',
        'Name:string Mechanism:int8 Salt:bytes StoredKey:bytes ServerKey:bytes Iterations:int32',
    ),
    12: (
        'FeatureLevelRecord', '0', '0+',
        'Name:string FeatureLevel:int16',
    ),
    14: (
        'ClientQuotaRecord', '0', '0+',
        'Entity:[{EntityType:string EntityName:string?}] Key:string Value:float64 Remove:bool',
    ),
    15: (
        'ProducerIdsRecord', '0', '0+',
        'BrokerId:int32 BrokerEpoch:int64 NextProducerId:int64',
    ),
    17: (
        'BrokerRegistrationChangeRecord', '0-2', '0+',
        'BrokerId:int32 BrokerEpoch:int64 Fenced@0:int8 InControlledShutdown(1+)@1:int8 LogDirs(2+)@2:[uuid]',
    ),
    18: (
        'AccessControlEntryRecord', '0', '0+',
        'Id:uuid ResourceType:int8 ResourceName:string PatternType:int8 Principal:string Host:string '
        'Operation:int8 PermissionType:int8',
    ),
    19: (
        'RemoveAccessControlEntryRecord', '0', '0+',
        'Id:uuid',
    ),
    20: (
        'NoOpRecord', '0', '0+',
        '',
    ),
    21: (
        'ZkMigrationStateRecord', '0', '0+',
        'ZkMigrationState:int8',
    ),
    22: (
        'RemoveUserScramCredentialRecord', '0', '0+',
        'Name:string Mechanism:int8',
    ),
    23: (
        'BeginTransactionRecord', '0', '0+',
        'Name@0:string?',
    ),
    24: (
        'EndTransactionRecord', '0', '0+',
        '',
    ),
    25: (
        'AbortTransactionRecord', '0', '0+',
        'Reason@0:string?',
    ),
    26: (
        'RemoveDelegationTokenRecord', '0', '0+',
        'TokenId:string',
    ),
    27: (
        'RegisterControllerRecord', '0', '0+',
        'ControllerId:int32 IncarnationId:uuid ZkMigrationReady:bool EndPoints:[{Name:string Host:string '
        'Port:uint16 SecurityProtocol:int16}] Features:[{Name:string MinSupportedVersion:int16 '
        'MaxSupportedVersion:int16}]',
    ),
    28: (
        'ClearElrRecord', '0', '0+',
        'TopicName:string',
    ),
}
# MetadataRecordType: api key -> record schema.
RECORD_SCHEMAS = {api_key: schema(*entry) for api_key, entry in _SCHEMAS.items()}


class MetadataRecordDecoder:
    """Decodes one file's metadata records in log order; remembers topic names by topic id so
    that partition records name their topic."""

    def __init__(self) -> None:
        self.topic_names: dict[str, str] = {}

    def __call__(self, key: bytes | None, value: bytes | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        try:
            reader, frame = framed_message(value)
            if frame != FRAME_VERSION:
                out["record"] = "unknown"
                out["unknown"] = f"unknown metadata frame version {frame}"
                return out
            api_key, version = reader.unsigned_varint(), reader.unsigned_varint()
            record = RECORD_SCHEMAS.get(api_key)
            out["record"] = record.name if record is not None else "unknown"
            if record is None:
                out["api_key"] = api_key
            out["version"] = version
            if record is None or not record.knows(version):
                out["unknown"] = f"unknown metadata record type {api_key}" if record is None \
                    else f"unknown {record.name} version {version}"
                return out
            out.update(record.read(reader.data, version, reader.pos))
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


# The KRaft control records' values by control type (clients/src/main/resources/common/message:
# LeaderChangeMessage, SnapshotHeaderRecord, SnapshotFooterRecord, KRaftVersionRecord,
# VotersRecord), each read at version 0 as ControlRecordUtils reads them (*_CURRENT_VERSION).
_KRAFT_CONTROL: dict[int, tuple[str, str, str, str]] = {
    2: ("LeaderChange", "0-1", "0+",
        "&Voter={VoterId:int32 VoterDirectoryId(1+):uuid} Version:int16 LeaderId:int32 Voters:[Voter] GrantingVoters:[Voter]"),
    3: ("SnapshotHeader", "0", "0+", "Version:int16 LastContainedLogTimestamp:int64"),
    4: ("SnapshotFooter", "0", "0+", "Version:int16"),
    5: ("KRaftVersion", "0", "0+", "Version:int16 KRaftVersion:int16"),
    6: ("KRaftVoters", "0", "0+",
        "Version:int16 Voters:[{VoterId:int32 VoterDirectoryId:uuid Endpoints:[{Name:string Host:string Port:uint16}] "
        "KRaftVersionFeature:{MinSupportedVersion:int16 MaxSupportedVersion:int16}}]"),
}
KRAFT_CONTROL_SCHEMAS = {control_type: schema(*entry) for control_type, entry in _KRAFT_CONTROL.items()}
_CONTROL_READ_VERSION = 0


def decode_kraft_control(control_type: int | None, value: bytes | None) -> dict[str, Any] | None:
    """A KRaft control record's value, as DumpLogSegments prints it; None for other types."""
    record = None if control_type is None else KRAFT_CONTROL_SCHEMAS.get(control_type)
    if record is None:
        return None
    out: dict[str, Any] = {"record": record.name}
    try:
        if value is None:
            raise MalformedMessage("null value")
        out.update(record.read(value, _CONTROL_READ_VERSION))
    except MalformedMessage as exc:
        out["error"] = str(exc)
    return out
