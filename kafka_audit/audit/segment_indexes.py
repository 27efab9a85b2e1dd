"""A segment's sidecar files checked against its batches in the partition step: the offset and
time indexes (``DumpLogSegments --verify-index-only``), and how a sidecar that cannot be read as
its format says becomes a finding of that sidecar's check."""

from __future__ import annotations

from kafka_audit.log.offset_index import read_offset_index
from kafka_audit.log.time_index import read_time_index
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.findings import Finding, make_finding
from kafka_audit.rules.index_check import SegmentBatches, verify_offset_index, verify_time_index


def verify_indexes(
    index: str | None, time_index: str | None, base_offset: int, where: dict, batches: list[BatchSummary]
) -> list[Finding]:
    """A live segment's ``.index`` and ``.timeindex`` against its batches (DumpLogSegments
    ``--verify-index-only``); ``where`` holds topic, partition and segment."""
    segment = where["segment"]
    log = SegmentBatches.of(batches)
    found: list[Finding] = []
    for path, extension, reader, verify in (
        (index, ".index", read_offset_index, verify_offset_index),
        (time_index, ".timeindex", read_time_index, verify_time_index),
    ):
        if not path:
            continue
        # An entry per batch at most (the time index has one more, written when the segment
        # closes: LogSegment.onBecomeInactiveSegment).
        parsed = reader(path, base_offset, len(batches) + 1)
        display = sidecar_display(segment, extension)
        found.extend(verify(parsed.entries, log, where, display))
        found.extend(sidecar_problem_findings(parsed.problems, where, display))
    return found


def sidecar_display(segment: str, extension: str) -> str:
    """The display path of a live segment's sidecar: ``t-0/0000.log`` -> ``t-0/0000.index``."""
    return segment.removesuffix(".log") + extension


def sidecar_problem_findings(problems, where: dict, display: str) -> list[Finding]:
    """A sidecar file that cannot be read as its format says: a finding of that sidecar's check
    (``index_mismatch``, ``snapshot_mismatch``, ``txn_index_mismatch``), ``position`` being the
    byte position in the sidecar file named in ``details.index_file``."""
    return [
        make_finding(p.check, p.message, **where, position=p.position, details={"index_file": display, **p.details})
        for p in problems
    ]
