"""The segment reader against an independent encoder (kafka-python's builders) and bad framing."""

from __future__ import annotations

import struct
import zlib

import crc32c
import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kafka_audit.record.batch_records import read_batch_records
from kafka_audit.record.default_record import MalformedRecord, decode_records, read_varint
from kafka_audit.record.file_records import FileRecords, iter_batches
from kafka_audit.record.problem import Problem
from kafka_audit.record.record_batch import RecordBatch
from tests.support.writer import varint as encode_varint

CODECS = [0, 1, 2, 3, 4]
LEGACY_CODECS = [0, 1, 2, 3]  # no zstd before magic v2 (kafka-python cannot write it either)
TS = 1_700_000_000_000


def split(items):
    batches = [i for i in items if isinstance(i, RecordBatch)]
    problems = [i for i in items if isinstance(i, Problem)]
    return batches, problems


def kp_v2(base_offset, n, codec=0, pid=-1, epoch=-1, seq=-1, txn=False, headers=True):
    builder = DefaultRecordBatchBuilder(2, codec, txn, pid, epoch, seq, batch_size=1 << 30)
    for i in range(n):
        hdrs = [("h", b"v%d" % i)] if headers else []
        key = None if i % 3 == 0 else b"key-%d" % i
        builder.append(i, TS + i, key, b"value-%d" % i * (i + 20), hdrs)
    data = bytes(builder.build())
    # kafka-python builds with base offset 0; set the base offset as a broker would (CRC excludes it).
    return struct.pack(">q", base_offset) + data[8:]


def kp_legacy(magic, base_offset, n, codec=0):
    builder = LegacyRecordBatchBuilder(magic, codec, batch_size=1 << 30)
    for i in range(n):
        # Inner offsets: v1 relative (0..n-1), v0 absolute, as a broker stores them.
        offset = i if codec and magic == 1 else base_offset + i
        builder.append(offset, TS + i if magic else None, b"k%d" % i, b"v%d" % i * 50)
    data = bytearray(builder.build())
    if codec:
        # A broker stores the wrapper at the last inner offset.
        struct.pack_into(">q", data, 0, base_offset + n - 1)
    return bytes(data)


@pytest.mark.parametrize("codec", CODECS)
def test_v2_batches_from_kafka_python_decode_exactly(codec):
    buf = kp_v2(100, 7, codec) + kp_v2(107, 3, codec, pid=42, epoch=3, seq=9, txn=True)
    batches, problems = split(list(iter_batches(buf)))
    assert problems == []
    assert [(b.base_offset, b.last_offset, b.record_count) for b in batches] == [(100, 106, 7), (107, 109, 3)]
    assert [b.position for b in batches] == [0, batches[0].size]
    second = batches[1]
    assert (second.producer_id, second.producer_epoch, second.base_sequence, second.last_sequence) == (42, 3, 9, 11)
    assert second.is_transactional and not second.is_control and second.compression == ["none", "gzip", "snappy", "lz4", "zstd"][codec]
    decoded = read_batch_records(buf, batches[0])
    assert decoded.problems == []
    records = decoded.records
    assert [r.offset for r in records] == list(range(100, 107))
    assert [r.index for r in records] == list(range(7))
    assert records[0].key is None and records[0].key_size == -1
    assert records[4].key == b"key-4" and records[4].value == b"value-4" * 24
    assert records[2].headers[0].key == "h" and records[2].headers[0].value == b"v2"
    assert [r.timestamp for r in records] == [TS + i for i in range(7)]


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_messages_from_kafka_python_decode_exactly(magic, codec):
    buf = kp_legacy(magic, 50, 4, codec)
    batches, problems = split(list(iter_batches(buf)))
    assert problems == []
    if codec == 0:
        assert [b.base_offset for b in batches] == [50, 51, 52, 53]
        assert all(b.record_count == 1 for b in batches)
        records = [read_batch_records(buf, b).records[0] for b in batches]
    else:
        assert len(batches) == 1 and batches[0].record_count is None
        decoded = read_batch_records(buf, batches[0])
        assert decoded.problems == []
        records = decoded.records
        described = decoded.batch
        assert (described.base_offset, described.last_offset, described.record_count) == (50, 53, 4)
        # Decoding leaves the batch it was given as read (the wrapper's own offset, no count).
        assert (batches[0].base_offset, batches[0].last_offset, batches[0].record_count) == (53, 53, None)
    assert [r.offset for r in records] == [50, 51, 52, 53]
    assert [r.key for r in records] == [b"k0", b"k1", b"k2", b"k3"]
    assert records[3].value == b"v3" * 50
    assert [r.timestamp for r in records] == ([TS + i for i in range(4)] if magic else [-1] * 4)


def test_mixed_formats_in_one_file(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(kp_legacy(0, 0, 2) + kp_legacy(1, 2, 3, codec=1) + kp_v2(5, 4, codec=4))
    with FileRecords(path) as segment:
        batches, problems = split(list(segment.batches()))
        assert problems == []
        assert [b.magic for b in batches] == [0, 0, 1, 2]
        counts = [len(segment.records(b).records) for b in batches]
    assert counts == [1, 1, 3, 4]
    assert batches[-1].base_offset == 5


def test_batch_walk_without_decoding_records_leaves_count_unknown_for_wrappers():
    buf = kp_legacy(1, 10, 5, codec=2)
    (batch,) = list(iter_batches(buf))
    assert batch.record_count is None and batch.last_offset == 14


def test_crc_mismatch_is_reported_and_the_walk_goes_on():
    good = kp_v2(0, 2)
    bad = bytearray(kp_v2(2, 2))
    bad[-1] ^= 0xFF
    buf = good + bytes(bad) + kp_v2(4, 1)
    items = list(iter_batches(buf))
    batches, problems = split(items)
    assert [p.check for p in problems] == ["crc_mismatch"]
    assert problems[0].position == len(good) and "Record is corrupt (stored crc = " in problems[0].message
    assert [b.crc_valid for b in batches] == [True, False, True]


def test_legacy_crc_mismatch():
    data = bytearray(kp_legacy(1, 0, 1))
    data[-1] ^= 1
    batches, problems = split(list(iter_batches(bytes(data))))
    assert [p.check for p in problems] == ["crc_mismatch"] and not batches[0].crc_valid


def test_truncated_tail_stops_with_problem():
    buf = kp_v2(0, 3) + kp_v2(3, 3)[:-10]
    batches, problems = split(list(iter_batches(buf)))
    assert len(batches) == 1
    assert [p.check for p in problems] == ["truncated_batch"]
    assert problems[0].position == batches[0].size
    assert problems[0].details["bytes_left"] < problems[0].details["size"]


def test_file_ending_inside_a_header():
    buf = kp_v2(0, 1) + b"\x00\x00\x00\x00\x00\x00\x00\x07\x00"
    _, problems = split(list(iter_batches(buf)))
    assert problems[0].check == "truncated_batch" and "inside a batch header" in problems[0].message


def test_zero_filled_tail_is_not_data():
    # SPEC incomplete_tail / FileRecords.open: zeros after the last complete batch (a
    # preallocated segment) are not data and never a finding.
    buf = kp_v2(0, 2) + bytes(4096)
    batches, problems = split(list(iter_batches(buf)))
    assert len(batches) == 1 and problems == []


def test_a_batch_failing_its_crc_with_only_zeros_after_it_is_an_incomplete_write():
    # SPEC incomplete_tail, log.preallocate: a half-written batch followed by zeros.
    whole = kp_v2(0, 2)
    buf = kp_v2(0, 2) + whole[: len(whole) // 2] + bytes(4096 + len(whole) - len(whole) // 2)
    batches, problems = split(list(iter_batches(buf)))
    assert len(batches) == 1
    (problem,) = problems
    assert (problem.check, problem.position, problem.incomplete) == ("truncated_batch", len(whole), True)


def test_a_batch_failing_its_crc_at_the_end_of_the_file_is_a_crc_mismatch():
    whole = bytearray(kp_v2(0, 2))
    whole[-1] ^= 0xFF
    _, problems = split(list(iter_batches(bytes(whole))))
    assert [(p.check, p.incomplete) for p in problems] == [("crc_mismatch", False)]


@pytest.mark.parametrize("size", [-5, 0, 13])
def test_size_below_minimum(size):
    buf = kp_v2(0, 1) + struct.pack(">qi", 1, size) + b"\x01" * 60
    _, problems = split(list(iter_batches(buf)))
    assert [p.check for p in problems] == ["invalid_batch_size"]


def test_v2_size_below_batch_overhead():
    buf = struct.pack(">qiib", 0, 30, 0, 2) + b"\x01" * 30
    _, problems = split(list(iter_batches(buf)))
    assert problems[0].check == "invalid_batch_size" and "minimum allowed overhead 61" in problems[0].message


def test_enormous_size_is_truncation_not_allocation():
    buf = struct.pack(">qiib", 0, 0x7FFFFFFF, 0, 2) + b"\x01" * 100
    _, problems = split(list(iter_batches(buf)))
    assert problems[0].check == "truncated_batch"


def test_unknown_magic_is_skipped_by_size():
    bad = bytearray(kp_v2(2, 1))
    bad[16] = 7
    buf = kp_v2(0, 2) + bytes(bad) + kp_v2(3, 1)
    batches, problems = split(list(iter_batches(buf)))
    assert [p.check for p in problems] == ["unknown_magic"]
    assert problems[0].details == {"magic": 7}
    assert [b.base_offset for b in batches] == [0, 3]


def test_garbage_stops_after_repeated_framing_errors():
    # 32-byte entries (offset, size 20, then 20 bytes) whose magic byte (position 16) is 9.
    record = struct.pack(">qib", 0, 20, 0) + b"\x00\x00\x00\x09" + bytes(15)
    buf = record * 50
    _, problems = split(list(iter_batches(buf)))
    assert [p.check for p in problems] == ["unknown_magic", "unknown_magic", "truncated_batch"]


def test_unknown_codec_and_undecompressable_payload():
    data = bytearray(kp_v2(0, 3, codec=1))
    data[22] = (data[22] & 0xF8) | 6  # attributes low byte: codec id 6
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    (batch,) = list(iter_batches(bytes(data)))
    decoded = read_batch_records(bytes(data), batch)
    assert batch.compression == "unknown(6)"
    assert [p.check for p in decoded.problems] == ["decompression_failed"]


def test_record_count_disagreement_is_reported_with_index():
    data = bytearray(kp_v2(0, 3))
    struct.pack_into(">i", data, 57, 5)
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    (batch,) = list(iter_batches(bytes(data)))
    decoded = read_batch_records(bytes(data), batch)
    assert len(decoded.records) == 3
    (problem,) = decoded.problems
    assert problem.check == "non_monotonic_offsets" and problem.record_index == 3


def test_surplus_records_after_the_count():
    data = bytearray(kp_v2(0, 3))
    struct.pack_into(">i", data, 57, 2)
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    (batch,) = list(iter_batches(bytes(data)))
    (problem,) = read_batch_records(bytes(data), batch).problems
    assert "records still remaining" in problem.message


def test_varints_round_trip_and_never_run_forever():
    for value in [0, 1, -1, 63, -64, 64, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)]:
        assert read_varint(encode_varint(value), 0) == (value, len(encode_varint(value)))
    with pytest.raises(MalformedRecord):
        read_varint(b"\xff" * 100, 0, 5)
    result = decode_records(b"\x02" + b"\xff" * 50, 0, 0, 1, None)
    assert result.error is not None and result.error_index == 0


def test_absurd_header_count_is_bounded():
    body = b"\x00" + encode_varint(0) + encode_varint(0) + encode_varint(-1) + encode_varint(-1) + encode_varint(2**30)
    data = encode_varint(len(body)) + body
    result = decode_records(data, 0, 0, 1, None)
    assert "headers" in result.error


def test_legacy_wrapper_offsets_v1_relative():
    buf = kp_legacy(1, 1000, 3, codec=3)
    (batch,) = list(iter_batches(buf))
    records = read_batch_records(buf, batch).records
    assert [r.stored_offset for r in records] == [0, 1, 2]
    assert [r.offset for r in records] == [1000, 1001, 1002]


def test_empty_file(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"")
    with FileRecords(path) as segment:
        assert list(segment.batches()) == []


def test_byte_range_walk_starts_and_stops_at_batch_boundaries():
    first, second, third = kp_v2(0, 2), kp_v2(2, 2), kp_v2(4, 2)
    buf = first + second + third
    middle = [b.base_offset for b in iter_batches(buf, len(first), len(first) + 1)]
    assert middle == [2]
    rest = [b.base_offset for b in iter_batches(buf, len(first) + len(second))]
    assert rest == [4]


def test_v0_message_crc_is_crc32_over_magic_to_end():
    data = kp_legacy(0, 0, 1)
    assert struct.unpack_from(">I", data, 12)[0] == zlib.crc32(data[16:])


def test_the_walk_fills_every_batch_field_in_its_place():
    """batch_headers.v2_batch builds RecordBatch positionally (speed): each header field must land in its own
    field, checked with values that all differ."""
    from tests.support.writer import BatchSpec, RecordSpec, encode_batch

    spec = BatchSpec(
        records=(RecordSpec(value=b"a"), RecordSpec(value=b"b"), RecordSpec(value=b"c")),
        base_offset=1000,
        base_timestamp=1_700_000_000_000,
        max_timestamp=1_700_000_000_777,
        producer_id=4242,
        producer_epoch=7,
        base_sequence=99,
        partition_leader_epoch=13,
        codec=0,
        transactional=True,
    )
    data = encode_batch(spec)
    (batch,) = list(iter_batches(data))
    assert (batch.position, batch.base_offset, batch.last_offset, batch.magic, batch.size) == (0, 1000, 1002, 2, len(data))
    assert batch.crc_valid and batch.stored_crc == int.from_bytes(data[17:21], "big")
    assert (batch.attributes, batch.record_count, batch.partition_leader_epoch) == (0x10, 3, 13)
    assert (batch.last_offset_delta, batch.base_timestamp, batch.max_timestamp) == (2, 1_700_000_000_000, 1_700_000_000_777)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (4242, 7, 99)
