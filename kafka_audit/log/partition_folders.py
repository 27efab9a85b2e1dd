"""The partition folders of a discovery, after Kafka's LogManager.loadLogs: a folder named as a
partition (``UnifiedLog.parseTopicPartitionName``) or not, kept or left out by ``--topic`` and
``--partition``, and its log dir's checkpoints (log start, cleaner, recovery point) read once per
log dir; the base of the discovery's walker (:func:`kafka_audit.log.log_dir.discover`).
"""

from __future__ import annotations

import os

from kafka_audit.io.listing import RemoteStat, Tree
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.broker_log_dirs import is_broker_log_dir
from kafka_audit.log.checkpoints import read_offset_checkpoint
from kafka_audit.log.discovery import PartitionDir
from kafka_audit.log.log_names import (
    CLEANER_OFFSET_CHECKPOINT,
    LEADER_EPOCH_CHECKPOINT,
    LIVE,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    is_tiered_dir,
    parse_partition_dir,
    parse_rsm_partition_dir,
)


class PartitionFolders:
    """The partition folders found so far (``partitions``, by real path) and what the walker's
    notes say of them; the state is the walker's (set in its ``__init__``)."""

    topics: set[str] | None
    partition_filter: set[int] | None
    storage: StorageContext
    partitions: dict[str, PartitionDir]
    filtered_out: set[str]
    filtered_topics: set[str]
    notes: list[str]
    checkpoint_cache: dict[tuple[str, str], dict[tuple[str, int], int]]
    mtimes: dict[str, int | None]
    given: dict[str, str]
    fs: Tree
    trees: dict[str, Tree]
    log_dirs: dict[str, bool]

    def note(self, text: str) -> None:
        self.notes.append(text)

    def _place(self, folder: str | None) -> tuple[str | None, int | None] | None:
        """Topic and partition of a file in ``folder`` (None, None outside partition folders);
        None when ``--topic``/``--partition`` leave it out."""
        parsed = self._parse_folder(self.fs.realpath(folder)) if folder else None
        topic, number = (parsed[0], parsed[1]) if parsed else (None, None)
        if (self.topics is not None and topic not in self.topics) or (
            self.partition_filter is not None and number not in self.partition_filter
        ):
            return None
        return topic, number

    def _parse_folder(self, real_folder: str) -> tuple[str, int, str] | None:
        """``(topic, partition, kind)`` of a partition folder: a broker's (or LocalTieredStorage's),
        or the Aiven plugin's ``<topic>-<topic id>/<partition>``."""
        name = self.fs.basename(real_folder)
        if self._is_log_dir(real_folder):
            return None
        return parse_partition_dir(name) or parse_rsm_partition_dir(self.fs.basename(self.fs.dirname(real_folder)), name)

    def _is_log_dir(self, real_folder: str) -> bool:
        """A broker's log dir, known by its contents, never by its name (``broker-1`` is no
        partition 1 of topic ``broker``); asked once per folder."""
        known = self.log_dirs.get(real_folder)
        if known is None:
            known = self.log_dirs[real_folder] = is_broker_log_dir(self.fs, real_folder)
        return known

    def _display(self, path: str, root: str) -> str:
        """``path`` as findings show it: relative to the PATH that found it, or as given."""
        if root in self.given and not self.fs.isdir(root):
            return self.given[root]
        rel = self.fs.relpath(path, root)
        return self.given.get(root, root) if rel == "." else rel

    def _in_partition_folder(self, folder: str) -> bool:
        return parse_partition_dir(self.fs.basename(folder)) is not None and not self._is_log_dir(self.fs.realpath(folder))

    def _partition(self, folder: str, root: str) -> PartitionDir | None:
        real_folder = self.fs.realpath(folder)
        existing = self.partitions.get(real_folder)
        if existing is not None or real_folder in self.filtered_out:
            return existing
        name = self.fs.basename(real_folder)
        parsed = self._parse_folder(real_folder)
        display = self._display(folder, root) if self.fs.isdir(root) else folder
        if parsed is None:
            self.note(
                f"{display}: folder name is not <topic>-<partition>; its segments are audited as topic "
                f"{name!r}, partition -1"
            )
            topic, number, kind = name, -1, LIVE
        else:
            topic, number, kind = parsed
        if (self.topics is not None and topic not in self.topics) or (
            self.partition_filter is not None and number not in self.partition_filter
        ):
            self.filtered_out.add(real_folder)
            self.filtered_topics.add(topic)
            return None
        partition = PartitionDir(topic, number, real_folder, display, kind, root=self.given.get(root, root))
        partition.remote = is_tiered_dir(name) or (parsed is not None and parse_partition_dir(name) is None)
        self.trees[real_folder] = self.fs
        log_dir = self.fs.dirname(real_folder)
        partition.checkpointed_log_start = self._checkpoint(log_dir, LOG_START_OFFSET_CHECKPOINT).get((topic, number))
        partition.cleaner_checkpointed = (topic, number) in self._checkpoint(log_dir, CLEANER_OFFSET_CHECKPOINT)
        partition.checkpointed_recovery_point = self._checkpoint(log_dir, RECOVERY_POINT_CHECKPOINT).get((topic, number))
        partition.checkpoint_mtimes = {
            name: self._mtime(self.fs.join(log_dir, name)) for name in (LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT)
        }
        epochs = self.fs.join(real_folder, LEADER_EPOCH_CHECKPOINT)
        partition.leader_epoch_checkpoint = epochs if self.fs.isfile(epochs) else None
        self.partitions[real_folder] = partition
        return partition

    def _mtime(self, path: str) -> int | None:
        """A checkpoint file's modification time (epoch ms), None when absent or unknown; asked
        once per file."""
        if path not in self.mtimes:
            try:
                self.mtimes[path] = mtime_ms(self.fs.stat(path))
            except OSError:
                self.mtimes[path] = None
        return self.mtimes[path]

    def _checkpoint(self, log_dir: str, name: str) -> dict[tuple[str, int], int]:
        """An offset checkpoint file of the log dir (``log-start-offset-checkpoint``,
        ``cleaner-offset-checkpoint``), read once per log dir."""
        cached = self.checkpoint_cache.get((log_dir, name))
        if cached is not None:
            return cached
        offsets: dict[tuple[str, int], int] = {}
        path = self.fs.join(log_dir, name)
        if self.fs.isfile(path):
            parsed = read_offset_checkpoint(path, self.storage)
            for problem in parsed.problems:
                self.note(f"{path}: {problem.message}")
            offsets = {(e.topic, e.partition): e.offset for e in parsed.entries}
        self.checkpoint_cache[(log_dir, name)] = offsets
        return offsets


def mtime_ms(info: os.stat_result | RemoteStat) -> int | None:
    return None if info.st_mtime_ns is None else info.st_mtime_ns // 1_000_000
