"""The record types of the group and share coordinators' logs, as their schemas define them.

Transcribed from the Kafka 4.2 sources (aiven/inkless b1fcb5f6f784, version 4.2.0, the Apache
Kafka 4.2 tree): ``group-coordinator/src/main/resources/common/message/*Key.json`` /
``*Value.json`` (``__consumer_offsets``; the record type is the key's ``apiKey``, named by
``CoordinatorRecordType``) and ``share-coordinator/.../ShareSnapshot*.json`` / ``ShareUpdate*.json``
(``__share_group_state``). Each entry: record type -> (name, key fields, value validVersions,
value flexibleVersions, value fields), in the notation of :mod:`kafka_audit.log.message_schema`.
Keys are version 0 and never flexible (``CoordinatorRecordSerde`` reads them so).
"""

from __future__ import annotations

from kafka_audit.log.message_schema import Schema, schema

RecordSchemas = tuple[str, Schema, Schema]


def _table(entries: dict[int, tuple[str, str, str, str, str]]) -> dict[int, RecordSchemas]:
    return {
        record_type: (name, schema(name + "Key", "0", "none", key), schema(name + "Value", valid, flexible, value))
        for record_type, (name, key, valid, flexible, value) in entries.items()
    }


# GroupCoordinatorRecordSerde: CoordinatorRecordType of the group coordinator (classic,
# consumer (KIP-848), share (KIP-932) and streams (KIP-1071) groups).
GROUP_RECORDS = _table({
    0: (
        'LegacyOffsetCommit',
        'group:string topic:string partition:int32',
        '0', 'none',
        'offset:int64 metadata:string commitTimestamp:int64',
    ),
    1: (
        'OffsetCommit',
        'group:string topic:string partition:int32',
        '0-4', '4+',
        'offset:int64 leaderEpoch(3+):int32 metadata:string commitTimestamp:int64 expireTimestamp(1):int64 '
        'topicId(4+)@0:uuid',
    ),
    2: (
        'GroupMetadata',
        'group:string',
        '0-4', '4+',
        '&MemberMetadata={memberId:string groupInstanceId(3+):string? clientId:string clientHost:string '
        'rebalanceTimeout(1+):int32 sessionTimeout:int32 subscription:bytes assignment:bytes} '
        'protocolType:string generation:int32 protocol:string? leader:string? currentStateTimestamp(2+):int64 '
        'members:[MemberMetadata]',
    ),
    3: (
        'ConsumerGroupMetadata',
        'GroupId:string',
        '0', '0+',
        'Epoch:int32 MetadataHash@0:int64',
    ),
    4: (
        'ConsumerGroupPartitionMetadata',
        'GroupId:string',
        '0', '0+',
        'Topics:[{TopicId:uuid TopicName:string NumPartitions:int32 PartitionMetadata:[{Partition:int32 '
        'Racks:[string]}]}]',
    ),
    5: (
        'ConsumerGroupMemberMetadata',
        'GroupId:string MemberId:string',
        '0', '0+',
        'InstanceId:string? RackId:string? ClientId:string ClientHost:string SubscribedTopicNames:[string] '
        'SubscribedTopicRegex:string? RebalanceTimeoutMs:int32 ServerAssignor:string? '
        'ClassicMemberMetadata@0:{SessionTimeoutMs:int32 SupportedProtocols:[{Name:string Metadata:bytes}]}?',
    ),
    6: (
        'ConsumerGroupTargetAssignmentMetadata',
        'GroupId:string',
        '0', '0+',
        'AssignmentEpoch:int32',
    ),
    7: (
        'ConsumerGroupTargetAssignmentMember',
        'GroupId:string MemberId:string',
        '0', '0+',
        'TopicPartitions:[{TopicId:uuid Partitions:[int32]}]',
    ),
    8: (
        'ConsumerGroupCurrentMemberAssignment',
        'GroupId:string MemberId:string',
        '0', '0+',
        '&TopicPartitions={TopicId:uuid Partitions:[int32]} MemberEpoch:int32 PreviousMemberEpoch:int32 '
        'State:int8 AssignedPartitions:[TopicPartitions] PartitionsPendingRevocation:[TopicPartitions]',
    ),
    10: (
        'ShareGroupMemberMetadata',
        'GroupId:string MemberId:string',
        '0', '0+',
        'RackId:string? ClientId:string ClientHost:string SubscribedTopicNames:[string]',
    ),
    11: (
        'ShareGroupMetadata',
        'GroupId:string',
        '0', '0+',
        'Epoch:int32 MetadataHash:int64',
    ),
    12: (
        'ShareGroupTargetAssignmentMetadata',
        'GroupId:string',
        '0', '0+',
        'AssignmentEpoch:int32',
    ),
    13: (
        'ShareGroupTargetAssignmentMember',
        'GroupId:string MemberId:string',
        '0', '0+',
        'TopicPartitions:[{TopicId:uuid Partitions:[int32]}]',
    ),
    14: (
        'ShareGroupCurrentMemberAssignment',
        'GroupId:string MemberId:string',
        '0', '0+',
        '&TopicPartitions={TopicId:uuid Partitions:[int32]} MemberEpoch:int32 PreviousMemberEpoch:int32 '
        'State:int8 AssignedPartitions:[TopicPartitions]',
    ),
    15: (
        'ShareGroupStatePartitionMetadata',
        'GroupId:string',
        '0', '0+',
        '&TopicPartitionsInfo={TopicId:uuid TopicName:string Partitions:[int32]} &TopicInfo={TopicId:uuid '
        'TopicName:string} InitializingTopics:[TopicPartitionsInfo] InitializedTopics:[TopicPartitionsInfo] '
        'DeletingTopics:[TopicInfo]',
    ),
    16: (
        'ConsumerGroupRegularExpression',
        'GroupId:string RegularExpression:string',
        '0', '0+',
        'Topics:[string] Version:int64 Timestamp:int64',
    ),
    17: (
        'StreamsGroupMetadata',
        'GroupId:string',
        '0', '0+',
        '&LastAssignmentConfig={Key:string Value:string} Epoch:int32 MetadataHash:int64 '
        'ValidatedTopologyEpoch@0:int32 LastAssignmentConfigs@1:[LastAssignmentConfig]?',
    ),
    19: (
        'StreamsGroupMemberMetadata',
        'GroupId:string MemberId:string',
        '0', '0+',
        '&Endpoint={Host:string Port:uint16} &KeyValue={Key:string Value:string} InstanceId:string? '
        'RackId:string? ClientId:string ClientHost:string RebalanceTimeoutMs:int32 TopologyEpoch:int32 '
        'ProcessId:string UserEndpoint:Endpoint? ClientTags:[KeyValue]',
    ),
    20: (
        'StreamsGroupTargetAssignmentMetadata',
        'GroupId:string',
        '0', '0+',
        'AssignmentEpoch:int32',
    ),
    21: (
        'StreamsGroupTargetAssignmentMember',
        'GroupId:string MemberId:string',
        '0', '0+',
        '&TaskIds={SubtopologyId:string Partitions:[int32]} ActiveTasks:[TaskIds] StandbyTasks:[TaskIds] '
        'WarmupTasks:[TaskIds]',
    ),
    22: (
        'StreamsGroupCurrentMemberAssignment',
        'GroupId:string MemberId:string',
        '0', '0+',
        '&TaskIds={SubtopologyId:string Partitions:[int32] AssignmentEpochs@0:[int32]?} MemberEpoch:int32 '
        'PreviousMemberEpoch:int32 State:int8 ActiveTasks:[TaskIds] StandbyTasks:[TaskIds] '
        'WarmupTasks:[TaskIds] ActiveTasksPendingRevocation:[TaskIds] StandbyTasksPendingRevocation:[TaskIds] '
        'WarmupTasksPendingRevocation:[TaskIds]',
    ),
    23: (
        'StreamsGroupTopology',
        'GroupId:string',
        '0', '0+',
        '&TopicConfig={key:string value:string} &TopicInfo={Name:string Partitions:int32 '
        'ReplicationFactor:int16 TopicConfigs:[TopicConfig]} Epoch:int32 Subtopologies:[{SubtopologyId:string '
        'SourceTopics:[string] SourceTopicRegex:[string] StateChangelogTopics:[TopicInfo] '
        'RepartitionSinkTopics:[string] RepartitionSourceTopics:[TopicInfo] '
        'CopartitionGroups:[{SourceTopics:[int16] SourceTopicRegex:[int16] RepartitionSourceTopics:[int16]}]}]',
    ),
})

# ShareCoordinatorRecordSerde: the share-group state (KIP-932).
SHARE_RECORDS = _table({
    0: (
        'ShareSnapshot',
        'GroupId:string TopicId:uuid Partition:int32',
        '0', '0+',
        'SnapshotEpoch:int32 StateEpoch:int32 LeaderEpoch:int32 StartOffset:int64 DeliveryCompleteCount@0:int32'
        ' CreateTimestamp:int64 WriteTimestamp:int64 StateBatches:[{FirstOffset:int64 LastOffset:int64 '
        'DeliveryState:int8 DeliveryCount:int16}]',
    ),
    1: (
        'ShareUpdate',
        'GroupId:string TopicId:uuid Partition:int32',
        '0', '0+',
        'SnapshotEpoch:int32 LeaderEpoch:int32 StartOffset:int64 DeliveryCompleteCount@0:int32 '
        'StateBatches:[{FirstOffset:int64 LastOffset:int64 DeliveryState:int8 DeliveryCount:int16}]',
    ),
})

# The classic consumer protocol's member metadata, held as bytes in GroupMetadataValue's members
# (clients/src/main/resources/common/message/ConsumerProtocolSubscription.json / ...Assignment.json).
CONSUMER_PROTOCOL_SUBSCRIPTION = schema(
    "ConsumerProtocolSubscription", "0-3", "none",
    "Topics:[string] UserData:bytes? OwnedPartitions(1+):[{Topic(1+):string Partitions(1+):[int32]}] "
    "GenerationId(2+):int32 RackId(3+):string?",
)
CONSUMER_PROTOCOL_ASSIGNMENT = schema(
    "ConsumerProtocolAssignment", "0-3", "none", "AssignedPartitions:[{Topic:string Partitions:[int32]}] UserData:bytes?"
)
