"""Finding the segments and sidecars under the paths a user gives: ``LogManager`` / ``LocalLog``.

A PATH may be a broker log dir (holding ``<topic>-<partition>/`` folders), one partition folder,
one ``.log`` file, or any tree holding those; trees are walked recursively, following symbolic
links once (a loop is noted, not followed forever). Names follow Kafka:

- partition folders ``<topic>-<partition>`` (``UnifiedLog.parseTopicPartitionName``: the
  partition is the digits after the last ``-``, topics may hold ``-`` and ``.``), and the
  ``<topic>-<partition>.<uuid>-delete`` / ``-future`` / ``-stray`` folders of a topic being
  deleted, a replica being moved between log dirs (ALTER_REPLICA_LOG_DIRS), or a KRaft stray;
- segment files ``<20-digit base offset>.log`` (``LogFileUtils``), with ``.deleted`` (being
  deleted), ``.cleaned`` and ``.swap`` (log cleaner) suffixes, and a tiered-storage copy's
  ``<20-digit offset>-<segment id>.log``;
- sidecars beside a segment: ``.index``, ``.timeindex``, ``.txnindex`` (same suffix state), the
  partition's ``.snapshot`` files, and the log dir's checkpoint files.

Discovery reads directory entries and ``stat`` only; the checkpoint files are read because they
are tiny. Nothing here raises on a bad path. A file or folder that is not part of a Kafka log is a
:class:`SkippedFile` (a ``skipped_file`` finding); a segment that is found but cannot be read (a
dangling link or a folder or FIFO named like a segment, a ``stat`` that fails, a folder that cannot
be listed) is an :class:`UnreadableSegment` (an ``unreadable_segment`` finding): the scan never
calls clean what it did not read. Paths are made absolute here, before any Spark task sees them;
findings show them relative to the PATH as given.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

from kafka_audit.io import rsm_objects
from kafka_audit.io.listing import LocalTree, Tree, tree
from kafka_audit.io.storage import check_scheme, is_remote, local_path
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.broker_log_dirs import label_replicas
from kafka_audit.log.discovery import Discovery, PartitionDir, SegmentFile, SkippedFile, SnapshotFile, UnreadableSegment
from kafka_audit.log.found_partitions import keep_replicas_apart, note_unscanned_segments
from kafka_audit.log.log_names import (
    DELETED,
    KNOWN_OTHER_FILES,
    KRAFT_SNAPSHOT,
    LIVE,
    RSM_SIDECAR_SUFFIXES,
    SIDECAR_SUFFIXES,
    STATE_SUFFIXES,
    TIERED_LEADER_EPOCH_CHECKPOINT,
    is_tiered_name,
    local_tiered_id,
    overflows_long,
    parse_base_offset,
    parse_partition_dir,
    segment_state,
)
from kafka_audit.log.partition_folders import PartitionFolders, mtime_ms
from kafka_audit.log.tiered_history import join_histories, rsm_segment_file

_OVERFLOW_REASON = (
    "its 20-digit name is above Long.MAX_VALUE: a broker cannot load it "
    "(LogFileUtils.offsetFromFileName throws NumberFormatException)"
)


def discover(
    paths: Iterable[str],
    topics: Iterable[str] | None = None,
    partitions: Iterable[int] | None = None,
    storage: StorageContext | None = None,
) -> Discovery:
    """Find every partition folder and segment under ``paths`` (local paths or URIs, read under
    the request's ``storage``; none: no settings), restricted to ``topics`` / ``partitions`` when
    given. The discovery carries ``storage`` on to the audit."""
    storage = storage if storage is not None else StorageContext()
    sent = storage.requests_sent()
    walker = _Walker(set(topics) if topics else None, set(partitions) if partitions is not None else None, storage)
    discovery = Discovery(paths=[str(p) for p in paths], storage=storage)
    for path in discovery.paths:
        walker.walk_root(path)
    keep_replicas_apart(list(walker.partitions.values()))
    discovery.partitions = sorted(walker.partitions.values(), key=lambda p: (p.topic, p.partition, p.display_path))
    discovery.notes = walker.notes
    discovery.skipped = walker.skipped
    discovery.unreadable = walker.unreadable
    discovery.filtered_segments = walker.filtered_segments
    discovery.filtered_topics = walker.filtered_topics
    for partition in discovery.partitions:
        partition.segments.sort(key=lambda s: (s.base_offset, s.state != LIVE, s.display_path))
        partition.snapshots.sort(key=lambda s: s.offset)
        note_unscanned_segments(partition, walker.trees[partition.path], discovery.notes)
    join_histories(discovery)
    label_replicas(discovery, walker.trees)
    discovery.fetched = storage.fetched_since(sent)
    return discovery


class _Walker(PartitionFolders):
    def __init__(self, topics: set[str] | None, partitions: set[int] | None, storage: StorageContext) -> None:
        self.topics = topics
        self.storage = storage
        self.partition_filter = partitions
        self.partitions: dict[str, PartitionDir] = {}
        self.filtered_out: set[str] = set()
        self.notes: list[str] = []
        self.skipped: list[SkippedFile] = []
        self.unreadable: list[UnreadableSegment] = []
        self.filtered_segments = 0
        self.filtered_topics: set[str] = set()
        self.visited_dirs: set[tuple[int, int | str]] = set()  # (device, inode or an object's key)
        self.seen_files: set[str] = set()
        self.checkpoint_cache: dict[tuple[str, str], dict[tuple[str, int], int]] = {}
        self.mtimes: dict[str, int | None] = {}
        # Absolute root -> the PATH as the user gave it.
        self.given: dict[str, str] = {}
        # The filesystem of the PATH being walked (local, or an object store's listing).
        self.fs: Tree = LocalTree()
        # The tree that found each partition folder (by real path): its listing says which
        # segments the folder holds besides those given.
        self.trees: dict[str, Tree] = {}
        # Folders known to be a broker's log dir (by their contents: SPEC section 6), by real path.
        self.log_dirs: dict[str, bool] = {}

    def skip(self, display: str, reason: str, folder: str | None = None) -> None:
        """A file or folder that is not part of a Kafka log: a ``skipped_file`` finding."""
        place = self._place(folder)
        if place is not None:
            self.skipped.append(SkippedFile(display, reason, *place))

    def cannot_read(self, display: str, reason: str, folder: str | None = None, base_offset: int | None = None) -> None:
        """A segment (or a folder that may hold some) found but not readable: ``unreadable_segment``."""
        place = self._place(folder)
        if place is not None:
            self.unreadable.append(UnreadableSegment(display, reason, *place, base_offset=base_offset))

    def walk_root(self, given: str) -> None:
        try:
            check_scheme(given)
            # A relative local path is made absolute before any Spark task sees it (SPEC 1).
            root = given.rstrip("/") if is_remote(given) else os.path.abspath(local_path(given))
            self.given[root] = given
            self.fs = tree(root, self.storage)
            info = self.fs.stat(root)
        except OSError as exc:
            self._not_readable(given, None, f"{exc.strerror or exc}")
            return
        if stat.S_ISDIR(info.st_mode):
            self._walk_dir(root, root)
        elif stat.S_ISREG(info.st_mode):
            real = self.fs.realpath(root)
            folder = self.fs.dirname(real)
            self._add_file(folder, self.fs.basename(real), root, root, explicit=True)
        else:
            self._not_readable(given, self.fs.dirname(root), "not a regular file or directory")

    def _not_readable(self, display: str, folder: str | None, reason: str) -> None:
        """Something at ``display`` that could not be read: a segment's name makes it an
        unreadable segment, any other name a skipped file."""
        name = self.fs.basename(display)
        offset = parse_base_offset(name)
        if segment_state(name) is not None and (offset is not None or overflows_long(name)):
            self.cannot_read(display, reason, folder, offset)
        else:
            self.skip(display, reason, folder)

    def _walk_dir(self, directory: str, root: str) -> None:
        try:
            info = self.fs.stat(directory)
        except OSError as exc:
            self.cannot_read(self._display(directory, root), f"cannot read the folder ({exc.strerror or exc})", directory)
            return
        identity = (info.st_dev, info.st_ino)
        if identity in self.visited_dirs:
            if self.fs.islink(directory):
                self.skip(self._display(directory, root), "symbolic link to a folder already scanned", directory)
            return
        self.visited_dirs.add(identity)
        try:
            with self.fs.scandir(directory) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            # Its segments, if it holds any, are not read: never a silent skip.
            self.cannot_read(self._display(directory, root), f"cannot list the folder ({exc.strerror or exc})", directory)
            return
        subdirs = []
        files = []
        real_directory = self.fs.realpath(directory)
        in_partition = parse_partition_dir(self.fs.basename(real_directory)) is not None and not self._is_log_dir(real_directory)
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
                is_file = entry.is_file(follow_symlinks=True)
            except OSError:
                is_dir = is_file = False
            named_like_file = parse_base_offset(entry.name) is not None and self._looks_like_log_file(entry.name)
            looks_kafka = in_partition or self._looks_like_log_file(entry.name)
            display = self._display(entry.path, root)
            if is_dir and named_like_file:
                self._not_readable(display, directory, "a folder, not a segment or sidecar file")
            elif is_dir:
                subdirs.append(entry.path)
            elif is_file:
                files.append(entry.name)
            elif entry.is_symlink():
                try:
                    self.fs.stat(entry.path)
                    reason = "symbolic link to something that is not a regular file"
                except OSError as exc:
                    reason = f"broken symbolic link ({exc.strerror or exc})"
                self._not_readable(display, directory, reason)
            elif looks_kafka:
                # A FIFO, socket or device: opening a FIFO would block the audit forever.
                self._not_readable(display, directory, "not a regular file")
        # A tiered-storage plugin's segment is sized by its manifest: a folder's manifests in a
        # store are read a few at once, ahead of the files that need them.
        manifests = [self.fs.join(directory, n) for n in files if n.endswith(rsm_objects.MANIFEST)]
        with self.storage.prefetching(manifests, rsm_objects.MAX_MANIFEST_BYTES):
            for name in files:
                self._add_file(directory, name, self.fs.join(directory, name), root, explicit=False)
        for sub in subdirs:
            self._walk_dir(sub, root)

    def _add_file(self, folder: str, name: str, path: str, root: str, explicit: bool) -> None:
        state = segment_state(name)
        snapshot = name.endswith(".snapshot")
        display = self._display(path, root)
        if state is None and not snapshot:
            self._add_other_file(folder, name, path, root, explicit, display)
            return
        base_offset = parse_base_offset(name)
        if base_offset is None:
            # SPEC 1: a file that is not a segment is skipped; any ``*.log`` (a broker's own
            # server.log included) is reported wherever it lies. A segment named with 20 digits
            # above Long.MAX_VALUE is one a broker cannot load: it is not read, so not skipped.
            if state is not None:
                self._unnamed_log(folder, name, display)
            return
        real = self.fs.realpath(path)
        if real in self.seen_files:
            return
        partition = self._partition(folder, root)
        if partition is None:
            if not snapshot:
                self.filtered_segments += 1
            return
        self.seen_files.add(real)
        if snapshot:
            self._add_snapshot(partition, name, path, display, base_offset)
            return
        if rsm_objects.is_segment_log(path):
            try:
                partition.segments.append(rsm_segment_file(path, display, base_offset, self.storage))
            except OSError as exc:
                self.cannot_read(display, f"{exc.strerror or exc}", folder, base_offset)
            return
        try:
            info = self.fs.stat(path)
        except OSError as exc:
            self.cannot_read(display, f"{exc.strerror or exc}", folder, base_offset)
            return
        assert state is not None  # a name without a segment state is a snapshot (returned above)
        seg_state, suffix = state
        if partition.kind == "delete" and seg_state == LIVE:
            seg_state = DELETED
        stem = self.fs.join(self.fs.dirname(path), name[: name.index(".log")])
        sidecars = [self._sidecar(stem, ext, suffix) for ext in SIDECAR_SUFFIXES]
        if is_remote(path):
            partition.empty_objects.update(p for p in sidecars if p is not None and self.fs.stat(p).st_size == 0)
        partition.segments.append(
            SegmentFile(
                path, display, base_offset, seg_state, info.st_size, mtime_ms(info),
                index=sidecars[0], time_index=sidecars[1], txn_index=sidecars[2],
                remote_id=local_tiered_id(name) if partition.remote else None,
                remote_txn_index=sidecars[2] is not None if partition.remote else None,
                file_id=info.st_ino if isinstance(info.st_ino, int) and info.st_ino < 1 << 63 else 0,
            )
        )

    def _add_snapshot(self, partition: PartitionDir, name: str, path: str, display: str, base_offset: int) -> None:
        """A producer snapshot of the partition; a tiered one is only noted: RemoteLogManager
        copies the snapshot taken at the *next* segment's base offset
        (LogSegmentData.producerSnapshotIndex) under this segment's start offset."""
        if is_tiered_name(name):
            self.note(
                f"{display}: tiered-storage producer snapshot, named by its segment's start offset but "
                f"holding the producer state at the segment's end: not compared with the replay"
            )
        else:
            partition.snapshots.append(SnapshotFile(path, display, base_offset))

    def _add_other_file(self, folder: str, name: str, path: str, root: str, explicit: bool, display: str) -> None:
        """A file that is neither a segment nor a snapshot: a tiered segment's lone manifest, a
        file named on the command line, a stray file in a partition folder, or an index."""
        stem = rsm_objects.stem_of(path) if name.endswith(rsm_objects.MANIFEST) else None
        if stem is not None and not self.fs.isfile(stem + rsm_objects.LOG):
            # The plugin uploads the .log first and the manifest last: a manifest alone is
            # a segment whose data is gone (never a silent skip).
            self.cannot_read(display, "its .log object is missing (only its manifest was found)", folder,
                             parse_base_offset(name))
        elif explicit:
            kind = "sidecar file" if self._is_sidecar(name) else "file"
            self.skip(display, f"a {kind}, not a Kafka segment (.log)", folder)
        elif self._in_partition_folder(folder) and not self._is_sidecar(name):
            self.skip(display, "not a Kafka segment or sidecar file", folder)
        elif parse_base_offset(name) is not None and parse_partition_dir(self.fs.basename(folder)):
            # A segment's index: its folder is a partition even if no .log is left in it
            # (found_partitions.orphan_sidecars: missing_segment, never silent).
            self._partition(folder, root)

    def _unnamed_log(self, folder: str, name: str, display: str) -> None:
        """A ``*.log`` whose name is not a segment's base offset: one above Long.MAX_VALUE cannot
        be read (a broker cannot load it), any other is skipped."""
        if overflows_long(name):
            self.cannot_read(display, _OVERFLOW_REASON, folder)
        else:
            self.skip(display, "not a segment (its name is not a 20-digit base offset)", folder)

    @classmethod
    def _looks_like_log_file(cls, name: str) -> bool:
        """A segment, snapshot or sidecar file name (by its suffix)."""
        return segment_state(name) is not None or cls._is_sidecar(name)

    @staticmethod
    def _is_sidecar(name: str) -> bool:
        # LogFileUtils: the .deleted (retention), .cleaned and .swap (log cleaner) suffixes apply
        # to a segment's sidecars as to its .log.
        base = name
        for suffix in STATE_SUFFIXES:
            base = base.removesuffix(suffix)
        return (
            name in KNOWN_OTHER_FILES
            or base.endswith(SIDECAR_SUFFIXES + (".snapshot", TIERED_LEADER_EPOCH_CHECKPOINT) + RSM_SIDECAR_SUFFIXES)
            or KRAFT_SNAPSHOT.match(name) is not None
        )

    def _sidecar(self, stem: str, ext: str, suffix: str) -> str | None:
        candidate = stem + ext + suffix
        return candidate if self.fs.isfile(candidate) else None
