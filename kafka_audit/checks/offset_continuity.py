"""Offsets across batches and segments of one partition.

A broker appends with strictly increasing offsets (UnifiedLog.append rejects "Out of order
offsets"; LogSegment never holds an offset below its base offset). In a topic that is not
compacted every offset is used: a skipped offset means lost data or a damaged copy. Compacted
topics (LogCleaner) legitimately leave gaps.
"""

from __future__ import annotations

from kafka_audit.checks.batch_summary import BatchSummary
from kafka_audit.findings import Finding, make_finding


class OffsetContinuity:
    """Fed one partition's batches in log order (segment base offset, then file position);
    :meth:`observe` returns the findings each batch causes. Corrupt batches are skipped."""

    def __init__(self, compacted: bool) -> None:
        self.compacted = compacted
        self.previous: BatchSummary | None = None

    def observe(self, batch: BatchSummary) -> list[Finding]:
        if not batch.valid:
            return []
        found: list[Finding] = []
        tp = f"{batch.topic}-{batch.partition}"
        where = dict(topic=batch.topic, partition=batch.partition, segment=batch.segment, batch=batch)
        if batch.base_offset < batch.segment_base_offset:
            found.append(
                make_finding(
                    "offset_overlap",
                    f"Batch base offset {batch.base_offset} in {tp} is below the base offset "
                    f"{batch.segment_base_offset} of its segment",
                    details={"segment_base_offset": batch.segment_base_offset},
                    **where,
                )
            )
        previous = self.previous
        if previous is not None:
            if batch.base_offset <= previous.last_offset:
                found.append(
                    make_finding(
                        "offset_overlap",
                        f"Out of order offsets in {tp}: batch base offset {batch.base_offset} is not above "
                        f"the previous batch's last offset {previous.last_offset}",
                        details={"previous_last_offset": previous.last_offset, "previous_segment": previous.segment},
                        **where,
                    )
                )
            elif not self.compacted and batch.base_offset > previous.last_offset + 1:
                first_missing = previous.last_offset + 1
                found.append(
                    make_finding(
                        "offset_gap",
                        f"Offsets {first_missing} to {batch.base_offset - 1} are missing in {tp}",
                        details={"missing_offsets": [first_missing, batch.base_offset - 1]},
                        **where,
                    )
                )
        if previous is None or batch.last_offset > previous.last_offset:
            self.previous = batch
        return found
