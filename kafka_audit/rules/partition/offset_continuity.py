"""Offsets across batches and segments of one partition.

A broker appends with strictly increasing offsets (UnifiedLog.append rejects "Out of order
offsets"; LogSegment never holds an offset below its base offset). In a topic that is not
compacted every offset is used: a skipped offset means lost data or a damaged copy. Compacted
topics (LogCleaner) legitimately leave gaps.
"""

from __future__ import annotations

from typing import Any

from kafka_audit.check_ids import CheckId
from kafka_audit.record.record_batch import MAGIC_VALUE_V2
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.findings import Finding, make_finding, partition_label

_NONE: list[Finding] = []  # never appended to: what observe returns for a batch that follows


class OffsetContinuity:
    """Fed one partition's batches in log order (segment base offset, then file position);
    :meth:`observe` returns the findings each batch causes.

    Corrupt batches (bad CRC, records that cannot be read) cause no finding here and do not
    move the offset order on, but the offsets their header names are not *missing*: the batch
    is still in the segment (until Kafka's log recovery truncates there), and its own finding
    says what is wrong with it. So they only explain a gap between the valid batches around
    them. A corrupt v0/v1 wrapper names its last offset only (its inner set is unread).
    """

    def __init__(self, compacted: bool) -> None:
        self.compacted = compacted
        self.previous: BatchSummary | None = None
        # (first offset or None for "from the gap's start", last offset) of corrupt batches
        # seen since the previous valid batch.
        self.unreadable: list[tuple[int | None, int]] = []

    def observe(self, batch: BatchSummary) -> list[Finding]:
        """The findings ``batch`` causes (an empty sequence for most)."""
        previous = self.previous
        if batch.valid and previous is not None and not self.unreadable:
            # The common case, decided without building anything: the batch follows the previous
            # one at the next offset, inside its segment (no overlap, no gap, nothing to explain).
            base_offset = batch.base_offset
            if base_offset == previous.last_offset + 1 and base_offset >= batch.segment_base_offset:
                if batch.last_offset > previous.last_offset:
                    self.previous = batch
                return _NONE
        return self.judge(batch)

    def judge(self, batch: BatchSummary) -> list[Finding]:
        """:meth:`observe` without its shortcut for a batch that follows the previous one."""
        if not batch.valid:
            if batch.magic >= MAGIC_VALUE_V2:
                if batch.last_offset >= batch.base_offset:
                    self.unreadable.append((batch.base_offset, batch.last_offset))
            else:
                self.unreadable.append((None, batch.last_offset))
            return []
        unreadable, self.unreadable = self.unreadable, []
        found: list[Finding] = []
        tp = partition_label(batch.topic, batch.partition)
        where: dict[str, Any] = {"topic": batch.topic, "partition": batch.partition, "segment": batch.segment, "batch": batch}
        if batch.base_offset < batch.segment_base_offset:
            found.append(
                make_finding(
                    CheckId.OFFSET_OVERLAP,
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
                        CheckId.OFFSET_OVERLAP,
                        f"Out of order offsets in {tp}: batch base offset {batch.base_offset} is not above "
                        f"the previous batch's last offset {previous.last_offset}",
                        details={"previous_last_offset": previous.last_offset, "previous_segment": previous.segment},
                        **where,
                    )
                )
            elif not self.compacted and batch.base_offset > previous.last_offset + 1:
                for first_missing, last_missing in _uncovered(
                    previous.last_offset + 1, batch.base_offset - 1, unreadable
                ):
                    found.append(
                        make_finding(
                            CheckId.OFFSET_GAP,
                            f"Offsets {first_missing} to {last_missing} are missing in {tp}",
                            details={"missing_offsets": [first_missing, last_missing]},
                            **where,
                        )
                    )
        if previous is None or batch.last_offset > previous.last_offset:
            self.previous = batch
        return found


def _uncovered(first: int, last: int, covers: list[tuple[int | None, int]]) -> list[tuple[int, int]]:
    """The sub-ranges of ``[first, last]`` that no ``(low, high)`` of ``covers`` holds
    (``low`` None: from wherever the range still starts)."""
    out: list[tuple[int, int]] = []
    cursor = first
    for from_offset, high in sorted(covers, key=lambda c: c[1]):
        if high < cursor:
            continue
        low = cursor if from_offset is None else from_offset
        if low > cursor:
            out.append((cursor, min(low - 1, last)))
        cursor = max(cursor, high + 1)
        if cursor > last:
            return out
    out.append((cursor, last))
    return out
