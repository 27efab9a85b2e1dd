"""Kafka's names for the files and folders of a log dir (``LogFileUtils``,
``UnifiedLog.parseTopicPartitionName``, KIP-405's ``RemoteLogSegmentFileset``, KRaft's
``Snapshots``): what a name says, with no file system access."""

from __future__ import annotations

import re

# A log dir's checkpoint files (LogManager), a partition folder's (LeaderEpochCheckpointFile,
# PartitionMetadataFile) and the broker's meta.properties (MetaPropertiesEnsemble).
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
OFFSET_CHECKPOINTS = (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CLEANER_OFFSET_CHECKPOINT,
)
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
META_PROPERTIES = "meta.properties"

# Kafka's internal topics, their one home here (org.apache.kafka.common.internals.Topic,
# TransactionLogConfig, KRaft's MetadataLogConfig, ShareCoordinator): folder names say what a log holds.
CONSUMER_OFFSETS = "__consumer_offsets"
TRANSACTION_STATE = "__transaction_state"
SHARE_GROUP_STATE = "__share_group_state"
CLUSTER_METADATA = "__cluster_metadata"
# KIP-405's record of what was copied to and deleted from remote storage (TopicBasedRemoteLogMetadataManager).
REMOTE_LOG_METADATA = "__remote_log_metadata"
# Topics a broker always creates with cleanup.policy=compact (GroupCoordinator, TransactionLog).
ALWAYS_COMPACTED_TOPICS = frozenset({CONSUMER_OFFSETS, TRANSACTION_STATE})
# Topics the group / transaction / share coordinators write (AppendOrigin.COORDINATOR).
COORDINATOR_TOPICS = frozenset({CONSUMER_OFFSETS, TRANSACTION_STATE, SHARE_GROUP_STATE})

LIVE, DELETED, CLEANED, SWAP = "live", "deleted", "cleaned", "swap"
STATE_SUFFIXES = {".deleted": DELETED, ".cleaned": CLEANED, ".swap": SWAP}
SIDECAR_SUFFIXES = (".index", ".timeindex", ".txnindex")
# A tiered segment's leader-epoch checkpoint (RemoteLogSegmentFileset.LEADER_EPOCH_CHECKPOINT).
TIERED_LEADER_EPOCH_CHECKPOINT = ".leader_epoch_checkpoint"
# A broker's 20-digit base offset (with a segment id after it in some remote stores' copies), or
# the LocalTieredStorage plugin's "<start offset>-<22-character segment id>" (KIP-405,
# RemoteLogSegmentFileset: startOffset + "-" + uuid, the offset not padded).
_BASE_OFFSET = re.compile(r"^(?:(\d{20})(?:-[A-Za-z0-9_-]+)?|(\d{1,19})-[A-Za-z0-9_-]{22})$")
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
# A tiered-storage partition folder (RemoteTopicPartitionDirectory): "<topic>-<partition>-<topic id>".
_TIERED_DIR = re.compile(r"^(?P<topic>[A-Za-z0-9._-]+)-(?P<partition>\d+)-(?P<uid>[A-Za-z0-9_-]{22})$")
# The Aiven tiered-storage plugin's folders (ObjectKeyFactory.mainPath): "<topic>-<topic id>/<partition>".
_RSM_TOPIC_DIR = re.compile(r"^(?P<topic>.+)-(?P<uid>[A-Za-z0-9_-]{22})$")
_RSM_PARTITION_DIR = re.compile(r"^\d{1,10}$")
# The plugin's objects beside a segment's .log (ObjectKeyFactory.Suffix).
RSM_SIDECAR_SUFFIXES = (".indexes", ".rsm-manifest")
# UnifiedLog: "<topic>-<partition>.<uniqueId>-delete", "-future" and "-stray" folders.
_SPECIAL_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)\.(?P<uid>[A-Za-z0-9_-]+)-(?P<kind>delete|future|stray)$")
# KRaft snapshots of __cluster_metadata (org.apache.kafka.snapshot.Snapshots): <offset>-<epoch>.checkpoint,
# with .part while being written and .deleted while being deleted.
KRAFT_SNAPSHOT = re.compile(r"^\d{20}-\d{10}\.checkpoint(?:\.part|\.deleted)?$")
# Files Kafka keeps in a log dir or partition folder that are neither segments nor read here.
KNOWN_OTHER_FILES = frozenset(
    {
        ".lock",
        # LogManager's clean shutdown marker (CleanShutdownFileHandler) in a log dir.
        ".kafka_cleanshutdown",
        "bootstrap.checkpoint",
        "quorum-state",
        "kraft.version",
        LEADER_EPOCH_CHECKPOINT,
        PARTITION_METADATA,
        META_PROPERTIES,
        *OFFSET_CHECKPOINTS,
    }
)

_LONG_MAX = (1 << 63) - 1
_INT_MAX = (1 << 31) - 1


def parse_base_offset(name: str) -> int | None:
    """The base offset in a segment or sidecar file name, or None when it has none.

    LogFileUtils.offsetFromFileName parses the digits with Long.parseLong: 20 digits above
    Long.MAX_VALUE are no offset."""
    stem = name.split(".", 1)[0]
    match = _BASE_OFFSET.match(stem)
    if not match:
        return None
    offset = int(match.group(1) or match.group(2))
    return offset if offset <= _LONG_MAX else None


def overflows_long(name: str) -> bool:
    """A segment or sidecar name whose 20 digits are above Long.MAX_VALUE: named as a broker
    names its files, but ``LogFileUtils.offsetFromFileName`` (Long.parseLong) throws
    NumberFormatException on it, so a broker cannot load the partition that holds it."""
    match = _BASE_OFFSET.match(name.split(".", 1)[0])
    return match is not None and match.group(1) is not None and int(match.group(1)) > _LONG_MAX


# Integer.MAX_VALUE's digits: a longer partition number is past it.
_MAX_PARTITION_DIGITS = 10


def parse_partition_dir(name: str) -> tuple[str, int, str] | None:
    """``(topic, partition, kind)`` of a partition folder name, or None.

    UnifiedLog.parseTopicPartitionName reads the partition with ``toInt``: a number above
    Integer.MAX_VALUE makes the name no partition folder."""
    special = _SPECIAL_DIR.match(name) or _TIERED_DIR.match(name)
    number = (special or _PARTITION_DIR.match(name) or {"partition": ""})["partition"]
    if len(number) > _MAX_PARTITION_DIGITS:  # past Integer.MAX_VALUE (and int() refuses more than 4300 digits)
        return None
    if special and special.re is _TIERED_DIR:
        parsed = special.group("topic"), int(special.group("partition")), LIVE
    elif special:
        parsed = special.group("topic"), int(special.group("partition")), special.group("kind")
    else:
        match = _PARTITION_DIR.match(name)
        if not match:
            return None
        parsed = match.group("topic"), int(match.group("partition")), LIVE
    return parsed if parsed[1] <= _INT_MAX else None


def segment_state(name: str) -> tuple[str, str] | None:
    """For a segment file name, ``(state, suffix)`` (``live`` and ``""`` for a plain ``.log``)."""
    for suffix, state in STATE_SUFFIXES.items():
        if name.endswith(".log" + suffix):
            return state, suffix
    if name.endswith(".log"):
        return LIVE, ""
    return None


def is_tiered_name(name: str) -> bool:
    """A LocalTieredStorage file name: ``<start offset>-<22-character segment id>.<type>``."""
    match = _BASE_OFFSET.match(name.split(".", 1)[0])
    return match is not None and match.group(2) is not None


def is_tiered_dir(name: str) -> bool:
    """A LocalTieredStorage partition folder: ``<topic>-<partition>-<topic id>``."""
    return _TIERED_DIR.match(name) is not None and _SPECIAL_DIR.match(name) is None


def local_tiered_id(name: str) -> str | None:
    """The remote segment id in a LocalTieredStorage file name (``<offset>-<segment id>.log``)."""
    stem = name.split(".", 1)[0]
    return stem.split("-", 1)[1] if _BASE_OFFSET.match(stem) and "-" in stem else None


def parse_rsm_partition_dir(parent: str, name: str) -> tuple[str, int, str] | None:
    """``(topic, partition, "live")`` of the Aiven plugin's ``<topic>-<topic id>/<partition>`` folder."""
    topic = _RSM_TOPIC_DIR.match(parent)
    if topic is None or _RSM_PARTITION_DIR.match(name) is None or int(name) > _INT_MAX:
        return None
    return topic.group("topic"), int(name), LIVE
