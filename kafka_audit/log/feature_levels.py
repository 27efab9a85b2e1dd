"""The Kafka version a log dir was written under, as far as the log dir records it: the finalized
feature levels of its KRaft metadata (``FeatureLevelRecord``: ``metadata.version``,
``transaction.version``), as a KRaft broker replays them (``FeaturesImage``).

Where they are read, oldest first, each later one overriding: the log dir's
``bootstrap.checkpoint`` (the levels ``kafka-storage format`` wrote), then the newest KRaft
snapshot of ``__cluster_metadata-0`` (``<end offset>-<epoch>.checkpoint``), then the metadata log's
records from the snapshot's end offset on. A ZooKeeper-mode log dir (Kafka 3.x and older) has
none of these: its versions are unknown (None). ``meta.properties`` names no Kafka version
(``version=1`` is KRaft, 3.x or 4.x; ``version=0`` ZooKeeper mode, at most 3.x), so it decides
nothing here: a log dir without metadata gets the 3.x rules either way.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from kafka_audit.io.listing import tree
from kafka_audit.io.storage import is_remote
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.checkpoints import cluster_of
from kafka_audit.log.discovery import Discovery, PartitionDir
from kafka_audit.log.log_names import CLUSTER_METADATA, KRAFT_SNAPSHOT, LIVE
from kafka_audit.log.metadata_records import FRAME_VERSION, MetadataRecordDecoder
from kafka_audit.record.batch_records import read_batch_records
from kafka_audit.record.file_records import FileRecords, iter_batches
from kafka_audit.record.record_batch import RecordBatch

METADATA_VERSION = "metadata.version"
TRANSACTION_VERSION = "transaction.version"
# MetadataVersion.IBP_4_0_IV0: the first metadata.version level of Kafka 4.0; a cluster at a
# lower level may run 4.x brokers in the middle of an upgrade, so only a level from here on
# proves the log dir was written by Kafka 4.
FIRST_KAFKA_4_METADATA_VERSION = 22
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"
_FEATURE_NAMES = (METADATA_VERSION.encode(), TRANSACTION_VERSION.encode())
# Metadata files are read whole: at most a segment's default size (segment.bytes, 1 GiB).
_MAX_FILE_BYTES = 1 << 30
# The v2 batch header (DefaultRecordBatch.RECORD_BATCH_OVERHEAD); older formats hold no metadata.
_HEADER = 61
# MetadataRecordSerde frame version and MetadataRecordType.FEATURE_LEVEL_RECORD (12).
_FEATURE_LEVEL_PREFIX = bytes((FRAME_VERSION, 12))


@dataclass(frozen=True, slots=True)
class WrittenBy:
    """The feature levels the log dir records (None where it records none) and where from."""

    metadata_version: int | None = None
    transaction_version: int | None = None
    source: str | None = None

    @property
    def kafka_4(self) -> bool:
        return self.metadata_version is not None and self.metadata_version >= FIRST_KAFKA_4_METADATA_VERSION


@dataclass(frozen=True, slots=True)
class ClusterLevels:
    """Each scanned cluster's levels (by its ``cluster.id``; a log dir that records none is a
    cluster of its own, named ``log dir <path>``), and each partition folder's cluster (by its
    display path)."""

    clusters: dict[str, WrittenBy] = field(default_factory=dict)
    cluster_of: dict[str, str] = field(default_factory=dict)

    def of(self, replica: str) -> WrittenBy:
        """The levels of a partition folder's cluster (display path)."""
        cluster = self.cluster_of.get(replica)
        return self.clusters[cluster] if cluster is not None else WrittenBy()

    @property
    def newest(self) -> WrittenBy:
        """The levels of the newest Kafka among the clusters (the summary's one answer)."""
        return max(
            self.clusters.values(),
            key=lambda w: (w.metadata_version or -1, w.transaction_version or -1),
            default=WrittenBy(),
        )


def read_written_by(discovery: Discovery) -> ClusterLevels:
    """The levels in effect at the end of each scanned cluster's metadata. Feature levels are a
    cluster's own (``FeaturesImage``): a log dir's cluster is the ``cluster.id`` of its
    ``meta.properties``, so a Kafka 3.x log dir scanned beside a Kafka 4.x one keeps the 3.x
    rules. Local paths and URIs alike."""
    storage = discovery.storage
    cluster_by_dir: dict[str, str] = {}
    replica_cluster: dict[str, str] = {}
    for partition in discovery.partitions:
        log_dir = tree(partition.path, storage).dirname(partition.path)
        cluster = cluster_of(partition.path, discovery.cluster_ids, storage) or f"log dir {log_dir}"
        cluster_by_dir[log_dir] = replica_cluster[partition.display_path] = cluster
    levels: dict[str, dict[str, int]] = {cluster: {} for cluster in cluster_by_dir.values()}
    sources: dict[str, str | None] = dict.fromkeys(levels)
    for log_dir in sorted(cluster_by_dir):
        cluster = cluster_by_dir[log_dir]
        bootstrap = tree(log_dir, storage).join(log_dir, BOOTSTRAP_CHECKPOINT)
        if BOOTSTRAP_CHECKPOINT in _names(log_dir, storage) and _apply(levels[cluster], [bootstrap], 0, storage):
            sources[cluster] = bootstrap
    for partition in discovery.partitions:
        if partition.topic == CLUSTER_METADATA:
            cluster = replica_cluster[partition.display_path]
            sources[cluster] = _metadata_partition(partition, levels[cluster], storage) or sources[cluster]
    return ClusterLevels(
        {
            cluster: WrittenBy(found.get(METADATA_VERSION), found.get(TRANSACTION_VERSION), sources[cluster])
            if found
            else WrittenBy()
            for cluster, found in levels.items()
        },
        replica_cluster,
    )


def _metadata_partition(partition: PartitionDir, levels: dict[str, int], storage: StorageContext) -> str | None:
    """The newest snapshot's levels, then the log's from the snapshot's end offset on; the last
    file that set a level, or None."""
    start, source = 0, None
    snapshots = sorted(n for n in _names(partition.path, storage) if KRAFT_SNAPSHOT.match(n) and n.endswith(".checkpoint"))
    if snapshots:
        newest = tree(partition.path, storage).join(partition.path, snapshots[-1])
        if _apply(levels, [newest], 0, storage):
            source = newest
        start = int(snapshots[-1][:20])
    segments = [s.path for s in sorted(partition.segments, key=lambda s: s.base_offset) if s.state == LIVE]
    if _apply(levels, segments, start, storage):
        source = segments[-1]
    return source


def _names(folder: str, storage: StorageContext) -> list[str]:
    try:
        with tree(folder, storage).scandir(folder) as listing:
            return [entry.name for entry in listing]
    except OSError:
        return []


def _candidate_batches(buf: bytes | bytearray | mmap.mmap, end: int) -> list[int]:
    """Positions of the batches that may hold a FeatureLevelRecord: those whose bytes hold a
    feature name read here (found by one byte search of the file) and the compressed ones (not
    searchable), reached by hopping from batch header to batch header (12 bytes each, as
    FileLogInputStream does); where the framing breaks the walk stops (the scan reports it)."""
    found = sorted(at for name in _FEATURE_NAMES for at in _find_all(buf, end, name))
    positions, pos, hit = [], 0, 0
    while pos + _HEADER <= end:
        size = int.from_bytes(buf[pos + 8 : pos + 12], "big", signed=True)
        stop = pos + 12 + size
        if size < _HEADER - 12 or stop > end:
            break
        while hit < len(found) and found[hit] < pos:
            hit += 1
        compressed = int.from_bytes(buf[pos + 21 : pos + 23], "big") & 0x07
        if compressed or (hit < len(found) and found[hit] < stop):
            positions.append(pos)
        pos = stop
    return positions


def _find_all(buf: bytes | bytearray | mmap.mmap, end: int, needle: bytes) -> list[int]:
    found, at = [], buf.find(needle, 0, end)
    while at >= 0:
        found.append(at)
        at = buf.find(needle, at + 1, end)
    return found


def _apply(levels: dict[str, int], paths: Iterable[str], start: int, storage: StorageContext) -> bool:
    """Replay the FeatureLevelRecords at offsets from ``start`` of these record-batch files into
    ``levels``; whether any was found. A file that cannot be read is left out (the scan reports
    a segment it cannot read; a snapshot or bootstrap file is not audited)."""
    found = False
    decoder = MetadataRecordDecoder()
    for path in paths:
        try:
            with _opened(path, storage) as buf:
                for position in _candidate_batches(buf, len(buf)):
                    for batch in iter_batches(buf, position, position + 1):
                        if not isinstance(batch, RecordBatch) or batch.is_control or not batch.crc_valid:
                            continue
                        for record in read_batch_records(buf, batch).records:
                            value = record.value
                            if record.offset < start or not value or value[:2] != _FEATURE_LEVEL_PREFIX:
                                continue
                            decoded = decoder(record.key, value)
                            if "feature_level" in decoded:
                                levels[decoded["name"]] = decoded["feature_level"]
                                found = True
        except OSError:
            continue
    return found


@contextmanager
def _opened(path: str, storage: StorageContext) -> Iterator[bytes | bytearray | mmap.mmap]:
    """A file's bytes: a local file read into a map (FileRecords), an object read whole."""
    if is_remote(path):
        yield storage.read_bytes(path, _MAX_FILE_BYTES)
        return
    with FileRecords(path, storage=storage) as records:
        yield records.loaded() if records.size else b""
