"""Passes over the partitions discovery found, after its walk: the segments of a partly given
partition that were not scanned, and replicas of one partition that two PATHs found at the same
relative path (kept apart)."""

from __future__ import annotations

import os
import re
from dataclasses import replace

from kafka_audit.io.listing import Tree
from kafka_audit.log.discovery import PartitionDir
from kafka_audit.log.log_names import LIVE, parse_base_offset, segment_state

# A live segment's index file (LogFileUtils: <20-digit base offset>.index/.timeindex/.txnindex).
_SEGMENT_SIDECAR = re.compile(r"^(\d{20})\.(?:index|timeindex|txnindex)$")


def note_unscanned_segments(partition: PartitionDir, fs: Tree, notes: list[str]) -> None:
    """For a partition of which only some segment files were given, the folder's live segments
    below the first one scanned (not scanned: not deleted), and the folder's first base offset,
    where the log starts when no checkpoint says otherwise (``LocalLog``: the first segment).
    The folder is listed through ``fs``, the tree that found it (a local folder or an object
    store's prefix); a folder that cannot be listed is said so in ``notes``."""
    try:
        with fs.scandir(partition.path) as entries:
            names = [entry.name for entry in entries]
    except OSError as exc:
        notes.append(
            f"{partition.display_path}: the folder could not be listed ({exc.strerror or exc}); "
            "segments below the first one scanned are not known"
        )
        return
    offsets = {
        name: offset
        for name in names
        if segment_state(name) == (LIVE, "") and (offset := parse_base_offset(name)) is not None
    }
    partition.orphan_sidecars = orphan_sidecars(names)
    if not offsets:
        return
    scanned = {fs.basename(fs.realpath(s.path)) for s in partition.segments}
    first_scanned = min((s.base_offset for s in partition.segments if s.state == LIVE), default=None)
    partition.folder_first_offset = min(offsets.values())
    partition.folder_last_offset = max(offsets.values())
    partition.unscanned_segments = sorted(
        name
        for name, offset in offsets.items()
        if name not in scanned and (first_scanned is None or offset < first_scanned)
    )


def orphan_sidecars(names: list[str]) -> dict[int, list[str]]:
    """The live ``.index``, ``.timeindex`` and ``.txnindex`` files among a folder's ``names`` whose
    segment has no ``.log`` in any state (a ``.log.deleted`` is retention at work, LogSegment
    renames its log first: not missing), by base offset. A ``.snapshot`` never counts: it is
    named after an offset, not a segment (SPEC missing_segment)."""
    logs = {parse_base_offset(name) for name in names if segment_state(name) is not None}
    found: dict[int, list[str]] = {}
    for name in names:
        match = _SEGMENT_SIDECAR.match(name)
        if match is not None and int(match.group(1)) not in logs:
            found.setdefault(int(match.group(1)), []).append(name)
    return {offset: sorted(found[offset]) for offset in sorted(found)}


# A key found this many times or more is one folder reached through two PATHs.
_TWICE = 2


def keep_replicas_apart(partitions: list[PartitionDir]) -> None:
    """Replicas are keyed by their display path (``PartitionDir.key``). Two PATHs can each find a
    replica of one partition at the same path relative to themselves (``scan broker1/data
    broker2/data``: ``t-0`` twice); those replicas, and their files, are shown joined to the PATH
    that found them instead, so that they stay two replicas."""
    by_key: dict[tuple[str, int, str], list[PartitionDir]] = {}
    for partition in partitions:
        by_key.setdefault(partition.key, []).append(partition)
    for group in by_key.values():
        if len(group) < _TWICE:
            continue
        for partition in group:
            root = partition.root or ""

            def joined(display: str, root: str = root) -> str:
                return display if display == root or os.path.isabs(display) else os.path.join(root, display)

            partition.display_path = joined(partition.display_path)
            partition.segments = [replace(s, display_path=joined(s.display_path)) for s in partition.segments]
            partition.snapshots = [replace(s, display_path=joined(s.display_path)) for s in partition.snapshots]
