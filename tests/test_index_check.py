"""``.index``/``.timeindex`` verification against the log's batches (DumpLogSegments
``--verify-index-only`` semantics), on hand-built summaries."""

from __future__ import annotations

from kafka_audit.log.index_files import OffsetPosition, TimestampOffset
from kafka_audit.rules.batch_summary import NO_CONTROL_TYPE, BatchSummary
from kafka_audit.rules.partition.index_check import MAX_FINDINGS_PER_INDEX, SegmentBatches, verify_offset_index, verify_time_index

WHERE = {"topic": "t", "partition": 0, "segment": "t-0/00000000000000000000.log"}


def batches(count: int, records: int = 2, size: int = 100) -> list[BatchSummary]:
    return [
        BatchSummary("t", 0, WHERE["segment"], 0, i * size, i * records, i * records + records - 1, 2, True,
                     -1, -1, -1, -1, False, False, NO_CONTROL_TYPE, -1, 1000 + i, records, size)
        for i in range(count)
    ]


def test_entries_that_agree_with_the_log_give_no_finding():
    log = SegmentBatches.of(batches(10))
    entries = [OffsetPosition(2 * i + 1, 100 * i) for i in range(1, 10, 3)]
    assert verify_offset_index(entries, log, WHERE, "t-0/00000000000000000000.index") == []


def test_an_entry_pointing_between_batches_is_a_mismatch():
    log = SegmentBatches.of(batches(10))
    (finding,) = verify_offset_index([OffsetPosition(3, 101)], log, WHERE, "x.index")
    assert finding.check == "index_mismatch" and finding.position == 101 and finding.offset == 3
    assert finding.details["entry"] == 0 and "no batch starts" in finding.message
    # No batch starts there; offset 3 lies in the second batch (max timestamp 1001).
    assert finding.timestamp == 1001 and finding.time == "1970-01-01T00:00:01.001Z"


def test_a_time_index_entry_outside_the_log_carries_its_own_time():
    log = SegmentBatches.of(batches(2))
    (finding,) = verify_time_index([TimestampOffset(5000, 40)], log, WHERE, "x.timeindex")
    assert "in no batch" in finding.message and finding.timestamp == 5000


def test_mismatches_are_listed_up_to_a_cap_then_counted():
    log = SegmentBatches.of(batches(300))
    wrong = [OffsetPosition(2 * i + 1, 100 * i + 7) for i in range(1, 251)]
    found = verify_offset_index(wrong, log, WHERE, "x.index")
    assert len(found) == MAX_FINDINGS_PER_INDEX + 1
    assert found[-1].details["more_entries"] == 250 - MAX_FINDINGS_PER_INDEX
    assert all(f.check == "index_mismatch" for f in found)
