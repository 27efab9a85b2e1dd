"""Missing data is never silent (SPEC section 2, ``missing_segment``): sidecars whose segment file
is absent, and checkpoints that name offsets the local segments do not hold.

Kafka writes a ``log-start-offset-checkpoint`` entry only for a log whose start is above its first
segment's base offset (``LogManager.checkpointLogStartOffsetsInDir``), and the recovery point is
at most the log end offset (``UnifiedLog.flush`` moves it to what was flushed). An entry below the
first local segment, or a recovery point above the log end, names data that is not here. A
checkpoint written after the newest segment was last modified is what a copy of a running broker
looks like (the checkpoint caught up with a deletion or an append the copied segments do not
show): then the finding is info.
"""

from __future__ import annotations

from typing import Any

from kafka_audit.log.log_names import LOG_START_OFFSET_CHECKPOINT as LOG_START
from kafka_audit.log.log_names import RECOVERY_POINT_CHECKPOINT as RECOVERY_POINT
from kafka_audit.rules.catalogue import MISSING_SEGMENT_LIVE, CheckId
from kafka_audit.rules.findings import Finding, make_finding


def orphan_sidecar_finding(topic: str, partition: int, folder: str, base_offset: int, names: list[str]) -> Finding:
    """An ``.index``/``.timeindex``/``.txnindex`` of ``base_offset`` whose ``.log`` is absent; the
    finding's file is the first of them (one that exists, for the reports that link to it)."""
    log = f"{base_offset:020d}.log"
    return make_finding(
        CheckId.MISSING_SEGMENT,
        f"{folder}: {', '.join(names)} found but not {log}: the segment at offset {base_offset} is missing "
        "(not copied, or deleted)",
        topic=topic,
        partition=partition,
        segment=f"{folder}/{names[0]}",
        offset=base_offset,
        details={"base_offset": base_offset, "files": list(names)},
    )


def checkpoint_findings(
    topic: str,
    partition: int,
    *,
    log_start: int | None,
    first_local_offset: int | None,
    recovery_point: int | None,
    log_end_offset: int | None,
    written_after: dict[str, bool],
) -> list[Finding]:
    """The checkpoint cases of a partition without tiered segments. ``written_after``: per
    checkpoint file, whether it was written after the newest segment was last modified."""
    found = []
    if log_start is not None and first_local_offset is not None and log_start < first_local_offset:
        found.append(_checkpoint_finding(
            topic, partition, LOG_START, log_start, written_after.get(LOG_START, False),
            f"the log starts at {log_start} but the first local segment at {first_local_offset}: "
            f"offsets {log_start} to {first_local_offset - 1} are in no segment here",
            {"first_segment_offset": first_local_offset},
        ))
    if recovery_point is not None and log_end_offset is not None and recovery_point > log_end_offset:
        found.append(_checkpoint_finding(
            topic, partition, RECOVERY_POINT, recovery_point, written_after.get(RECOVERY_POINT, False),
            f"the broker had flushed up to offset {recovery_point} but the log ends at {log_end_offset}: "
            f"offsets {log_end_offset} to {recovery_point - 1} are in no segment here",
            {"log_end_offset": log_end_offset},
        ))
    return found


def _checkpoint_finding(
    topic: str, partition: int, checkpoint: str, offset: int, live: bool, what: str, extra: dict[str, Any]
) -> Finding:
    copy = " (the checkpoint was written after the newest segment: a copy of a running broker)" if live else ""
    return make_finding(
        CheckId.MISSING_SEGMENT,
        f"{checkpoint}: {what}{copy}",
        topic=topic,
        partition=partition,
        offset=offset,
        details={"checkpoint": checkpoint, "offset": offset, **extra},
        spec=MISSING_SEGMENT_LIVE if live else None,
    )
