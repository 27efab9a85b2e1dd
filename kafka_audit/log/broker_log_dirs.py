"""A broker's log dir, known by its contents (SPEC section 6): ``meta.properties`` (``MetaProperties``:
``node.id``, or ``broker.id`` before KRaft, and ``cluster.id``) or Kafka's checkpoint files, never
by its folder's name. Each partition folder found is labelled with its broker
(:class:`~kafka_audit.log.discovery.BrokerReplica`): the replicas of one partition are then told
apart and compared."""

from __future__ import annotations

import os

from kafka_audit.io.listing import Tree
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.checkpoints import read_leader_epoch_checkpoint, read_offset_checkpoint, read_properties
from kafka_audit.log.discovery import BrokerReplica, Discovery, PartitionDir
from kafka_audit.log.log_names import (
    CLEANER_OFFSET_CHECKPOINT,
    META_PROPERTIES,
    OFFSET_CHECKPOINTS,
    REPLICATION_OFFSET_CHECKPOINT,
)

_LOG_DIR_FILES = (META_PROPERTIES, *OFFSET_CHECKPOINTS)

# A checkpoint file's offsets by (topic, partition).
Offsets = dict[tuple[str, int], int]


def is_broker_log_dir(fs: Tree, folder: str) -> bool:
    """``folder`` holds ``meta.properties`` or a log dir's offset checkpoint file."""
    return any(fs.isfile(fs.join(folder, name)) for name in _LOG_DIR_FILES)


def label_replicas(discovery: Discovery, trees: dict[str, Tree]) -> None:
    """Set ``PartitionDir.broker`` on every local partition folder found (tiered copies have no broker)."""
    log_dirs: dict[str, tuple[int | None, str, Offsets, Offsets]] = {}
    for partition in discovery.partitions:
        fs = trees.get(partition.path)
        if fs is None or partition.remote:
            continue
        log_dir = fs.dirname(partition.path)
        if log_dir not in log_dirs:
            log_dirs[log_dir] = _read_log_dir(fs, log_dir, discovery.storage)
            discovery.cluster_ids.setdefault(log_dir, log_dirs[log_dir][1])
        node_id, cluster_id, marks, cleaned = log_dirs[log_dir]
        where = (partition.topic, partition.partition)
        partition.broker = BrokerReplica(
            node_id,
            cluster_id,
            _log_dir_display(partition),
            marks.get(where),
            cleaned.get(where),
            _leader_epochs(partition, discovery.storage),
        )


# A Java int's longest decimal form, with its sign: -2147483648 (meta.properties' node.id is an int).
_MAX_INT_CHARS = 11


def _read_log_dir(fs: Tree, log_dir: str, storage: StorageContext) -> tuple[int | None, str, Offsets, Offsets]:
    """(node id, cluster id, high watermarks, cleaner offsets) of a log dir."""
    properties = {p.key: p.value for p in read_properties(fs.join(log_dir, META_PROPERTIES), storage).entries}
    node = properties.get("node.id", properties.get("broker.id", ""))
    node_id = int(node) if node.lstrip("-").isdecimal() and len(node) <= _MAX_INT_CHARS else None
    return node_id, properties.get("cluster.id", ""), _offsets(fs, log_dir, REPLICATION_OFFSET_CHECKPOINT, storage), _offsets(
        fs, log_dir, CLEANER_OFFSET_CHECKPOINT, storage
    )


def _offsets(fs: Tree, log_dir: str, name: str, storage: StorageContext) -> Offsets:
    path = fs.join(log_dir, name)
    if not fs.isfile(path):
        return {}
    return {(e.topic, e.partition): e.offset for e in read_offset_checkpoint(path, storage).entries}


def _leader_epochs(partition: PartitionDir, storage: StorageContext) -> tuple[tuple[int, int], ...] | None:
    if partition.leader_epoch_checkpoint is None:
        return None
    parsed = read_leader_epoch_checkpoint(partition.leader_epoch_checkpoint, storage)
    return tuple((e.epoch, e.start_offset) for e in parsed.entries)


def _log_dir_display(partition: PartitionDir) -> str:
    """The log dir as findings show it: the partition folder's parent, or the PATH given."""
    parent = os.path.dirname(partition.display_path.rstrip("/"))
    return parent or partition.root or "."
