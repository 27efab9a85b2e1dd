"""Segment tasks for tests that audit one file or plan tasks without a discovery."""

from __future__ import annotations

from kafka_audit.audit.segment_task import SegmentTask
from kafka_audit.log.discovery import SegmentFile


def segment_task(
    topic: str, partition: int, replica: str, path: str, display_path: str, base_offset: int,
    *, size: int = 0, newest: bool = False,
) -> SegmentTask:
    """A task over the live segment at ``path`` (shown as ``display_path``), with no sidecars."""
    segment = SegmentFile(path, display_path, base_offset, "live", size, 0)
    return SegmentTask(topic, partition, replica, segment, newest=newest)
