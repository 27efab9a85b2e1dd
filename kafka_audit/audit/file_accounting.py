"""Every byte found accounted for (SPEC section 3: unread bytes are findings, never notes): the
``skipped_file`` findings of discovery and an ``unreadable_segment`` finding for each segment the
scan found but did not read in full."""

from __future__ import annotations

from kafka_audit.audit.segment_task import SegmentStats
from kafka_audit.io.rsm_objects import ENCRYPTED
from kafka_audit.log.discovery import Discovery, PartitionDir
from kafka_audit.rules.catalogue import CheckId
from kafka_audit.rules.findings import Finding, make_finding
from kafka_audit.rules.partition.missing_segments import orphan_sidecar_finding

# What an encrypted tiered-storage segment without --rsm-key-file needs (its finding's message).
ENCRYPTED_HINT = " (its chunks are AES-GCM-encrypted: give --rsm-key-file, the private key that unwraps its data key)"


def file_findings(discovery: Discovery, stats: SegmentStats) -> list[Finding]:
    """The ``skipped_file`` findings of discovery, and an ``unreadable_segment`` finding for every
    segment found but not read in full: those discovery could not read, and those whose bytes
    read (summed over the segment's tasks) fall short of the bytes found, with the executor's
    reason when it gave one. The one place that decides a scan read what it found."""
    found: list[Finding] = [
        make_finding(
            CheckId.SKIPPED_FILE,
            f"Skipped {s.display_path}: {s.reason}",
            topic=s.topic,
            partition=s.partition,
            segment=s.display_path,
            details={"reason": s.reason},
        )
        for s in discovery.skipped
    ]
    for s in discovery.unreadable:
        found.append(
            _unread_finding(f"Segment {s.display_path} was not read: {s.reason}", s.topic, s.partition, s.display_path,
                            {"reason": s.reason, "base_offset": s.base_offset, "bytes_found": None, "bytes_read": 0})
        )
    for partition in discovery.partitions:
        found.extend(
            orphan_sidecar_finding(partition.topic, partition.partition, partition.display_path, offset, names)
            for offset, names in partition.orphan_sidecars.items()
        )
        found.extend(_partly_read(partition, stats))
    return found


def _partly_read(partition: PartitionDir, stats: SegmentStats) -> list[Finding]:
    """An ``unreadable_segment`` finding for each of ``partition``'s segments whose tasks read
    fewer bytes than discovery found, unless a ``segment_changed`` finding says why."""
    found: list[Finding] = []
    for segment in partition.segments:
        read = stats.bytes_read.get(segment.display_path, 0)
        reason = stats.unread.get(segment.display_path)
        if reason is None and (read >= segment.size or segment.display_path in stats.changed):
            continue  # read in full, or a segment_changed finding says what was not
        reason = reason or f"only {read:,} of its {segment.size:,} bytes were read"
        hint = ENCRYPTED_HINT if reason == ENCRYPTED else ""
        found.append(
            _unread_finding(
                f"Segment {segment.display_path} was not read in full: {reason}{hint}",
                partition.topic,
                partition.partition,
                segment.display_path,
                {"reason": reason, "base_offset": segment.base_offset, "bytes_found": segment.size, "bytes_read": read},
            )
        )
    return found


def _unread_finding(message: str, topic: str | None, partition: int | None, segment: str, details: dict) -> Finding:
    """An ``unreadable_segment`` finding: a segment found and not read, or not read in full (its
    ``details``: the reason, base offset, bytes found and read)."""
    return make_finding(
        CheckId.UNREADABLE_SEGMENT, message, topic=topic, partition=partition, segment=segment, details=details
    )
