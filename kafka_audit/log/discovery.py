"""What discovery (:func:`kafka_audit.log.log_dir.discover`) finds under the PATHs: the partition
folders (:class:`PartitionDir`) with their segments and snapshots, the files skipped and the
segments that cannot be read, and the notes, gathered in one :class:`Discovery`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.log_names import (
    LIVE,
)
from kafka_audit.log.remote_log_metadata import RemoteLogState


@dataclass(frozen=True, slots=True)
class SegmentFile:
    """One segment file. ``path`` is what to open; ``display_path`` what findings show
    (relative to the PATH that found it). Sidecar paths are None where absent."""

    path: str
    display_path: str
    base_offset: int
    state: str
    size: int
    # The file's modification time (the default reference time of its timestamp checks); None for
    # an object in a store, whose time is an upload's, not the broker's.
    mtime_ms: int | None
    index: str | None = None
    time_index: str | None = None
    txn_index: str | None = None
    # A copy in tiered storage (KIP-405): its remote segment id, and whether a transaction index
    # was copied with it (``__remote_log_metadata``'s TxnIndexEmpty is checked against that).
    remote_id: str | None = None
    remote_txn_index: bool | None = None
    # The local file's inode when listed (0 for an object in a store): the file a task reads must
    # be that one (io.local_file).
    file_id: int = 0


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file or folder found under a PATH that is not part of a Kafka log (SPEC ``skipped_file``)."""

    display_path: str
    reason: str
    topic: str | None = None
    partition: int | None = None


@dataclass(frozen=True, slots=True)
class UnreadableSegment:
    """A segment (or a folder that may hold segments) found but not readable (``unreadable_segment``)."""

    display_path: str
    reason: str
    topic: str | None = None
    partition: int | None = None
    base_offset: int | None = None


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    """A partition folder's ``<offset>.snapshot`` (Kafka's ``SnapshotFile``): the producer state as of ``offset``."""

    path: str
    display_path: str
    offset: int


@dataclass(frozen=True, slots=True)
class BrokerReplica:
    """Which broker a partition folder belongs to and what its log dir checkpoints say of it
    (SPEC section 6): ``node_id`` (``node.id``, or ``broker.id`` before KRaft; None without
    meta.properties), ``cluster_id`` ("" where none), the log dir as findings show it, the high
    watermark (``replication-offset-checkpoint``), the cleaner's first dirty offset
    (``cleaner-offset-checkpoint``) and the ``leader-epoch-checkpoint`` entries (None: no file)."""

    node_id: int | None
    cluster_id: str
    log_dir: str
    high_watermark: int | None = None
    cleaner_offset: int | None = None
    leader_epochs: tuple[tuple[int, int], ...] | None = None


@dataclass(slots=True)
class PartitionDir:
    """One replica's folder. ``key`` tells replicas of the same partition apart (two brokers'
    log dirs scanned together); ``kind`` is ``live``, ``delete``, ``future`` or ``stray``."""

    topic: str
    partition: int
    path: str
    display_path: str
    kind: str = LIVE
    segments: list[SegmentFile] = field(default_factory=list)
    snapshots: list[SnapshotFile] = field(default_factory=list)
    checkpointed_log_start: int | None = None
    # The log dir's cleaner-offset-checkpoint lists this partition: the log cleaner compacts it.
    cleaner_checkpointed: bool = False
    leader_epoch_checkpoint: str | None = None
    # The PATH that found this folder, as given.
    root: str | None = None
    # Only some of the folder's files were given (``scan t-0/00000000000000001000.log``): the
    # folder's live segments below the first one scanned, and the folder's first base offset.
    unscanned_segments: list[str] = field(default_factory=list)
    folder_first_offset: int | None = None
    # The folder's newest live segment's base offset (scanned or not): only that segment's end
    # can be a write in progress (SPEC incomplete_tail).
    folder_last_offset: int | None = None
    # The log dir's recovery-point-offset-checkpoint entry for this partition, and each checkpoint
    # file's modification time (name to epoch ms; None for an object in a store).
    checkpointed_recovery_point: int | None = None
    checkpoint_mtimes: dict[str, int | None] = field(default_factory=dict)
    # Live ``.index``/``.timeindex``/``.txnindex`` files whose ``.log`` is absent, by base offset
    # (SPEC missing_segment).
    orphan_sidecars: dict[int, list[str]] = field(default_factory=dict)
    # A tiered-storage folder (LocalTieredStorage's or the Aiven plugin's layout); once joined to
    # the local folder of its partition (tiered_history), the local log's first offset: remote
    # batches from there on are the local ones again and are not replayed twice.
    remote: bool = False
    local_log_start: int | None = None
    # Sidecar objects in a store that its listing showed empty: read as no bytes, with no request.
    empty_objects: set[str] = field(default_factory=set)
    # The broker whose log dir holds this folder (log.broker_log_dirs.label_replicas).
    broker: BrokerReplica | None = None

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.topic, self.partition, self.display_path)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(slots=True)
class Discovery:
    """Everything found under the paths: partitions, files skipped, segments not readable, notes
    (checkpoint problems, odd folder names), and what ``--topic``/``--partition`` left out."""

    paths: list[str]
    partitions: list[PartitionDir] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    unreadable: list[UnreadableSegment] = field(default_factory=list)
    # Segments found in partitions that the filters left out, and those partitions' topics.
    filtered_segments: int = 0
    filtered_topics: set[str] = field(default_factory=set)
    # The request's storage (its settings travel with the tasks; the context stays here).
    storage: StorageContext = field(default_factory=StorageContext, repr=False, compare=False)
    # What ``__remote_log_metadata`` says of the remote segments, when it is among the paths.
    remote_log: RemoteLogState | None = None
    # (requests, bytes fetched) that listing an object store cost (SPEC section 3).
    fetched: tuple[int, int] = (0, 0)
    # Each log dir's meta.properties cluster.id ("" where none), read once a scan by whichever
    # step asks first (checkpoints.cluster_of).
    cluster_ids: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def segment_count(self) -> int:
        return sum(len(p.segments) for p in self.partitions)
