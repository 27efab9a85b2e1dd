"""The fixture writer against an independent codec (kafka-python 3.0.12), its faults, and the
partition writer's Kafka rules (LogSegment.append indexing, rolls, txn index, snapshots)."""

from __future__ import annotations

import struct
import zlib

import crc32c
import pytest
import snappy
from kafka.errors import CorruptRecordError, UnsupportedCodecError
from kafka.record import legacy_records
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from kafka_audit.record.compression import decompress
from kafka_audit.record.record_batch import ControlRecordType
from tests.support.writer import (
    LOG_APPEND_TIME,
    TS_BASE,
    BatchSpec,
    ControlSpec,
    Faults,
    LogDirWriter,
    PartitionWriter,
    Producer,
    RecordSpec,
    control_record,
    encode_batch,
    legacy_message,
    records,
    varint,
)

CODECS = [0, 1, 2, 3, 4]
LEGACY_CODECS = [0, 1, 2, 3]  # Kafka has no zstd before magic v2 (kafka-python cannot read it either)


@pytest.fixture(autouse=True)
def _kafka_lz4_v0(monkeypatch):
    """kafka-python reads Kafka's broken v0 LZ4 header checksum only with ``xxhash``, which is not
    installed: let it use our codec for that one frame variant (the message structure is still
    parsed by kafka-python)."""
    monkeypatch.setattr(legacy_records, "lz4_decode_old_kafka", lambda data: decompress(3, bytes(data), 0, 1 << 30))


def sample(n: int, headers: bool = True, ts0: int = TS_BASE) -> tuple[RecordSpec, ...]:
    out = []
    for i in range(n):
        out.append(
            RecordSpec(
                key=None if i % 3 == 0 else b"key-%d" % i,
                value=None if i == 4 else b"value-%d " % i * (i % 7 + 3),
                headers=((("h", b"v%d" % i), ("empty", None)) if headers and i % 2 else ()),
                timestamp=ts0 + 17 * i - (5 if i == 2 else 0),
            )
        )
    return tuple(out)


def kp_batches(data: bytes) -> list:
    mr = MemoryRecords(data)
    out = []
    while mr.has_next():
        out.append(mr.next_batch())
    return out


# ---------------------------------------------------------------------------------------------
# kafka-python decodes what we write
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_v2_decodes_in_kafka_python(codec):
    recs = sample(12)
    data = encode_batch(
        BatchSpec(
            records=recs,
            base_offset=1000,
            codec=codec,
            producer_id=77,
            producer_epoch=4,
            base_sequence=2_147_483_640,
            transactional=True,
            partition_leader_epoch=9,
        )
    )
    (batch,) = kp_batches(data)
    assert isinstance(batch, DefaultRecordBatch)
    assert batch.validate_crc()
    assert (batch.base_offset, batch.last_offset_delta, batch.records_count) == (1000, 11, 12)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 4, 2_147_483_640)
    assert batch.last_sequence == 3  # wraps at 2^31-1
    assert batch.is_transactional and not batch.is_control_batch
    assert batch.compression_type == codec and batch.leader_epoch == 9
    assert batch.first_timestamp == recs[0].timestamp
    assert batch.max_timestamp == max(r.timestamp for r in recs)
    got = list(batch)
    assert [r.offset for r in got] == list(range(1000, 1012))
    assert [r.key for r in got] == [r.key for r in recs]
    assert [r.value for r in got] == [r.value for r in recs]
    assert [r.timestamp for r in got] == [r.timestamp for r in recs]
    assert [list(r.headers) for r in got] == [list(r.headers) for r in recs]


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_decodes_in_kafka_python(magic, codec):
    recs = sample(6, headers=False)
    data = encode_batch(BatchSpec(records=recs, magic=magic, codec=codec, base_offset=500))
    batches = kp_batches(data)
    assert all(b.validate_crc() for b in batches)
    if codec == 0:
        assert len(batches) == 6  # one lone message each
        got = [next(iter(b)) for b in batches]
    else:
        (wrapper,) = batches
        assert isinstance(wrapper, LegacyRecordBatch) and wrapper.compression_type == codec
        assert wrapper.base_offset == 505  # the wrapper carries the last inner offset
        got = list(wrapper)
    assert all(r.validate_crc() for r in got)
    assert [r.key for r in got] == [r.key for r in recs]
    assert [r.value for r in got] == [r.value for r in recs]
    if magic == 1:
        assert [r.timestamp for r in got] == [r.timestamp for r in recs]
    else:
        assert all(r.timestamp is None for r in got)
    if magic == 1 or codec == 0:
        assert [r.offset for r in got] == list(range(500, 506))
    else:
        # kafka-python takes v0 inner offsets as stored: they are absolute, as Kafka writes them.
        assert [r.offset for r in got] == list(range(500, 506))
    if magic == 1 and codec:
        assert wrapper.timestamp_type == 0
        assert struct.unpack_from(">q", data, 18)[0] == max(r.timestamp for r in recs)


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_zstd_wrapper_round_trips_through_our_codec(magic):
    """Kafka never writes zstd before v2; the writer can (a fault case), checked with our codec."""
    recs = sample(3, headers=False)
    data = encode_batch(BatchSpec(records=recs, magic=magic, codec=4, base_offset=10))
    offset, size, crc, wmagic, attrs = struct.unpack_from(">qiIbb", data)
    assert (offset, wmagic, attrs & 7) == (12, magic, 4)
    value_at = 12 + 4 + 2 + (8 if magic else 0) + 4 + 4
    inner = decompress(4, data[value_at:], magic, 1 << 20)
    assert inner == b"".join(
        legacy_message(10 + i if magic == 0 else i, magic, 0, r.timestamp, r.key, r.value) for i, r in enumerate(recs)
    )


def test_v1_log_append_time_wrapper():
    recs = sample(4, headers=False)
    data = encode_batch(
        BatchSpec(records=recs, magic=1, codec=1, timestamp_type=LOG_APPEND_TIME, log_append_time=TS_BASE + 99_999)
    )
    (wrapper,) = kp_batches(data)
    assert wrapper.timestamp_type == 1
    got = list(wrapper)
    assert [r.timestamp for r in got] == [TS_BASE + 99_999] * 4
    assert [r.timestamp_type for r in got] == [1] * 4


def test_v2_log_append_time():
    recs = sample(3)
    data = encode_batch(BatchSpec(records=recs, timestamp_type=LOG_APPEND_TIME, log_append_time=TS_BASE + 5000))
    (batch,) = kp_batches(data)
    assert batch.timestamp_type == 1 and batch.max_timestamp == TS_BASE + 5000
    assert [r.timestamp for r in batch] == [TS_BASE + 5000] * 3


@pytest.mark.parametrize("kind", [ControlRecordType.ABORT, ControlRecordType.COMMIT])
def test_transaction_markers(kind):
    data = encode_batch(
        BatchSpec(
            base_offset=42,
            control=ControlSpec(kind, coordinator_epoch=17),
            producer_id=5,
            producer_epoch=2,
            transactional=True,
        )
    )
    (batch,) = kp_batches(data)
    assert batch.is_control_batch and batch.is_transactional and batch.validate_crc()
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (5, 2, -1)
    (record,) = list(batch)
    assert (record.version, record.type, record.offset) == (0, kind, 42)
    assert record.value == struct.pack(">hi", 0, 17)  # EndTransactionMarker v0


def test_kraft_control_record():
    data = encode_batch(BatchSpec(control=ControlSpec(ControlRecordType.LEADER_CHANGE, value=b"\x00\x01abc")))
    (batch,) = kp_batches(data)
    assert batch.is_control_batch and not batch.is_transactional
    (record,) = list(batch)
    assert (record.version, record.type, record.value) == (0, 2, b"\x00\x01abc")


# ---------------------------------------------------------------------------------------------
# Byte identity with kafka-python's builders
# ---------------------------------------------------------------------------------------------


def test_v2_uncompressed_bytes_equal_kafka_python_builder():
    recs = sample(40)
    builder = DefaultRecordBatchBuilder(2, 0, True, 4242, 7, 100, batch_size=1 << 30)
    for i, r in enumerate(recs):
        builder.append(i, r.timestamp, r.key, r.value, list(r.headers))
    # kafka-python writes baseOffset 0 and partitionLeaderEpoch 0 (the broker sets both).
    ours = encode_batch(
        BatchSpec(records=recs, producer_id=4242, producer_epoch=7, base_sequence=100, transactional=True)
    )
    assert ours == bytes(builder.build())


def test_v2_big_varints_equal_kafka_python_builder():
    recs = (
        RecordSpec(key=b"k" * 20000, value=b"v" * 300_000, timestamp=TS_BASE),
        RecordSpec(key=None, value=b"x", timestamp=TS_BASE + 10**9),
        RecordSpec(key=b"", value=b"", timestamp=TS_BASE - 10**6),
    )
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 30)
    for i, r in enumerate(recs):
        builder.append(i, r.timestamp, r.key, r.value, [])
    assert encode_batch(BatchSpec(records=recs)) == bytes(builder.build())


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_v2_compressed_equal_kafka_python_up_to_the_compressor(codec):
    """Compressed bytes differ by compressor settings (gzip level/mtime, frame options), so the
    header fields and the decompressed record bytes are compared."""
    recs = sample(30)
    builder = DefaultRecordBatchBuilder(2, codec, False, 1, 0, 0, batch_size=1 << 30)
    for i, r in enumerate(recs):
        builder.append(i, r.timestamp, r.key, r.value, list(r.headers))
    theirs = bytes(builder.build())
    ours = encode_batch(BatchSpec(records=recs, codec=codec, producer_id=1, producer_epoch=0, base_sequence=0))
    assert ours[22] == theirs[22] == codec  # low attribute byte: codec id (kafka-python did compress)
    assert ours[16] == theirs[16] and ours[21:61] == theirs[21:61]  # magic, attributes .. record count
    assert decompress(codec, ours[61:], 2, 1 << 30) == decompress(codec, theirs[61:], 2, 1 << 30)


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_uncompressed_bytes_equal_kafka_python_builder(magic):
    recs = sample(9, headers=False)
    builder = LegacyRecordBatchBuilder(magic, 0, batch_size=1 << 30)
    for i, r in enumerate(recs):
        builder.append(i, r.timestamp, r.key, r.value)
    assert encode_batch(BatchSpec(records=recs, magic=magic)) == bytes(builder.build())


@pytest.mark.parametrize("codec", [1, 2, 3])
def test_v1_wrapper_inner_set_equals_kafka_python_builder(codec):
    """kafka-python builds the wrapper at offset 0 with timestamp 0; Kafka (and we) put it at the
    last inner offset with the max timestamp (LegacyRecord.writeCompressedRecordHeader /
    MemoryRecordsBuilder). The inner message sets are byte-identical."""
    recs = sample(8, headers=False)
    builder = LegacyRecordBatchBuilder(1, codec, batch_size=1 << 30)
    for i, r in enumerate(recs):
        builder.append(i, r.timestamp, r.key, r.value)
    theirs = bytes(builder.build())
    ours = encode_batch(BatchSpec(records=recs, magic=1, codec=codec))
    value_at = 12 + 4 + 2 + 8 + 4 + 4
    assert struct.unpack_from(">q", theirs)[0] == 0 and struct.unpack_from(">q", ours)[0] == 7
    assert theirs[17] == ours[17] == codec
    assert decompress(codec, ours[value_at:], 1, 1 << 30) == decompress(codec, theirs[value_at:], 1, 1 << 30)


def test_varints_match_zigzag():
    for v in (0, -1, 1, 63, -64, 64, 8191, -8192, 8192, 2**31 - 1, -(2**31), 2**62, -(2**63)):
        raw = (v << 1) ^ (v >> 63)
        raw &= (1 << 64) - 1
        out = bytearray()
        while True:
            if raw < 0x80:
                out.append(raw)
                break
            out.append((raw & 0x7F) | 0x80)
            raw >>= 7
        assert varint(v) == bytes(out)


# ---------------------------------------------------------------------------------------------
# Faults
# ---------------------------------------------------------------------------------------------


def test_bad_crc_v2():
    data = encode_batch(BatchSpec(records=sample(3), faults=Faults(bad_crc=True)))
    (batch,) = kp_batches(data)
    assert not batch.validate_crc()
    good = encode_batch(BatchSpec(records=sample(3)))
    assert data[:17] == good[:17] and data[21:] == good[21:]


@pytest.mark.parametrize("codec", [0, 1])
def test_bad_crc_legacy_wrapper_or_message(codec):
    (batch, *_) = kp_batches(encode_batch(BatchSpec(records=sample(2, headers=False), magic=1, codec=codec,
                                                    faults=Faults(bad_crc=True))))
    assert not batch.validate_crc()


def test_bad_crc_inner_message():
    recs = list(sample(3, headers=False))
    recs[1] = RecordSpec(key=b"k", value=b"v", bad_crc=True)
    (wrapper,) = kp_batches(encode_batch(BatchSpec(records=tuple(recs), magic=1, codec=1)))
    assert wrapper.validate_crc()
    assert [r.validate_crc() for r in wrapper] == [True, False, True]


def test_truncated_tail_and_size_past_the_end_give_no_batch():
    good = encode_batch(BatchSpec(records=sample(2)))
    cut = encode_batch(BatchSpec(records=sample(2), base_offset=2, faults=Faults(truncate=10)))
    assert len(cut) == len(good) - 10
    assert len(kp_batches(good + cut)) == 1
    long = encode_batch(BatchSpec(records=sample(2), faults=Faults(size=10_000)))
    assert struct.unpack_from(">i", long, 8)[0] == 10_000
    assert kp_batches(long) == []


def test_size_below_minimum():
    data = encode_batch(BatchSpec(records=sample(2), faults=Faults(size=5)))
    with pytest.raises(CorruptRecordError, match="minimum record overhead"):
        kp_batches(data + bytes(100))


def test_zero_tail():
    data = encode_batch(BatchSpec(records=sample(2), faults=Faults(zero_tail=64)))
    assert data.endswith(bytes(64))
    with pytest.raises(CorruptRecordError):
        kp_batches(data)


def test_unknown_magic_keeps_crc_of_the_rest():
    data = encode_batch(BatchSpec(records=sample(2), faults=Faults(magic=7)))
    assert data[16] == 7
    assert struct.unpack_from(">I", data, 17)[0] == crc32c.crc32c(data[21:])


def test_unknown_codec_id_keeps_a_valid_crc():
    data = encode_batch(BatchSpec(records=sample(5), codec=1, faults=Faults(codec_id=6)))
    (batch,) = kp_batches(data)
    assert batch.validate_crc() and batch.compression_type == 6
    with pytest.raises(UnsupportedCodecError):
        list(batch)


@pytest.mark.parametrize("magic", [1, 2])
def test_garbage_payload(magic):
    data = encode_batch(BatchSpec(records=sample(5, headers=False), magic=magic, codec=2, faults=Faults(payload=b"garbage!")))
    (batch,) = kp_batches(data)
    assert batch.validate_crc()
    with pytest.raises(snappy.UncompressError):
        list(batch)


def test_inner_magic_mismatch():
    recs = list(sample(3, headers=False))
    recs[1] = RecordSpec(key=b"k1", value=b"v1", magic=0)
    data = encode_batch(BatchSpec(records=tuple(recs), magic=1, codec=1))
    inner = decompress(1, data[34:], 1, 1 << 20)
    first = 12 + struct.unpack_from(">i", inner, 8)[0]
    assert inner[16] == 1 and inner[first + 16] == 0
    (wrapper,) = kp_batches(data)
    # kafka-python parses every inner message with the wrapper's layout: message 1 reads wrong.
    try:
        got = list(wrapper)
    except Exception:
        return
    assert (got[1].key, got[1].value) != (b"k1", b"v1")


def test_v1_relative_offsets_not_from_zero():
    recs = tuple(RecordSpec(key=b"k", value=b"v%d" % i, offset_delta=i + 1) for i in range(3))
    data = encode_batch(BatchSpec(records=recs, magic=1, codec=1, base_offset=100, faults=Faults(last_offset_delta=2)))
    (wrapper,) = kp_batches(data)
    assert wrapper.base_offset == 102
    # absolute = wrapper offset - last relative (3) + relative
    assert [r.offset for r in wrapper] == [100, 101, 102]
    inner = decompress(1, data[34:], 1, 1 << 20)
    assert struct.unpack_from(">q", inner)[0] == 1


def test_v2_offset_deltas_and_header_fields():
    recs = tuple(RecordSpec(value=b"v", offset_delta=d) for d in (0, 2, 1))
    data = encode_batch(BatchSpec(records=recs, base_offset=10, faults=Faults(last_offset_delta=7, record_count=3)))
    (batch,) = kp_batches(data)
    assert batch.validate_crc()
    assert batch.last_offset_delta == 7
    assert [r.offset for r in batch] == [10, 12, 11]


def test_record_count_disagreeing():
    data = encode_batch(BatchSpec(records=sample(3), faults=Faults(record_count=5)))
    (batch,) = kp_batches(data)
    assert batch.validate_crc() and batch.records_count == 5 and batch.last_offset_delta == 2
    with pytest.raises(CorruptRecordError):
        list(batch)
    fewer = encode_batch(BatchSpec(records=sample(3), faults=Faults(record_count=2)))
    (batch,) = kp_batches(fewer)
    with pytest.raises(CorruptRecordError, match="unconsumed bytes"):
        list(batch)


def test_malformed_control_batches():
    leader = ControlSpec(ControlRecordType.LEADER_CHANGE, value=b"")
    two = kp_batches(encode_batch(BatchSpec(control=leader, records=(control_record(leader),) * 2)))[0]
    assert two.is_control_batch and len(list(two)) == 2
    empty = kp_batches(encode_batch(BatchSpec(is_control=True)))[0]
    assert empty.is_control_batch and empty.records_count == 0 and list(empty) == []
    (record,) = list(kp_batches(encode_batch(BatchSpec(control=ControlSpec(1, version=3))))[0])
    assert (record.version, record.type) == (3, 1)
    (record,) = list(kp_batches(encode_batch(BatchSpec(control=ControlSpec(9))))[0])
    assert record.type == 9


def test_producer_field_faults_are_plain_fields():
    (batch,) = kp_batches(encode_batch(BatchSpec(records=sample(1), transactional=True)))
    assert batch.is_transactional and batch.producer_id == -1 and batch.validate_crc()
    (batch,) = kp_batches(encode_batch(BatchSpec(records=sample(1), producer_id=3, producer_epoch=0)))
    assert batch.producer_id == 3 and batch.base_sequence == -1


def test_timestamp_type_bit_in_v0():
    (msg,) = kp_batches(encode_batch(BatchSpec(records=(RecordSpec(value=b"x", attributes=0x08),), magic=0)))
    assert msg.validate_crc()
    assert msg._attributes & 0x08  # kafka-python ignores the bit in v0 (timestamp_type None)
    assert msg.timestamp_type is None


def test_legacy_message_crc_is_crc32_of_magic_to_end():
    message = legacy_message(5, 1, 0, TS_BASE, b"k", b"v")
    assert struct.unpack_from(">I", message, 12)[0] == zlib.crc32(message[16:])


def test_encoding_is_deterministic():
    spec = BatchSpec(records=sample(50), codec=1)
    assert encode_batch(spec) == encode_batch(spec)
    for codec in (1, 2, 3, 4):
        assert encode_batch(BatchSpec(records=sample(20), magic=1, codec=codec)) == encode_batch(
            BatchSpec(records=sample(20), magic=1, codec=codec)
        )


# ---------------------------------------------------------------------------------------------
# PartitionWriter: LogSegment.append indexing, rolls, transactions, snapshots
# ---------------------------------------------------------------------------------------------


def _entries(data: bytes, fmt: str) -> list[tuple]:
    size = struct.calcsize(fmt)
    return [struct.unpack_from(fmt, data, i) for i in range(0, len(data), size)]


def test_index_entries_follow_log_segment_append(tmp_path):
    w = PartitionWriter(tmp_path, "t", 0, index_interval_bytes=500)
    results = [w.append(BatchSpec(records=records([b"x" * 100] * 2))) for _ in range(10)]
    size = results[0].size
    assert all(r.size == size for r in results)  # 300-odd bytes each
    w.close()
    index = _entries((tmp_path / "t-0" / "00000000000000000000.index").read_bytes(), ">ii")
    timeindex = _entries((tmp_path / "t-0" / "00000000000000000000.timeindex").read_bytes(), ">qi")
    # An entry is written for an append when more than index.interval.bytes were appended since
    # the last entry, *before* this append's bytes are counted: (its last offset, its position).
    expected, since = [], 0
    for r in results:
        if since > 500:
            expected.append((r.last_offset, r.position))
            since = 0
        since += r.size
    assert index == expected and len(expected) >= 3
    # Time index: (max timestamp so far, last offset of the batch holding it) at each offset index
    # entry, plus the closing entry of the segment.
    maxes = {r.last_offset: r.info.max_timestamp for r in results}
    assert [(ts, off) for ts, off in timeindex[:-1]] == [(maxes[off], off) for off, _ in expected]
    assert timeindex[-1] == (results[-1].info.max_timestamp, results[-1].last_offset)


def test_rolls_snapshots_and_checkpoints(tmp_path):
    d = LogDirWriter(tmp_path)
    w = d.partition("my.topic-x", 3, segment_bytes=1000)
    p = Producer(99, epoch=1)
    for _ in range(10):
        p.send(w, records([b"y" * 80] * 3))
    d.close()
    folder = tmp_path / "my.topic-x-3"
    logs = sorted(folder.glob("*.log"))
    assert len(logs) >= 3 and all(f.stat().st_size <= 1000 for f in logs)
    bases = [int(f.stem) for f in logs]
    assert bases[0] == 0 and bases == sorted(bases)
    snapshots = sorted(int(f.stem) for f in folder.glob("*.snapshot"))
    assert snapshots == bases[1:] + [30]
    snap = (folder / f"{30:020d}.snapshot").read_bytes()
    version, crc, count = struct.unpack_from(">hIi", snap)
    assert (version, count) == (1, 1) and crc == crc32c.crc32c(snap[6:])
    pid, epoch, last_seq, last_offset, delta, ts, coord, txn = struct.unpack_from(">qhiqiqiq", snap, 10)
    assert (pid, epoch, last_seq, last_offset, delta, coord, txn) == (99, 1, 29, 29, 2, -1, -1)
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text() == "0\n1\nmy.topic-x 3 30\n"
    assert (tmp_path / "log-start-offset-checkpoint").read_text() == "0\n0\n"
    assert (folder / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"
    assert "node.id=1" in (tmp_path / "meta.properties").read_text()


def test_transactions_and_txn_index(tmp_path):
    d = LogDirWriter(tmp_path)
    w = d.partition("t", 0)
    a = Producer(1, transactional=True, coordinator_epoch=3)
    b = Producer(2, transactional=True)
    a.begin()
    a_first = a.send(w, records(["a1", "a2"]))
    b.begin()
    b_first = b.send(w, records(["b1"]))
    (abort_a,) = a.abort()
    (abort_b,) = b.abort()
    d.close()
    (batch,) = kp_batches(encode_batch(a.marker(ControlRecordType.COMMIT)))
    assert batch.is_control_batch and batch.producer_id == 1
    entries = _entries((tmp_path / "t-0" / "00000000000000000000.txnindex").read_bytes(), ">hqqqq")
    # AbortedTxn(version, producerId, firstOffset, lastOffset, lastStableOffset): the LSO is the
    # first offset of another producer's ongoing transaction, else the marker offset + 1.
    assert entries == [
        (0, 1, a_first.base_offset, abort_a.base_offset, b_first.base_offset),
        (0, 2, b_first.base_offset, abort_b.base_offset, abort_b.base_offset + 1),
    ]


def test_retention_moves_log_start(tmp_path):
    d = LogDirWriter(tmp_path)
    w = d.partition("r", 0, segment_bytes=400)
    for _ in range(8):
        w.append(BatchSpec(records=records([b"z" * 50] * 2)))
    start = w.delete_segments(2)
    assert start == w.segments[0].base_offset > 0
    w.delete_records(start + 1)
    d.close()
    assert (tmp_path / "log-start-offset-checkpoint").read_text() == f"0\n1\nr 0 {start + 1}\n"
    assert sorted(int(f.stem) for f in (tmp_path / "r-0").glob("*.snapshot"))[0] >= start


def test_segment_written_byte_identical_twice(tmp_path):
    def build(root):
        d = LogDirWriter(root)
        w = d.partition("x", 0, segment_bytes=2000, index_interval_bytes=200)
        for i in range(20):
            w.append(BatchSpec(records=sample(3), codec=i % 5))
        d.close()
        return {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}

    assert build(tmp_path / "a") == build(tmp_path / "b")


def test_tv2_producer_writes_markers_at_the_bumped_epoch(tmp_path):
    """Transactions v2 as the real-broker-4 corpus shows them (TransactionMetadata.prepareAbortOrCommit):
    data at E, the end marker at E + 1, the next transaction at E + 1 from sequence 0; a new
    instance's InitProducerId over an open transaction: ABORT at E + 1, the new instance at E + 2."""
    with LogDirWriter(tmp_path, snapshots=False) as d:
        w = d.partition("t", 0)
        p = Producer(7, transactional=True, transaction_version=2)
        p.begin()
        p.send(w, records(["a", "b"]))
        (commit,) = p.commit()
        p.begin()
        second = p.send(w, records(["c"]))
        (fence,) = p.init_producer_id()
        p.begin()
        third = p.send(w, records(["d"]))
    assert (commit.info.producer_epoch, second.info.producer_epoch, second.info.base_sequence) == (1, 1, 0)
    assert (fence.info.producer_epoch, fence.info.control_type) == (2, ControlRecordType.ABORT)
    assert (third.info.producer_epoch, third.info.base_sequence) == (3, 0)


def test_transaction_log_record_decodes_as_kafka_4_writes_it():
    from kafka_audit.log.coordinator_records import decode_transaction_log
    from tests.support.writer import transaction_log_record

    record = transaction_log_record("tx", 7, 3, "PrepareCommit", partitions=[("a", 0), ("a", 1)], start=5,
                                    last_update=6, next_producer_id=9)
    decoded = decode_transaction_log(record.key, record.value)
    assert (decoded["state"], decoded["partitions"], decoded["next_producer_id"]) == ("PrepareCommit", ["a-0", "a-1"], 9)
    assert decoded["client_transaction_version"] == 2 and "previous_producer_id" not in decoded
