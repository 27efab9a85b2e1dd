"""The record and batch validation checks (SPEC section 2, "Record and batch validation"),
each triggered at a known place in a log written with the fixture writer, next to a near-miss
that must not trigger it, through the whole one-process audit (``audit_in_process``).

The rules follow Kafka's ``LogValidator`` (validateBatch, validateRecord, validateKey,
validateTimestamp), ``UnifiedLog.analyzeAndValidateRecords`` (max.message.bytes) and the record
readers (``DefaultRecordBatch``, ``AbstractLegacyRecordBatch``, ``FileLogInputStream``).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import replace
from pathlib import Path

import pytest

from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.engines.local import audit_in_process
from kafka_audit.log.log_dir import discover
from kafka_audit.record.record_batch import ControlRecordType
from kafka_audit.rules.validation.log_validator import ALWAYS_COMPACTED_TOPICS, DEFAULT_MAX_MESSAGE_BYTES, ValidationConfig
from tests.support.writer import (
    LOG_APPEND_TIME,
    TS_BASE,
    BatchSpec,
    ControlSpec,
    Faults,
    LogDirWriter,
    Producer,
    RecordSpec,
    build_batch,
    control_record,
)

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
HOUR = 3_600_000
CORRUPT = (2, "CORRUPT_MESSAGE", "retriable")
INVALID_RECORD = (87, "INVALID_RECORD", "abortable")
INVALID_TIMESTAMP = (32, "INVALID_TIMESTAMP", "abortable")


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def keyed(start: int, count: int, size: int = 30) -> tuple[RecordSpec, ...]:
    return tuple(
        RecordSpec(key=b"key-%05d" % (start + i), value=b"value %05d " % (start + i) + b"x" * size) for i in range(count)
    )


def keyless(start: int, count: int, size: int = 30) -> tuple[RecordSpec, ...]:
    return tuple(RecordSpec(key=None, value=b"value %05d " % (start + i) + b"x" * size) for i in range(count))


def fill(w, batches: int = 1, per_batch: int = 3, **fields):
    results = []
    for _ in range(batches):
        results.append(w.append(BatchSpec(records=keyed(w.next_offset, per_batch), **fields)))
    return results


class Log:
    """One log dir under ``tmp_path`` with a partition writer per topic."""

    def __init__(self, tmp_path: Path, **defaults) -> None:
        self.root = tmp_path / "logs"
        self.dir = LogDirWriter(self.root, snapshots=False, **defaults)

    def partition(self, topic: str = "t", partition: int = 0, **options):
        return self.dir.partition(topic, partition, **options)

    def scan(
        self,
        *,
        compacted: tuple[str, ...] = (),
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        before: int | None = None,
        after: int | None = None,
        reference_time: int | None = None,
    ) -> list:
        if not self.dir.partitions or not all(w.closed for w in self.dir.partitions.values()):
            self.dir.close()
        config = ValidationConfig(
            compacted_topics=frozenset(compacted) | ALWAYS_COMPACTED_TOPICS,
            max_message_bytes=max_message_bytes,
            timestamp_before_max_ms=before,
            timestamp_after_max_ms=after,
        )
        options = ScanOptions(validation=config, reference_time=reference_time)
        return audit_in_process(discover([str(self.root)]), options).findings


def of(findings, check: str) -> list:
    return [f for f in findings if f.check == check]


def summary(findings) -> list[tuple]:
    return [(f.check, f.offset, f.record_index) for f in findings]


def assert_error(finding, expected: tuple) -> None:
    assert (finding.error_code, finding.error_name, finding.client_outcome) == expected
    assert finding.severity == "error"


def segment_name(w, base: int = 0, suffix: str = "") -> str:
    return f"{w.name}/{base:020d}.log{suffix}"


# ---------------------------------------------------------------------------------------------
# crc_mismatch
# ---------------------------------------------------------------------------------------------


def test_crc_mismatch_v2_batch_and_walk_goes_on(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 2)
    bad = w.append(BatchSpec(records=keyed(w.next_offset, 4), faults=Faults(bad_crc=True)))
    after = fill(w, 1)[0]
    findings = log.scan()
    # Only the corrupt batch is reported: the batch after it is still read (a bad CRC is skipped
    # by its size), and the offsets the corrupt batch holds are not "missing" (no offset_gap).
    assert summary(findings) == [("crc_mismatch", bad.base_offset, None)]
    (f,) = findings
    assert_error(f, CORRUPT)
    assert (f.segment, f.position) == (segment_name(w), bad.position)
    assert (f.batch_base_offset, f.batch_last_offset) == (bad.base_offset, bad.last_offset)
    assert after.position == bad.position + bad.size


def test_an_oversized_batch_with_a_bad_crc_is_message_too_large(tmp_path):
    # UnifiedLog.analyzeAndValidateRecords checks batchSize > config.maxMessageSize before
    # batch.isValid: the broker answers MESSAGE_TOO_LARGE, not CORRUPT_MESSAGE.
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 1)
    bad = w.append(BatchSpec(records=keyed(w.next_offset, 4, size=200), faults=Faults(bad_crc=True)))
    fill(w, 1)
    findings = log.scan(max_message_bytes=bad.size - 1)
    assert summary(findings) == [("record_too_large", bad.base_offset, None)]
    assert (findings[0].error_code, findings[0].error_name) == (10, "MESSAGE_TOO_LARGE")
    # near miss: at the limit, the CRC is what the broker rejects
    assert summary(log.scan(max_message_bytes=bad.size)) == [("crc_mismatch", bad.base_offset, None)]


def test_offset_gap_beside_a_corrupt_batch_is_still_reported(tmp_path):
    # The corrupt batch explains its own offsets, not the ones before it.
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 1)  # 0..2
    bad = w.append(BatchSpec(records=keyed(6, 2), base_offset=6, faults=Faults(bad_crc=True)))  # 6..7
    after = w.append(BatchSpec(records=keyed(8, 2)))
    findings = log.scan()
    assert summary(findings) == [("crc_mismatch", bad.base_offset, None), ("offset_gap", after.base_offset, None)]
    assert findings[1].details["missing_offsets"] == [3, 5]
    assert (bad.base_offset, after.base_offset) == (6, 8)


def test_crc_mismatch_near_miss_same_batches_intact(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 2)
    w.append(BatchSpec(records=keyed(w.next_offset, 4)))
    fill(w, 1)
    assert log.scan() == []


def test_crc_mismatch_v1_inner_message_is_reported_at_its_index(tmp_path):
    # LogValidator.validateRecord: record.ensureValid() on an inner message of a compressed v0/v1
    # set throws CorruptRecordException. SPEC section 2: for v0/v1 the culprit is the inner
    # message, at its own offset and index (record_index), as the details' ``record`` says.
    log = Log(tmp_path)
    w = log.partition()
    w.append(BatchSpec(records=keyed(0, 2), magic=1))
    recs = list(keyed(2, 4))
    recs[2] = replace(recs[2], bad_crc=True)
    r = w.append(BatchSpec(records=tuple(recs), magic=1, codec=GZIP))
    findings = log.scan()
    assert summary(findings) == [("crc_mismatch", r.base_offset + 2, 2)]
    (f,) = findings
    assert f.details["record"] == 2
    assert f.position == r.position
    assert (f.batch_base_offset, f.batch_last_offset) == (r.base_offset, r.last_offset)
    assert (f.producer_id, f.producer_epoch, f.sequence) == (None, None, None)


def test_crc_mismatch_v0_lone_message(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    w.append(BatchSpec(records=keyed(0, 3), magic=0))
    r = w.append(BatchSpec(records=keyed(3, 1), magic=0, faults=Faults(bad_crc=True)))
    w.append(BatchSpec(records=keyed(4, 2), magic=0))
    findings = log.scan()
    assert summary(findings) == [("crc_mismatch", 3, None)]
    assert findings[0].position == r.position


# ---------------------------------------------------------------------------------------------
# truncated_batch, invalid_batch_size, unknown_magic
# ---------------------------------------------------------------------------------------------


def test_truncated_last_batch_of_the_newest_segment_is_an_incomplete_tail(tmp_path):
    # SPEC incomplete_tail: LogSegment.recover truncates it; an older segment's is truncated_batch
    # (tests/test_live.py).
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 3)
    r = w.append(BatchSpec(records=keyed(w.next_offset, 3), faults=Faults(truncate=7)))
    findings = log.scan()
    assert summary(findings) == [("incomplete_tail", r.base_offset, None)]
    assert (findings[0].severity, findings[0].error_name) == ("warning", None)
    assert findings[0].position == r.position


@pytest.mark.parametrize(("size", "check"), [(10_000, "incomplete_tail"), (2_000_000, "truncated_batch")])
def test_size_field_past_the_end_is_truncation(tmp_path, size, check):
    # In the newest segment a size a broker could write is a batch not yet complete (SPEC
    # incomplete_tail); one above max.message.bytes is corruption (FileLogInputStream.nextBatch).
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 2)
    r = w.append(BatchSpec(records=keyed(w.next_offset, 2), faults=Faults(size=size)))
    findings = log.scan()
    assert summary(findings) == [(check, r.base_offset, None)]
    assert findings[0].position == r.position


def test_truncation_near_miss_file_ends_exactly_at_a_batch_end(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 4)
    assert log.scan() == []
    assert (log.root / segment_name(w)).stat().st_size == w.active.size


@pytest.mark.parametrize(
    ("magic", "size", "records"),
    [
        (0, 13, keyed(0, 1)),  # below LegacyRecord's 14-byte v0 overhead
        (1, 21, keyed(0, 1)),  # below the 22-byte v1 overhead
        (2, 48, keyed(0, 2)),  # below the 49 bytes after the length field of a v2 header
    ],
)
def test_invalid_batch_size(tmp_path, magic, size, records):
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 2, magic=magic)
    r = w.append(BatchSpec(records=records, magic=magic, faults=Faults(size=size)))
    findings = log.scan()
    assert summary(findings) == [("invalid_batch_size", r.base_offset, None)]
    assert_error(findings[0], CORRUPT)
    assert findings[0].position == r.position


@pytest.mark.parametrize("magic", [0, 1])
def test_invalid_batch_size_near_miss_message_exactly_at_the_minimum(tmp_path, magic):
    # A null key and a null value: the smallest message a format allows (14 bytes v0, 22 bytes v1).
    log = Log(tmp_path)
    w = log.partition()
    r = w.append(BatchSpec(records=(RecordSpec(key=None, value=None),), magic=magic))
    fill(w, 1, magic=magic)
    assert r.size - 12 == (14 if magic == 0 else 22)
    assert log.scan() == []


def test_unknown_magic_is_skipped_by_its_size(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 2)
    r = w.append(BatchSpec(records=keyed(w.next_offset, 2), faults=Faults(magic=3)))
    after = fill(w, 1)[0]
    findings = log.scan()
    # A batch of unknown format has no offset range to read: the batch after it, read again
    # past its size, shows those offsets as a gap.
    assert summary(findings) == [("unknown_magic", r.base_offset, None), ("offset_gap", after.base_offset, None)]
    assert_error(findings[0], CORRUPT)
    assert findings[0].details["magic"] == 3
    assert findings[0].position == r.position
    assert findings[1].position == after.position == r.position + r.size


def test_unknown_magic_near_miss_every_known_magic_in_one_segment(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    for magic in (0, 1, 2):
        w.append(BatchSpec(records=keyed(w.next_offset, 2), magic=magic))
        w.append(BatchSpec(records=keyed(w.next_offset, 3), magic=magic, codec=GZIP))
    assert log.scan() == []


# ---------------------------------------------------------------------------------------------
# decompression_failed
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_id(tmp_path, codec_id):
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 1)
    r = w.append(BatchSpec(records=keyed(w.next_offset, 3), codec=GZIP, faults=Faults(codec_id=codec_id)))
    fill(w, 1)
    findings = log.scan()
    assert summary(findings) == [("decompression_failed", r.base_offset, None)]
    assert_error(findings[0], CORRUPT)


@pytest.mark.parametrize("magic", [0, 1, 2])
@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_payload_that_does_not_decompress(tmp_path, magic, codec):
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 1, magic=magic)
    r = w.append(BatchSpec(records=keyed(w.next_offset, 3), magic=magic, codec=codec, faults=Faults(payload=b"\x00garbage!" * 3)))
    fill(w, 1, magic=magic)
    findings = log.scan()
    assert [f.check for f in findings] == ["decompression_failed"]
    assert findings[0].position == r.position
    # v2: the batch's base offset; v0/v1: the wrapper's own offset (its inner set cannot be read)
    assert findings[0].offset == (r.base_offset if magic == 2 else r.last_offset)


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_decompression_near_miss_every_codec(tmp_path, magic):
    log = Log(tmp_path)
    w = log.partition()
    for codec in (NONE, GZIP, SNAPPY, LZ4, ZSTD):
        w.append(BatchSpec(records=keyed(w.next_offset, 4), magic=magic, codec=codec))
    assert log.scan() == []


# ---------------------------------------------------------------------------------------------
# inner_magic_mismatch
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("outer", "inner"), [(1, 0), (0, 1)])
def test_inner_magic_mismatch(tmp_path, outer, inner):
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 1, magic=outer)
    recs = list(keyed(w.next_offset, 4))
    recs[1] = replace(recs[1], magic=inner)
    recs[3] = replace(recs[3], magic=inner)
    r = w.append(BatchSpec(records=tuple(recs), magic=outer, codec=GZIP))
    findings = log.scan()
    assert summary(findings) == [
        ("inner_magic_mismatch", r.base_offset + 1, 1),
        ("inner_magic_mismatch", r.base_offset + 3, 3),
    ]
    for f in findings:
        assert_error(f, INVALID_RECORD)
        assert f.position == r.position
        assert (f.batch_base_offset, f.batch_last_offset) == (r.base_offset, r.last_offset)
        assert f.details["inner_magic"] == inner and f.details["outer_magic"] == outer


@pytest.mark.parametrize("magic", [0, 1])
def test_inner_magic_near_miss_wrapper_and_inner_messages_agree(tmp_path, magic):
    log = Log(tmp_path)
    w = log.partition()
    for codec in (GZIP, SNAPPY, LZ4):
        w.append(BatchSpec(records=keyed(w.next_offset, 3), magic=magic, codec=codec))
    assert log.scan() == []


# ---------------------------------------------------------------------------------------------
# missing_key_compacted and the --compacted-topic option
# ---------------------------------------------------------------------------------------------


def _keyless_records_log(tmp_path, topic: str = "users", codec: int = ZSTD):
    log = Log(tmp_path)
    w = log.partition(topic)
    fill(w, 1)
    recs = list(keyed(w.next_offset, 5))
    recs[1] = replace(recs[1], key=None)
    recs[3] = replace(recs[3], key=None)
    r = w.append(BatchSpec(records=tuple(recs), codec=codec))
    fill(w, 1)
    return log, w, r


def test_missing_key_in_compacted_topic_each_record_reported(tmp_path):
    log, w, r = _keyless_records_log(tmp_path)
    findings = log.scan(compacted=("users",))
    assert summary(findings) == [
        ("missing_key_compacted", r.base_offset + 1, 1),
        ("missing_key_compacted", r.base_offset + 3, 3),
    ]
    for f in findings:
        assert_error(f, INVALID_RECORD)
        assert f.message == "Compacted topic cannot accept message without key in topic partition users-0"
        assert (f.position, f.batch_base_offset, f.batch_last_offset) == (r.position, r.base_offset, r.last_offset)


def test_missing_key_option_other_direction_topic_not_compacted(tmp_path):
    log, _, _ = _keyless_records_log(tmp_path)
    assert log.scan() == []
    assert log.scan(compacted=("some-other-topic",)) == []


def test_missing_key_near_miss_every_record_has_a_key_tombstones_included(tmp_path):
    log = Log(tmp_path)
    w = log.partition("users")
    fill(w, 2)
    w.append(BatchSpec(records=(RecordSpec(key=b"k", value=None), RecordSpec(key=b"", value=b"empty key"))))
    assert log.scan(compacted=("users",)) == []


def test_consumer_offsets_is_always_compacted(tmp_path):
    log = Log(tmp_path)
    w = log.partition("__consumer_offsets", 3)
    r = w.append(BatchSpec(records=keyless(0, 1)))
    findings = log.scan()
    assert summary(findings) == [("missing_key_compacted", r.base_offset, 0)]


def test_missing_key_v1_wrapper_record_index_is_the_inner_index(tmp_path):
    log = Log(tmp_path)
    w = log.partition("users")
    w.append(BatchSpec(records=keyed(0, 2), magic=1))
    recs = list(keyed(2, 3))
    recs[2] = replace(recs[2], key=None)
    r = w.append(BatchSpec(records=tuple(recs), magic=1, codec=SNAPPY))
    (f,) = log.scan(compacted=("users",))
    assert (f.check, f.offset, f.record_index) == ("missing_key_compacted", 4, 2)
    # SPEC: for v0/v1 the "batch" is the wrapper message
    assert (f.position, f.batch_base_offset, f.batch_last_offset) == (r.position, 2, 4)
    assert (f.producer_id, f.producer_epoch, f.sequence) == (None, None, None)


# ---------------------------------------------------------------------------------------------
# non_monotonic_offsets
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", [GZIP, ZSTD])
def test_v2_offset_deltas_out_of_order_each_record_reported(tmp_path, codec):
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 1)
    recs = list(keyed(w.next_offset, 4))
    recs[1] = replace(recs[1], offset_delta=2)
    recs[2] = replace(recs[2], offset_delta=1)
    r = w.append(BatchSpec(records=tuple(recs), codec=codec, faults=Faults(last_offset_delta=3)))
    fill(w, 1)
    findings = log.scan()
    assert sorted(summary(findings), key=lambda t: t[2]) == [
        ("non_monotonic_offsets", r.base_offset + 2, 1),
        ("non_monotonic_offsets", r.base_offset + 1, 2),
    ]
    for f in findings:
        assert_error(f, INVALID_RECORD)
        assert f.position == r.position


def test_v2_offset_deltas_out_of_order_in_an_uncompressed_batch_are_a_warning(tmp_path):
    # LogValidator.assignOffsetsNonCompressed assigns an uncompressed batch's offsets in place
    # (setLastOffset) and never reads its records' deltas: the broker accepts the batch and
    # stores it as sent (probe offset-deltas-nonmonotonic: NONE). Not an error a producer saw.
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 1)
    recs = list(keyed(w.next_offset, 5))
    recs[2] = replace(recs[2], offset_delta=1)
    r = w.append(BatchSpec(records=tuple(recs)))
    fill(w, 1)
    findings = log.scan()
    assert summary(findings) == [("non_monotonic_offsets", r.base_offset + 1, 2)]
    (f,) = findings
    assert (f.severity, f.error_code, f.error_name, f.client_outcome) == ("warning", None, None, "none")


def test_last_offset_delta_disagrees_with_record_count(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 1)
    r = w.append(BatchSpec(records=keyed(w.next_offset, 3), faults=Faults(last_offset_delta=4)))
    fill(w, 1)
    findings = log.scan()
    assert summary(findings) == [("non_monotonic_offsets", r.base_offset, None)]
    assert findings[0].message == (
        f"Inconsistent batch offset range [{r.base_offset}, {r.base_offset + 4}] and count of records 3 "
        f"in topic partition t-0"
    )
    assert (findings[0].batch_base_offset, findings[0].batch_last_offset) == (r.base_offset, r.base_offset + 4)


def test_negative_last_offset_delta(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 1)
    r = w.append(BatchSpec(records=keyed(w.next_offset, 1), faults=Faults(last_offset_delta=-1)))
    findings = log.scan()
    # (the time index, written by LogSegment's rule from the bad header, is off as well)
    assert {f.check for f in findings} <= {"non_monotonic_offsets", "index_mismatch"}
    findings = of(findings, "non_monotonic_offsets")
    assert summary(findings) == [("non_monotonic_offsets", r.base_offset, None)]
    assert findings[0].message.startswith(f"Batch has an invalid offset range: [{r.base_offset}, {r.base_offset - 1}]")


def test_record_count_field_above_the_records_present(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 1)
    r = w.append(BatchSpec(records=keyed(w.next_offset, 3), faults=Faults(record_count=4, last_offset_delta=3)))
    fill(w, 1)
    findings = log.scan()
    # DefaultRecordBatch's iterator: "Incorrect declared batch size, premature EOF reached"
    # (InvalidRecordException, no record_errors): batch-level, the missing record in details.
    assert summary(findings) == [("non_monotonic_offsets", r.base_offset, None)]
    assert (findings[0].details["record_count"], findings[0].details["record"]) == (4, 3)


def test_v1_inner_relative_offsets_not_from_zero(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    w.append(BatchSpec(records=keyed(0, 2), magic=1))
    recs = [replace(rec, offset_delta=i + 1) for i, rec in enumerate(keyed(2, 3))]
    r = w.append(BatchSpec(records=tuple(recs), magic=1, codec=GZIP, faults=Faults(last_offset_delta=2)))
    findings = log.scan()
    assert summary(findings) == [("non_monotonic_offsets", 2 + i, i) for i in range(3)]
    assert all(f.position == r.position for f in findings)


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_v1_near_miss_inner_offsets_right(tmp_path, codec):
    log = Log(tmp_path)
    w = log.partition()
    w.append(BatchSpec(records=keyed(0, 2), magic=1))
    w.append(BatchSpec(records=keyed(2, 5), magic=1, codec=codec))
    w.append(BatchSpec(records=keyed(7, 4), magic=0, codec=codec))
    w.append(BatchSpec(records=keyed(11, 3), codec=codec))
    assert log.scan() == []


def test_v0_wrapper_inner_offsets_must_end_at_the_wrapper_offset(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    w.append(BatchSpec(records=keyed(0, 2), magic=0))
    recs = list(keyed(2, 3))
    recs[2] = replace(recs[2], offset_delta=1)  # inner absolute offsets 2, 3, 3 under wrapper offset 4
    r = w.append(BatchSpec(records=tuple(recs), magic=0, codec=GZIP, faults=Faults(last_offset_delta=2)))
    findings = log.scan()
    assert [(f.check, f.record_index) for f in findings] == [("non_monotonic_offsets", 2)]
    assert findings[0].position == r.position


# ---------------------------------------------------------------------------------------------
# invalid_control_batch
# ---------------------------------------------------------------------------------------------


def test_kraft_control_batch_of_several_records(tmp_path):
    """A Kafka 4 controller (kraft.version 1) writes LeaderChange, KRaftVersion and KRaftVoters as
    one control batch (KafkaRaftClient / RecordsSnapshotWriter); a malformed one among them is
    still reported at its index."""
    leader = ControlSpec(ControlRecordType.LEADER_CHANGE, value=b"\x00\x00\x00\x00\x00\x01")
    version = ControlSpec(ControlRecordType.KRAFT_VERSION, value=b"\x00\x00\x00\x01")
    voters = ControlSpec(ControlRecordType.KRAFT_VOTERS, value=b"\x00\x00\x00")
    log = Log(tmp_path / "well-formed")
    w = log.partition("__cluster_metadata")
    w.append(BatchSpec(control=leader, records=(control_record(leader), control_record(version), control_record(voters))))
    assert log.scan() == []
    log = Log(tmp_path / "malformed")
    w = log.partition("__cluster_metadata")
    bad = ControlSpec(ControlRecordType.KRAFT_VERSION, version=1, value=b"\x00\x00")
    batch = w.append(BatchSpec(control=leader, records=(control_record(leader), control_record(bad))))
    found = [(f.offset, f.record_index) for f in of(log.scan(), "invalid_control_batch")]
    assert found == [(batch.base_offset + 1, 1)]


def test_control_batch_malformations(tmp_path):
    log = Log(tmp_path)
    w = log.partition("__cluster_metadata")
    fill(w, 1, per_batch=1)
    # Two transaction markers in one batch: the one-record rule of markers (several KRaft control
    # records in one batch are normal: test_kraft_control_batch_of_several_records).
    commit = ControlSpec(ControlRecordType.COMMIT, coordinator_epoch=1)
    two = w.append(
        BatchSpec(control=commit, records=(control_record(commit), control_record(commit)), producer_id=6, producer_epoch=0, transactional=True)
    )
    version = w.append(BatchSpec(control=ControlSpec(ControlRecordType.LEADER_CHANGE, version=1, value=b"\x00\x00")))
    unknown = w.append(BatchSpec(control=ControlSpec(7, value=b"")))
    short = w.append(
        BatchSpec(control=ControlSpec(ControlRecordType.COMMIT, value=b"\x00\x00"), producer_id=5, producer_epoch=0, transactional=True)
    )
    no_key = w.append(BatchSpec(is_control=True, records=(RecordSpec(key=None, value=b"\x00\x00\x00\x00\x00\x00"),)))
    no_pid = w.append(BatchSpec(control=ControlSpec(ControlRecordType.ABORT, coordinator_epoch=1)))
    fill(w, 1, per_batch=1)
    found = [(f.offset, f.record_index) for f in of(log.scan(), "invalid_control_batch")]
    assert found == [
        (two.base_offset, None),
        (version.base_offset, 0),
        (unknown.base_offset, 0),
        (short.base_offset, 0),
        (no_key.base_offset, 0),
        (no_pid.base_offset, 0),
    ]
    for f in of(log.scan(), "invalid_control_batch"):
        assert_error(f, INVALID_RECORD)


def test_empty_control_batch_outside_a_compacted_topic(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 1)
    r = w.append(BatchSpec(is_control=True, records=()))
    fill(w, 1)
    findings = log.scan()
    # LogValidator.validateBatch checks the count (0: "Invalid reported count") before it looks
    # at the control bit: the batch is answered by the first rule it breaks.
    assert sorted(summary(findings)) == [("non_monotonic_offsets", r.base_offset, None)]


def test_control_near_miss_commit_marker_and_kraft_records(tmp_path):
    log = Log(tmp_path)
    w = log.partition("payments")
    p = Producer(4000, epoch=2, transactional=True, coordinator_epoch=7)
    p.begin()
    p.send(w, keyed(0, 3))
    p.commit()
    p.begin()
    p.send(w, keyed(3, 2))
    p.abort()
    k = log.partition("__cluster_metadata")
    for kind, value in (
        (ControlRecordType.KRAFT_VERSION, b"\x00\x00\x00\x01"),
        (ControlRecordType.KRAFT_VOTERS, b"\x00\x00\x01\x00\x00\x00\x01"),
        (ControlRecordType.LEADER_CHANGE, b"\x00\x00\x00\x00\x00\x01\x00\x01"),
        (ControlRecordType.SNAPSHOT_HEADER, b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"),
        (ControlRecordType.SNAPSHOT_FOOTER, b"\x00\x00"),
    ):
        k.append(BatchSpec(control=ControlSpec(kind, value=value)))
    k.append(BatchSpec(records=keyless(0, 2)))
    assert log.scan() == []


def test_a_control_batch_without_the_transactional_bit_is_a_clients(tmp_path):
    # LogValidator.validateBatch: "Clients are not allowed to write control records" (origin
    # CLIENT). The broker writes transaction markers transactional (MemoryRecords.
    # withEndTransactionMarker) and KRaft control records only in __cluster_metadata, so any other
    # control batch can only have come from a client (probe producer-control-batch: 87).
    log = Log(tmp_path)
    w = log.partition("orders")
    fill(w, 1)
    commit = w.append(BatchSpec(control=ControlSpec(ControlRecordType.COMMIT), producer_id=43, producer_epoch=0))
    leader = w.append(BatchSpec(control=ControlSpec(ControlRecordType.LEADER_CHANGE, value=b"\x00\x00")))
    fill(w, 1)
    k = log.partition("__cluster_metadata")
    k.append(BatchSpec(control=ControlSpec(ControlRecordType.LEADER_CHANGE, value=b"\x00\x00")))
    findings = log.scan()
    assert summary(findings) == [
        ("invalid_control_batch", commit.base_offset, None),
        ("invalid_control_batch", leader.base_offset, None),
    ]
    for f in findings:
        assert_error(f, INVALID_RECORD)
        assert f.message == "Clients are not allowed to write control records in topic partition orders-0"


# ---------------------------------------------------------------------------------------------
# invalid_producer_fields
# ---------------------------------------------------------------------------------------------


def test_invalid_producer_fields(tmp_path):
    # LogValidator.validateBatch (Kafka 3.6): only "batch.hasProducerId() && batch.baseSequence() < 0"
    # is rejected; a transactional batch with producer id -1 and a producer id with epoch -1 are
    # accepted (probes pid-seq-minus1: 87; the others answered NONE).
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 1)
    w.append(BatchSpec(records=keyed(w.next_offset, 2), transactional=True))
    no_seq = w.append(BatchSpec(records=keyed(w.next_offset, 2), producer_id=70, producer_epoch=0, base_sequence=-1))
    w.append(BatchSpec(records=keyed(w.next_offset, 2), producer_id=71, producer_epoch=-1, base_sequence=0))
    fill(w, 1)
    findings = of(log.scan(), "invalid_producer_fields")
    assert [f.offset for f in findings] == [no_seq.base_offset]
    (f,) = findings
    assert_error(f, INVALID_RECORD)
    assert f.record_index is None
    assert f.message == "Invalid sequence number -1 in record batch with producerId 70 in topic partition t-0"
    assert (f.producer_id, f.producer_epoch, f.sequence) == (70, 0, -1)


@pytest.mark.parametrize(("epoch", "sequence"), [(-1, -1), (-1, 0)])
def test_producer_fields_near_miss_non_idempotent_batches(tmp_path, epoch, sequence):
    # Producer id -1 with the epoch/sequence a broker's own writers (group coordinator,
    # MemoryRecords.withRecords) leave in the header.
    log = Log(tmp_path)
    w = log.partition()
    for codec in (NONE, LZ4):
        w.append(BatchSpec(records=keyed(w.next_offset, 3), codec=codec, producer_id=-1, producer_epoch=epoch, base_sequence=sequence))
    assert log.scan() == []


# ---------------------------------------------------------------------------------------------
# timestamp_out_of_range: bounds, each option in both directions, reference time
# ---------------------------------------------------------------------------------------------


REF = TS_BASE + 10 * HOUR


def _timestamp_log(tmp_path, stamps: list[int], **fields):
    log = Log(tmp_path)
    w = log.partition()
    r = w.append(BatchSpec(records=tuple(replace(rec, timestamp=ts) for rec, ts in zip(keyed(0, len(stamps)), stamps)), **fields))
    return log, w, r


def test_timestamps_exactly_at_the_bounds_pass(tmp_path):
    log, _, _ = _timestamp_log(tmp_path, [REF - 2 * HOUR, REF, REF + HOUR])
    assert log.scan(before=2 * HOUR, after=HOUR, reference_time=REF) == []


def test_timestamps_one_ms_outside_each_bound(tmp_path):
    # the records exactly at a bound (indexes 3 and 4) pass even in a batch that is looked at closely
    log, w, r = _timestamp_log(tmp_path, [REF - 2 * HOUR - 1, REF, REF + HOUR + 1, REF - 2 * HOUR, REF + HOUR])
    findings = log.scan(before=2 * HOUR, after=HOUR, reference_time=REF)
    assert summary(findings) == [("timestamp_out_of_range", 0, 0), ("timestamp_out_of_range", 2, 2)]
    for f, ts in zip(findings, (REF - 2 * HOUR - 1, REF + HOUR + 1)):
        assert_error(f, INVALID_TIMESTAMP)
        assert f.details["timestamp"] == ts and f.details["reference_time"] == REF
        assert (f.position, f.batch_base_offset, f.batch_last_offset) == (r.position, 0, 4)
    assert findings[0].message == (
        f"Timestamp {REF - 2 * HOUR - 1} of message with offset 0 is out of range. The timestamp should be "
        f"within [{REF - 2 * HOUR}, {REF + HOUR}]"
    )


def test_timestamp_before_max_ms_in_both_directions(tmp_path):
    log, _, _ = _timestamp_log(tmp_path, [REF - 5 * HOUR])
    assert summary(log.scan(before=4 * HOUR, reference_time=REF)) == [("timestamp_out_of_range", 0, 0)]
    assert log.scan(before=5 * HOUR, reference_time=REF) == []
    assert log.scan(after=0, reference_time=REF) == []  # only the other bound set
    assert log.scan(reference_time=REF) == []  # both off: the broker default


def test_timestamp_after_max_ms_in_both_directions(tmp_path):
    log, _, _ = _timestamp_log(tmp_path, [REF + 5 * HOUR])
    assert summary(log.scan(after=4 * HOUR, reference_time=REF)) == [("timestamp_out_of_range", 0, 0)]
    assert log.scan(after=5 * HOUR, reference_time=REF) == []
    assert log.scan(before=0, reference_time=REF) == []
    assert log.scan(reference_time=REF) == []


def test_reference_time_defaults_to_the_segment_mtime(tmp_path):
    log, w, _ = _timestamp_log(tmp_path, [TS_BASE])
    log.dir.close()
    segment = log.root / segment_name(w)
    # mtime 3 h after the record: too old for a 2 h window unless an explicit reference is given
    os.utime(segment, ns=((TS_BASE + 3 * HOUR) * 1_000_000,) * 2)
    (f,) = log.scan(before=2 * HOUR)
    assert f.check == "timestamp_out_of_range" and f.details["reference_time"] == TS_BASE + 3 * HOUR
    assert log.scan(before=2 * HOUR, reference_time=TS_BASE + HOUR) == []
    # and the other way round: an mtime that passes, an explicit reference that does not
    os.utime(segment, ns=((TS_BASE + HOUR) * 1_000_000,) * 2)
    assert log.scan(before=2 * HOUR) == []
    (f,) = log.scan(before=2 * HOUR, reference_time=TS_BASE + 3 * HOUR)
    assert f.details["reference_time"] == TS_BASE + 3 * HOUR


def test_log_append_time_batches_are_not_checked(tmp_path):
    log, _, _ = _timestamp_log(tmp_path, [REF - 100 * HOUR], timestamp_type=LOG_APPEND_TIME, log_append_time=REF)
    assert log.scan(before=HOUR, after=HOUR, reference_time=REF) == []


def test_v1_inner_create_time_timestamps_are_checked_per_record(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    stamps = [REF, REF - 5 * HOUR, REF, REF - 6 * HOUR]
    recs = tuple(replace(rec, timestamp=ts) for rec, ts in zip(keyed(0, 4), stamps))
    r = w.append(BatchSpec(records=recs, magic=1, codec=LZ4))
    findings = log.scan(before=HOUR, reference_time=REF)
    assert summary(findings) == [("timestamp_out_of_range", 1, 1), ("timestamp_out_of_range", 3, 3)]
    assert all(f.position == r.position for f in findings)
    # under a LOG_APPEND_TIME wrapper the producer's inner timestamps are not the record's time
    log2 = Log(tmp_path / "lat")
    w2 = log2.partition()
    w2.append(BatchSpec(records=recs, magic=1, codec=LZ4, timestamp_type=LOG_APPEND_TIME, log_append_time=REF))
    assert log2.scan(before=HOUR, reference_time=REF) == []


# ---------------------------------------------------------------------------------------------
# invalid_timestamp_type
# ---------------------------------------------------------------------------------------------


def test_timestamp_type_bit_in_v0_messages(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    w.append(BatchSpec(records=keyed(0, 1), magic=0))
    lone = w.append(BatchSpec(records=(replace(keyed(1, 1)[0], attributes=0x08),), magic=0))
    recs = list(keyed(2, 3))
    recs[0] = replace(recs[0], attributes=0x08)
    wrapped = w.append(BatchSpec(records=tuple(recs), magic=0, codec=GZIP))
    findings = log.scan()
    assert summary(findings) == [("invalid_timestamp_type", 1, 0), ("invalid_timestamp_type", 2, 0)]
    assert [f.position for f in findings] == [lone.position, wrapped.position]
    for f in findings:
        assert_error(f, INVALID_TIMESTAMP)


def test_log_append_time_inner_message_under_create_time_wrapper(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    recs = list(keyed(0, 3))
    recs[2] = replace(recs[2], attributes=0x08)
    r = w.append(BatchSpec(records=tuple(recs), magic=1, codec=GZIP))
    findings = log.scan()
    assert summary(findings) == [("invalid_timestamp_type", 2, 2)]
    assert findings[0].position == r.position


def test_timestamp_type_near_miss_consistent_v1_log_append_time(tmp_path):
    # A broker re-compressing under LOG_APPEND_TIME marks inner messages too (MemoryRecordsBuilder);
    # in-place assignment only marks the wrapper. Lone v1 messages may carry the bit.
    log = Log(tmp_path)
    w = log.partition()
    recs = tuple(replace(rec, attributes=0x08) for rec in keyed(0, 3))
    w.append(BatchSpec(records=recs, magic=1, codec=GZIP, timestamp_type=LOG_APPEND_TIME, log_append_time=TS_BASE + 5))
    w.append(BatchSpec(records=keyed(3, 3), magic=1, codec=SNAPPY, timestamp_type=LOG_APPEND_TIME, log_append_time=TS_BASE + 6))
    w.append(BatchSpec(records=keyed(6, 2), magic=1, timestamp_type=LOG_APPEND_TIME, log_append_time=TS_BASE + 7))
    assert log.scan() == []


# ---------------------------------------------------------------------------------------------
# record_too_large and --max-message-bytes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("magic", "codec"), [(2, NONE), (2, ZSTD), (1, GZIP), (0, NONE)])
def test_record_too_large_exactly_at_and_one_byte_over(tmp_path, magic, codec):
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 1, magic=magic)
    noise = b"".join(hashlib.sha256(b"%d" % i).digest() for i in range(64))  # does not compress
    big = w.append(BatchSpec(records=(RecordSpec(key=b"k", value=noise),), magic=magic, codec=codec))
    fill(w, 1, magic=magic)
    assert log.scan(max_message_bytes=big.size) == []
    findings = log.scan(max_message_bytes=big.size - 1)
    assert summary(findings) == [("record_too_large", big.last_offset if magic < 2 else big.base_offset, None)]
    (f,) = findings
    assert (f.error_code, f.error_name, f.severity) == (10, "MESSAGE_TOO_LARGE", "error")
    assert f.details["size"] == big.size
    assert f.position == big.position
    assert f.message == (
        f"The record batch size in the append to t-0 is {big.size} bytes which exceeds the maximum "
        f"configured value of {big.size - 1}."
    )
    assert log.scan() == []  # the default 1048588


# ---------------------------------------------------------------------------------------------
# offset_overlap, offset_gap (and --compacted-topic)
# ---------------------------------------------------------------------------------------------


def test_offset_overlap_within_and_across_segments(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 2, per_batch=5)  # 0..9
    inside = w.append(BatchSpec(records=keyed(8, 3), base_offset=8))  # 8..10
    w.roll(new_base_offset=11)
    fill(w, 1)  # 11..13
    w.roll(new_base_offset=20)
    below = w.append(BatchSpec(records=keyed(15, 2), base_offset=15))  # below its segment's base 20
    findings = log.scan()
    overlap = of(findings, "offset_overlap")
    assert [(f.offset, f.segment, f.position) for f in overlap] == [
        (8, segment_name(w), inside.position),
        (15, segment_name(w, 20), below.position),
    ]
    assert overlap[0].details["previous_last_offset"] == 9
    assert overlap[1].details["segment_base_offset"] == 20
    for f in overlap:
        assert (f.severity, f.error_code, f.error_name, f.client_outcome) == ("error", None, None, "none")


def test_offsets_near_miss_contiguous_across_segment_rolls(tmp_path):
    log = Log(tmp_path)
    w = log.partition(segment_bytes=700)
    fill(w, 12)
    assert len(w.segments) >= 3
    assert log.scan() == []


def _gap_log(tmp_path, topic="events"):
    log = Log(tmp_path)
    w = log.partition(topic)
    fill(w, 2, per_batch=5)
    r = w.append(BatchSpec(records=keyed(15, 3), base_offset=15))
    fill(w, 1)
    return log, w, r


def test_offset_gap_warning(tmp_path):
    log, w, r = _gap_log(tmp_path)
    findings = log.scan()
    assert summary(findings) == [("offset_gap", 15, None)]
    (f,) = findings
    assert (f.severity, f.error_code, f.client_outcome) == ("warning", None, "none")
    assert f.details["missing_offsets"] == [10, 14]
    assert f.position == r.position


def test_offset_gap_compacted_option_other_direction(tmp_path):
    log, _, _ = _gap_log(tmp_path)
    assert log.scan(compacted=("events",)) == []


# ---------------------------------------------------------------------------------------------
# compacted topics: what the log cleaner leaves behind is valid (MemoryRecords.filterTo)
# ---------------------------------------------------------------------------------------------


def test_cleaned_v2_batch_keeps_its_offset_range(tmp_path):
    # The cleaner keeps a batch's base and last offset (overrideLastOffset) and the retained
    # records' own offsets: deltas 0, 3, 4 under lastOffsetDelta 5, record count 3.
    log = Log(tmp_path)
    w = log.partition("users")
    fill(w, 1)
    recs = [replace(rec, offset_delta=d) for rec, d in zip(keyed(3, 3), (0, 3, 4))]
    p = Producer(900, epoch=1)
    p.send(w, tuple(recs), faults=Faults(last_offset_delta=5))
    p.send(w, keyed(w.next_offset, 2), sequence=6)
    assert log.scan(compacted=("users",)) == []
    # the same bytes in a topic that is not compacted break the offset rules
    assert {f.check for f in log.scan()} == {"non_monotonic_offsets"}


def test_cleaned_empty_batches_are_kept_headers(tmp_path):
    # RETAIN_EMPTY (MemoryRecords.filterTo, DefaultRecordBatch.writeEmptyHeader): a batch holding a
    # producer's last sequence keeps its header with no record; a transaction marker whose
    # transaction was cleaned away may be left empty too (ProducerAppendInfo.append: "An empty
    # control batch means the entire transaction has been cleaned from the log").
    log = Log(tmp_path)
    w = log.partition("users")
    fill(w, 1)
    p = Producer(901, epoch=0)
    p.send(w, (), sequence=0, faults=Faults(last_offset_delta=2))  # offsets 3..5, sequences 0..2
    w.append(BatchSpec(is_control=True, records=(), producer_id=902, producer_epoch=0, transactional=True))
    p.send(w, keyed(w.next_offset, 2), sequence=3)
    assert log.scan(compacted=("users",)) == []
    # Outside a compacted topic both are client-append count errors (LogValidator.validateBatch).
    assert {f.check for f in log.scan()} == {"non_monotonic_offsets"}


# ---------------------------------------------------------------------------------------------
# several bad records in one batch (KIP-467), positions, deleted segments
# ---------------------------------------------------------------------------------------------


def test_a_record_gets_the_first_rule_it_breaks_and_the_batch_one_answer(tmp_path):
    # LogValidator.validateRecord: validateKey before validateTimestamp, one error per record;
    # processRecordErrors: any INVALID_TIMESTAMP makes the batch's answer INVALID_TIMESTAMP, for
    # every record in its record_errors (keyless ones included).
    log = Log(tmp_path)
    w = log.partition("users")
    fill(w, 1, base_timestamp=TS_BASE)
    recs = (
        RecordSpec(key=None, value=b"old and keyless", timestamp=TS_BASE - 10 * HOUR),
        RecordSpec(key=b"k", value=b"old", timestamp=TS_BASE - 10 * HOUR),
        RecordSpec(key=None, value=b"keyless", timestamp=TS_BASE),
        RecordSpec(key=b"k", value=b"fine", timestamp=TS_BASE),
    )
    r = w.append(BatchSpec(records=recs))
    findings = log.scan(compacted=("users",), before=HOUR, reference_time=TS_BASE)
    assert sorted((f.record_index, f.check) for f in findings) == [
        (0, "missing_key_compacted"),
        (1, "timestamp_out_of_range"),
        (2, "missing_key_compacted"),
    ]
    for f in findings:
        assert_error(f, INVALID_TIMESTAMP)
        assert f.batch_base_offset == r.base_offset
    # Without the timestamp culprit the same keyless records are INVALID_RECORD.
    for f in log.scan(compacted=("users",)):
        assert_error(f, INVALID_RECORD)


def test_every_bad_record_of_a_batch_is_reported_with_its_index(tmp_path):
    log = Log(tmp_path)
    w = log.partition("users")
    fill(w, 1, base_timestamp=REF)
    recs = [replace(rec, timestamp=REF) for rec in keyed(w.next_offset, 6)]
    recs[0] = replace(recs[0], key=None)
    recs[2] = replace(recs[2], timestamp=REF - 50 * HOUR)
    recs[4] = replace(recs[4], key=None)
    recs[5] = replace(recs[5], timestamp=REF + 50 * HOUR)
    r = w.append(BatchSpec(records=tuple(recs), codec=GZIP, producer_id=77, producer_epoch=3, base_sequence=0))
    findings = log.scan(compacted=("users",), before=HOUR, after=HOUR, reference_time=REF)
    base = r.base_offset
    assert summary(findings) == [
        ("missing_key_compacted", base, 0),
        ("timestamp_out_of_range", base + 2, 2),
        ("missing_key_compacted", base + 4, 4),
        ("timestamp_out_of_range", base + 5, 5),
    ]
    for f in findings:
        assert (f.position, f.batch_base_offset, f.batch_last_offset) == (r.position, base, base + 5)
        assert (f.producer_id, f.producer_epoch, f.sequence) == (77, 3, 0)
        assert f.segment == segment_name(w)


def test_batch_level_findings_point_at_the_batch(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    fill(w, 2)
    r = w.append(BatchSpec(records=keyed(w.next_offset, 4), producer_id=12, producer_epoch=0, base_sequence=0))
    (f,) = log.scan(max_message_bytes=r.size - 1)
    assert (f.offset, f.record_index, f.position) == (r.base_offset, None, r.position)
    assert (f.batch_base_offset, f.batch_last_offset) == (r.base_offset, r.last_offset)
    assert (f.producer_id, f.producer_epoch, f.sequence) == (12, 0, 0)


def test_v0_wrapper_is_the_batch(tmp_path):
    log = Log(tmp_path)
    w = log.partition("users")
    w.append(BatchSpec(records=keyed(0, 3), magic=0))
    recs = list(keyed(3, 4))
    recs[3] = replace(recs[3], key=None)
    r = w.append(BatchSpec(records=tuple(recs), magic=0, codec=GZIP))
    (f,) = log.scan(compacted=("users",))
    assert (f.check, f.offset, f.record_index) == ("missing_key_compacted", 6, 3)
    assert (f.position, f.batch_base_offset, f.batch_last_offset) == (r.position, 3, 6)


def test_deleted_segment_is_audited_and_marked(tmp_path):
    log = Log(tmp_path)
    w = log.partition(segment_bytes=600)
    fill(w, 1)
    bad = w.append(BatchSpec(records=keyed(w.next_offset, 2), faults=Faults(bad_crc=True)))
    fill(w, 6)
    assert len(w.segments) >= 3 and bad.segment_base_offset == 0
    w.segments[0].suffix = ".deleted"
    findings = log.scan()
    assert summary(findings) == [("crc_mismatch", bad.base_offset, None)]
    (f,) = findings
    assert f.segment == segment_name(w, 0, ".deleted")
    assert f.details["segment_state"] == "deleted"
    assert f.position == bad.position


def test_live_segments_carry_no_segment_state(tmp_path):
    log = Log(tmp_path)
    w = log.partition()
    bad = w.append(BatchSpec(records=keyed(0, 2), faults=Faults(bad_crc=True)))
    (f,) = log.scan()
    assert f.offset == bad.base_offset and "segment_state" not in f.details


def test_build_batch_sizes_used_above_are_what_is_on_disk():
    # The "exactly at max.message.bytes" case relies on the writer's size being the entry size.
    built = build_batch(BatchSpec(records=keyed(0, 3)))
    assert built.info.size == len(built.data)
