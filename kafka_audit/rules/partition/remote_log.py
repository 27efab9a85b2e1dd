"""The checks of ``__remote_log_metadata`` against the remote objects and the local log (SPEC section 5).

Pure rules over each remote segment's latest metadata (``RemoteLogMetadataCache``), the remote
objects found, and each partition's local log start:

- ``remote_segment_incomplete``: the latest state is COPY_SEGMENT_STARTED or DELETE_SEGMENT_STARTED
  (a copy or delete that never finished: ``RemoteLogManager`` leaves such a segment behind when the
  broker dies between the two records);
- ``remote_segment_overlap`` / ``remote_log_gap``: among COPY_SEGMENT_FINISHED segments (those
  ``RemoteLogMetadataCache`` serves), offset ranges that overlap, or offsets missing between them
  or between the last of them and the local log start;
- ``remote_segment_missing``: COPY_SEGMENT_FINISHED but no object, or an object whose (original)
  size differs from ``SegmentSizeInBytes``; judged only for partitions whose remote storage was scanned;
- ``remote_txn_index_flag``: ``TxnIndexEmpty`` false with no transaction index object, or true with one
  (KAFKA-16780).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kafka_audit.log.remote_log_metadata import COPY_FINISHED, COPY_STARTED, DELETE_STARTED, RemoteSegmentState
from kafka_audit.rules.catalogue import CheckId
from kafka_audit.rules.findings import Finding, make_finding, partition_label


@dataclass(frozen=True, slots=True)
class RemoteObject:
    """A remote segment found in storage: its display path, original size, and whether it has a
    transaction index (None: unknown)."""

    segment: str
    size: int
    has_txn_index: bool | None


def _finding(check: CheckId, state: RemoteSegmentState, message: str, segment: str | None = None, **details: Any) -> Finding:
    return make_finding(
        check,
        message,
        topic=state.topic,
        partition=state.partition,
        segment=segment,
        offset=state.start_offset,
        timestamp=state.event_timestamp_ms,
        details={
            "segment_id": state.segment_id,
            "start_offset": state.start_offset,
            "end_offset": state.end_offset,
            "state": state.state,
            "metadata_offset": state.last_offset,
            **details,
        },
    )


def remote_log_findings(
    states: Iterable[RemoteSegmentState],
    objects: dict[str, RemoteObject],
    scanned: set[tuple[str, int]],
    local_starts: dict[tuple[str, int], int],
) -> list[Finding]:
    """All findings of the five checks. ``objects``: segment id -> object found; ``scanned``: the
    partitions whose remote storage was among the paths; ``local_starts``: each partition's first
    local live offset."""
    findings: list[Finding] = []
    by_partition: dict[tuple[str, int], list[RemoteSegmentState]] = {}
    for state in states:
        found = objects.get(state.segment_id)
        label = partition_label(state.topic, state.partition)
        where = found.segment if found else None
        if state.state in (COPY_STARTED, DELETE_STARTED):
            findings.append(_finding(
                CheckId.REMOTE_SEGMENT_INCOMPLETE, state,
                f"Remote segment {state.segment_id} of {label} (offsets {state.start_offset}-{state.end_offset}) was left in "
                f"{state.state} with no later state: its {'copy' if state.state == COPY_STARTED else 'deletion'} never finished",
                where,
            ))
        if state.state != COPY_FINISHED:
            continue
        by_partition.setdefault((state.topic, state.partition), []).append(state)
        if (state.topic, state.partition) in scanned:
            findings.extend(_object_findings(state, found, label))
    for key, finished in by_partition.items():
        findings.extend(_offset_findings(key, sorted(finished, key=lambda s: (s.start_offset, s.end_offset)), local_starts.get(key)))
    return findings


def _object_findings(state: RemoteSegmentState, found: RemoteObject | None, label: str) -> list[Finding]:
    if found is None:
        return [_finding(
            CheckId.REMOTE_SEGMENT_MISSING, state,
            f"Remote segment {state.segment_id} of {label} is COPY_SEGMENT_FINISHED in __remote_log_metadata but "
            f"its object is not in the remote storage scanned",
            None, size_in_metadata=state.segment_size_in_bytes, size_found=None,
        )]
    out = []
    if found.size != state.segment_size_in_bytes:
        out.append(_finding(
            CheckId.REMOTE_SEGMENT_MISSING, state,
            f"Remote segment {found.segment} holds {found.size:,} bytes, __remote_log_metadata says "
            f"SegmentSizeInBytes {state.segment_size_in_bytes:,}",
            found.segment, size_in_metadata=state.segment_size_in_bytes, size_found=found.size,
        ))
    if state.txn_index_empty is not None and found.has_txn_index is not None and state.txn_index_empty == found.has_txn_index:
        said = "empty (TxnIndexEmpty true)" if state.txn_index_empty else "present (TxnIndexEmpty false)"
        has = "has one" if found.has_txn_index else "has none"
        out.append(_finding(
            CheckId.REMOTE_TXN_INDEX_FLAG, state,
            f"Remote segment {found.segment}: __remote_log_metadata says its transaction index is {said}, "
            f"but the remote storage {has} (KAFKA-16780)",
            found.segment, txn_index_empty=state.txn_index_empty, txn_index_found=found.has_txn_index,
        ))
    return out


def _offset_findings(key: tuple[str, int], finished: list[RemoteSegmentState], local_start: int | None) -> list[Finding]:
    """Overlaps and gaps between the finished segments (sorted by start offset), and before the local log start."""
    out: list[Finding] = []
    label = partition_label(*key)
    previous: RemoteSegmentState | None = None
    for state in finished:
        if previous is not None and state.start_offset <= previous.end_offset:
            out.append(_finding(
                CheckId.REMOTE_SEGMENT_OVERLAP, state,
                f"Remote segments {previous.segment_id} ({previous.start_offset}-{previous.end_offset}) and "
                f"{state.segment_id} ({state.start_offset}-{state.end_offset}) of {label} overlap",
                other_segment_id=previous.segment_id,
            ))
        elif previous is not None and state.start_offset > previous.end_offset + 1:
            out.append(_finding(
                CheckId.REMOTE_LOG_GAP, state,
                f"Offsets {previous.end_offset + 1}-{state.start_offset - 1} of {label} are in no remote segment",
                missing_offsets=[previous.end_offset + 1, state.start_offset - 1],
            ))
        if previous is None or state.end_offset > previous.end_offset:
            previous = state
    if previous is not None and local_start is not None and local_start > previous.end_offset + 1:
        out.append(_finding(
            CheckId.REMOTE_LOG_GAP, previous,
            f"Offsets {previous.end_offset + 1}-{local_start - 1} of {label} are neither in a remote segment "
            f"nor in the local log (which starts at {local_start})",
            missing_offsets=[previous.end_offset + 1, local_start - 1], local_log_start=local_start,
        ))
    return out
