"""One history per partition across tiered (remote) and local storage (KIP-405, SPEC section 5).

A tiered topic's older segments live in remote storage, the tail in the broker's log dir, and a
segment may be in both for a while (``local.retention.*`` keeps it locally after its copy).
``UnifiedLog`` serves offsets from the local log from its ``localLogStartOffset`` on and from
remote storage below it; ``logStartOffset`` (the ``log-start-offset-checkpoint`` entry) is the
start of the whole history. So, when the paths hold a partition's remote folder(s) and its one
local folder, the remote segments are joined to the local folder's partition: they are replayed
first, the local ones after, and remote batches at or above the local log's first offset are
not replayed again (``PartitionDir.local_log_start``).

``__remote_log_metadata`` (when among the paths) is read here on the driver: a remote segment
whose latest state is not COPY_SEGMENT_FINISHED is not part of the history
(``RemoteLogMetadataCache`` serves only finished copies): it is audited as a deleted file is,
record by record, and not replayed. A ``.log`` object of the Aiven plugin's layout becomes a
segment file here too (``rsm_segment_file``: its manifest's size and index references).
"""

from __future__ import annotations

import os
from dataclasses import replace

from kafka_audit.io import rsm_objects
from kafka_audit.io.storage import is_remote, local_path
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.discovery import Discovery, PartitionDir, SegmentFile
from kafka_audit.log.log_names import DELETED, LIVE, REMOTE_LOG_METADATA
from kafka_audit.log.remote_log_metadata import COPY_FINISHED, read_remote_log_metadata

# Remote folders of one partition joined without a local one: two or more.
_REMOTE_COPIES_TO_JOIN = 2


def join_histories(discovery: Discovery) -> None:
    """Read ``__remote_log_metadata``, take segments it does not call finished out of the
    history, and join each partition's remote folders to its local folder (in place)."""
    metadata = [p for p in discovery.partitions if p.topic == REMOTE_LOG_METADATA]
    if metadata:
        paths = [s.path for p in metadata for s in p.segments if s.state == LIVE]
        discovery.remote_log = read_remote_log_metadata(paths, discovery.storage)
        discovery.notes.extend(discovery.remote_log.notes)
        _not_finished_out(discovery)
    groups: dict[tuple[str, int], list[PartitionDir]] = {}
    for partition in discovery.partitions:
        groups.setdefault((partition.topic, partition.partition), []).append(partition)
    joined: set[int] = set()
    for (topic, number), group in groups.items():
        remote = [p for p in group if p.remote]
        local = [p for p in group if not p.remote and p.kind == LIVE]
        if not remote or (not local and len(remote) < _REMOTE_COPIES_TO_JOIN):
            continue
        if len(local) > 1:
            discovery.notes.append(
                f"{topic}-{number}: remote segments found beside {len(local)} local replicas; each is audited on its own"
            )
            continue
        target = local[0] if local else remote[0]
        if local:
            target.local_log_start = min((s.base_offset for s in target.segments if s.state == LIVE), default=None)
        for source in remote:
            if source is target:
                continue
            target.segments.extend(source.segments)
            joined.add(id(source))
        target.segments.sort(key=lambda s: (s.base_offset, s.state != LIVE, s.remote_id is None, s.display_path))
    discovery.partitions = [p for p in discovery.partitions if id(p) not in joined]


def _not_finished_out(discovery: Discovery) -> None:
    """Remote segments whose latest metadata state is not COPY_SEGMENT_FINISHED leave the history."""
    assert discovery.remote_log is not None
    states = discovery.remote_log.segments
    for partition in discovery.partitions:
        if not partition.remote:
            continue
        kept = []
        for segment in partition.segments:
            known = states.get(segment.remote_id or "")
            if segment.state == LIVE and known is not None and known.state != COPY_FINISHED:
                discovery.notes.append(
                    f"{segment.display_path}: {known.state} in __remote_log_metadata, audited but not part of the history"
                )
                kept.append(replace(segment, state=DELETED))
            else:
                kept.append(segment)
        partition.segments = kept


def rsm_segment_file(path: str, display: str, base_offset: int, storage: StorageContext) -> SegmentFile:
    """A ``.log`` object of the Aiven plugin's layout: its size is the original segment's (the
    manifest's ``originalFileSize``), its indexes lie in its ``.indexes`` object."""
    stem = rsm_objects.stem_of(path)
    assert stem is not None
    manifest = rsm_objects.load_manifest(stem, storage)
    place = rsm_objects.place_of(path)
    has_txn = manifest.indexes.get("transaction") is not None
    # A local copy's modification time, as for any local segment file; none in a store.
    mtime = None if is_remote(path) else os.stat(local_path(path)).st_mtime_ns // 1_000_000
    return SegmentFile(
        path, display, base_offset, LIVE, manifest.original_size, mtime,
        rsm_objects.index_ref(stem, "offset"), rsm_objects.index_ref(stem, "timestamp"),
        rsm_objects.index_ref(stem, "transaction") if has_txn else None,
        remote_id=place[4] if place else None, remote_txn_index=has_txn,
    )
