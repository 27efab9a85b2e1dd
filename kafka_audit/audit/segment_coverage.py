"""Whether a partition's batch summaries cover every byte of its live segments, after Kafka's
LogSegment.recover: bytes that do not read as batches are a gap the producer-state replay cannot
trust (:class:`Coverage`).
"""

from __future__ import annotations

from kafka_audit.audit.segment_indexes import SegmentFiles
from kafka_audit.rules.batch_summary import BatchSummary


class Coverage:
    """Whether the batch summaries cover every byte of each live segment, in log order. Bytes the
    segment step could not read as batches (a torn tail, a size field that cannot be framed, an
    unknown magic, a file that cannot be opened) are, to the replay, batches it cannot trust
    (``ProducerStateReplay.untrusted``); the segment step reports them itself."""

    def __init__(self, segments: dict[str, SegmentFiles]) -> None:
        self.order = sorted(segments.values(), key=lambda s: (s.base_offset, s.segment))
        self.next = 0
        self.current: SegmentFiles | None = None
        self.end = 0

    def gap_before(self, summary: BatchSummary) -> bool:
        current = self.current
        if current is not None and summary.segment == current.segment:  # the common case
            gap = summary.position != self.end
            self.end = summary.position + summary.size
            return gap
        # Another segment: the current one's tail, and segments skipped on the way.
        gap = self._close()
        while self.next < len(self.order) and self.order[self.next].segment != summary.segment:
            gap |= bool(self.order[self.next].size)  # a segment with bytes and no batch read
            self.next += 1
        self.current = self.order[self.next] if self.next < len(self.order) else None
        self.next += 1
        self.end = 0
        gap |= summary.position != self.end
        self.end = summary.position + summary.size
        return gap

    def gap_at_end(self) -> bool:
        gap = self._close()
        gap |= any(files.size for files in self.order[self.next :])
        self.next = len(self.order)
        return gap

    def _close(self) -> bool:
        """The current segment's bytes after its last batch were not read as batches."""
        current, self.current = self.current, None
        return current is not None and current.size is not None and self.end < current.size
