"""The sidecar readers (offset_index, time_index, transaction_index, producer_snapshot,
checkpoints) against byte layouts built here with ``struct``, independently of the writer, and
round trips with the writer's sidecar encoders and a whole LogDirWriter log dir.

Kafka classes followed: ``OffsetIndex``, ``TimeIndex``, ``TransactionIndex`` / ``AbortedTxn``,
``ProducerStateManager.readSnapshot``, ``CheckpointFile`` (``OffsetCheckpointFile``,
``LeaderEpochCheckpointFile``), ``MetaProperties``, ``DumpLogSegments``.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import crc32c
import pytest

from kafka_audit.log import checkpoints, producer_snapshot, transaction_index
from kafka_audit.log.checkpoints import EpochEntry, Property, TopicPartitionOffset
from kafka_audit.log.index_files import OFFSET_INDEX, TIME_INDEX, OffsetPosition, TimestampOffset
from kafka_audit.log.producer_snapshot import ProducerSnapshotEntry
from kafka_audit.log.transaction_index import AbortedTxn
from kafka_audit.record.file_records import FileRecords
from kafka_audit.record.problem import Problem
from kafka_audit.record.record_batch import RecordBatch
from tests.support.writer import (
    AbortedTxn as WriterAbortedTxn,
)
from tests.support.writer import (
    BatchSpec,
    LogDirWriter,
    Producer,
    ProducerState,
    _SidecarEncoders,
    records,
)

TS = 1_700_000_000_000
ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False


def index_bytes(entries: list[tuple[int, int]]) -> bytes:
    """OffsetIndex entries: relativeOffset i32, position i32."""
    return b"".join(struct.pack(">ii", rel, pos) for rel, pos in entries)


def timeindex_bytes(entries: list[tuple[int, int]]) -> bytes:
    """TimeIndex entries: timestamp i64, relativeOffset i32."""
    return b"".join(struct.pack(">qi", ts, rel) for ts, rel in entries)


def txn_bytes(entries: list[tuple[int, int, int, int, int]]) -> bytes:
    """AbortedTxn: version i16, producerId i64, firstOffset i64, lastOffset i64, lastStableOffset i64."""
    return b"".join(struct.pack(">hqqqq", *e) for e in entries)


SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")


def snapshot_bytes(entries: list[tuple], version: int = 1, count: int | None = None, crc: int | None = None) -> bytes:
    """ProducerStateManager.writeSnapshot: version i16, crc u32 (CRC-32C of what follows),
    count i32, then per producer: producerId i64, epoch i16, lastSequence i32, lastOffset i64,
    offsetDelta i32, timestamp i64, coordinatorEpoch i32, currentTxnFirstOffset i64."""
    body = struct.pack(">i", len(entries) if count is None else count) + b"".join(SNAPSHOT_ENTRY.pack(*e) for e in entries)
    return struct.pack(">hI", version, crc32c.crc32c(body) if crc is None else crc) + body


def checks(problems: list[Problem]) -> list[str]:
    return [p.check for p in problems]


# ---------------------------------------------------------------------------------------------
# .index
# ---------------------------------------------------------------------------------------------


def test_offset_index_entries_are_absolute_from_the_base_offset() -> None:
    """OffsetIndex: entry offset = baseOffset + relativeOffset; position as stored."""
    parsed = OFFSET_INDEX.parse(index_bytes([(3, 4097), (17, 8200), (40, 12300)]), 1000)
    assert parsed.entries == [OffsetPosition(1003, 4097), OffsetPosition(1017, 8200), OffsetPosition(1040, 12300)]
    assert parsed.problems == [] and parsed.preallocated_bytes == 0


def test_offset_index_uses_big_endian_i32_fields() -> None:
    """All integers in Kafka files are big-endian (a little-endian reader would see 2^24 here)."""
    parsed = OFFSET_INDEX.parse(b"\x00\x00\x00\x01\x00\x00\x01\x00", 0)
    assert parsed.entries == [OffsetPosition(1, 256)]


def test_offset_index_preallocated_zero_tail_stops_the_read() -> None:
    """DumpLogSegments.dumpIndex stops at the first entry after the first at the base offset: the
    zero-filled tail of a preallocated (segment.index.bytes) active index."""
    data = index_bytes([(3, 0), (9, 4200)]) + bytes(8 * 1000)
    parsed = OFFSET_INDEX.parse(data, 50)
    assert parsed.entries == [OffsetPosition(53, 0), OffsetPosition(59, 4200)]
    assert parsed.preallocated_bytes == 8000
    assert parsed.problems == []


def test_offset_index_first_entry_may_be_the_base_offset_past_position_zero() -> None:
    """Only entries *after* the first stop the read at the base offset: entry 0 at (base, 4100)
    is a real entry (a first batch of one record, indexed at its append)."""
    data = index_bytes([(0, 4100), (5, 8200)]) + bytes(16)
    parsed = OFFSET_INDEX.parse(data, 0)
    assert parsed.entries == [OffsetPosition(0, 4100), OffsetPosition(5, 8200)]
    assert parsed.preallocated_bytes == 16


def test_an_all_zero_index_has_no_entry() -> None:
    """A preallocated index with nothing written yet: (base, position 0) is unwritten space, since
    LogSegment.append never indexes position 0 (DumpLogSegments would print it)."""
    parsed = OFFSET_INDEX.parse(bytes(8 * 64), 300)
    assert parsed.entries == []
    assert parsed.preallocated_bytes == 8 * 64


def test_offset_index_stops_at_a_base_offset_entry_whatever_its_position() -> None:
    """DumpLogSegments checks only ``entry.offset() == index.baseOffset() && i > 0``."""
    data = index_bytes([(2, 0), (7, 4096), (0, 9999), (12, 12000)])
    parsed = OFFSET_INDEX.parse(data, 10)
    assert parsed.entries == [OffsetPosition(12, 0), OffsetPosition(17, 4096)]
    assert parsed.preallocated_bytes == 16


def test_offset_index_size_not_a_multiple_of_8_is_a_problem_and_whole_entries_are_kept() -> None:
    """OffsetIndex.sanityCheck: "Index file ... is corrupt, found N bytes which is ... not a
    multiple of 8"; the whole entries before the partial one are still read."""
    data = index_bytes([(1, 0), (4, 4096), (8, 8192)]) + b"\x00\x00\x00"
    parsed = OFFSET_INDEX.parse(data, 0, "00000000000000000000.index")
    assert parsed.entries == [OffsetPosition(1, 0), OffsetPosition(4, 4096), OffsetPosition(8, 8192)]
    assert checks(parsed.problems) == ["index_mismatch"]
    problem = parsed.problems[0]
    assert problem.position == 24
    assert "not a multiple of 8" in problem.message and "27 bytes" in problem.message
    assert problem.details["size"] == 27


def test_empty_offset_index_has_no_entries_and_no_problem() -> None:
    """A trimmed index of a segment too small for an entry (the usual case) is empty."""
    parsed = OFFSET_INDEX.parse(b"", 0)
    assert parsed.entries == [] and parsed.problems == []


def test_read_offset_index_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.index"
    path.write_bytes(index_bytes([(1, 0), (3, 80)]) + bytes(16))
    parsed = OFFSET_INDEX.read(str(path), 100)
    assert parsed.entries == [OffsetPosition(101, 0), OffsetPosition(103, 80)]
    assert parsed.path == str(path) and parsed.preallocated_bytes == 16


# ---------------------------------------------------------------------------------------------
# .timeindex
# ---------------------------------------------------------------------------------------------


def test_time_index_entries_are_timestamp_and_absolute_offset() -> None:
    """TimeIndex: timestamp i64, relativeOffset i32 (12 bytes) from the base offset."""
    parsed = TIME_INDEX.parse(timeindex_bytes([(TS, 4), (TS + 500, 31)]), 7000)
    assert parsed.entries == [TimestampOffset(TS, 7004), TimestampOffset(TS + 500, 7031)]
    assert parsed.problems == []


def test_time_index_preallocated_zero_tail_stops_the_read() -> None:
    """DumpLogSegments.dumpTimeIndex: stop at the first entry after the first at the base offset."""
    data = timeindex_bytes([(TS, 3), (TS + 9, 8)]) + bytes(12 * 500)
    parsed = TIME_INDEX.parse(data, 0)
    assert parsed.entries == [TimestampOffset(TS, 3), TimestampOffset(TS + 9, 8)]
    assert parsed.preallocated_bytes == 12 * 500


def test_time_index_stops_at_a_base_offset_entry_whatever_its_timestamp() -> None:
    """The stop rule looks at the offset only: (TS, base) after the first entry ends the read."""
    data = timeindex_bytes([(TS, 2), (TS + 5, 0), (TS + 9, 6)])
    parsed = TIME_INDEX.parse(data, 40)
    assert parsed.entries == [TimestampOffset(TS, 42)]
    assert parsed.preallocated_bytes == 24


def test_an_all_zero_time_index_has_no_entry() -> None:
    parsed = TIME_INDEX.parse(bytes(12 * 10), 5)
    assert parsed.entries == [] and parsed.preallocated_bytes == 120


def test_time_index_first_entry_at_the_base_offset_is_kept() -> None:
    parsed = TIME_INDEX.parse(timeindex_bytes([(TS, 0), (TS + 1, 1)]), 5)
    assert parsed.entries == [TimestampOffset(TS, 5), TimestampOffset(TS + 1, 6)]


def test_time_index_size_not_a_multiple_of_12_is_a_problem() -> None:
    """TimeIndex.sanityCheck: the file length must be a multiple of 12."""
    data = timeindex_bytes([(TS, 1), (TS + 3, 2)]) + b"\x01" * 8
    parsed = TIME_INDEX.parse(data, 0, "x.timeindex")
    assert parsed.entries == [TimestampOffset(TS, 1), TimestampOffset(TS + 3, 2)]
    assert checks(parsed.problems) == ["index_mismatch"]
    assert parsed.problems[0].position == 24 and "not a multiple of 12" in parsed.problems[0].message


def test_time_index_negative_timestamp_is_read_as_signed() -> None:
    """timestamp is a signed i64 (-1 = NO_TIMESTAMP)."""
    parsed = TIME_INDEX.parse(timeindex_bytes([(-1, 0)]), 0)
    assert parsed.entries == [TimestampOffset(-1, 0)]


# ---------------------------------------------------------------------------------------------
# .txnindex
# ---------------------------------------------------------------------------------------------


def test_transaction_index_layout() -> None:
    """AbortedTxn: 34 bytes, version 0; offsets are absolute (no base offset)."""
    data = txn_bytes([(0, 4001, 100, 140, 100), (0, 4002, 120, 160, 161)])
    assert len(data) == 68
    parsed = transaction_index.parse_transaction_index(data)
    assert parsed.entries == [AbortedTxn(0, 4001, 100, 140, 100), AbortedTxn(0, 4002, 120, 160, 161)]
    assert parsed.problems == []


def test_transaction_index_unknown_version_is_a_problem_and_stops() -> None:
    """TransactionIndex iterator: "Unexpected aborted transaction version N in transaction index"."""
    data = txn_bytes([(0, 1, 10, 20, 21), (1, 2, 30, 40, 41), (0, 3, 50, 60, 61)])
    parsed = transaction_index.parse_transaction_index(data, "t.txnindex")
    assert parsed.entries == [AbortedTxn(0, 1, 10, 20, 21)]
    assert checks(parsed.problems) == ["txn_index_mismatch"]
    assert parsed.problems[0].position == 34
    assert "Unexpected aborted transaction version 1" in parsed.problems[0].message
    assert parsed.problems[0].details == {"version": 1}


def test_transaction_index_partial_entry_is_a_problem_and_earlier_entries_are_kept() -> None:
    """A torn last entry (fewer than 34 bytes) is reported at its position."""
    data = txn_bytes([(0, 9, 1, 5, 6)]) + txn_bytes([(0, 10, 7, 9, 10)])[:20]
    parsed = transaction_index.parse_transaction_index(data)
    assert parsed.entries == [AbortedTxn(0, 9, 1, 5, 6)]
    assert checks(parsed.problems) == ["txn_index_mismatch"]
    assert parsed.problems[0].position == 34 and "34 bytes" in parsed.problems[0].message


def test_transaction_index_last_offset_below_first_offset_is_reported() -> None:
    parsed = transaction_index.parse_transaction_index(txn_bytes([(0, 9, 50, 40, 51)]))
    assert parsed.entries == [AbortedTxn(0, 9, 50, 40, 51)]
    assert checks(parsed.problems) == ["txn_index_mismatch"]
    assert parsed.problems[0].details == {"first_offset": 50, "last_offset": 40}


def test_empty_transaction_index() -> None:
    parsed = transaction_index.parse_transaction_index(b"")
    assert parsed.entries == [] and parsed.problems == []


# ---------------------------------------------------------------------------------------------
# .snapshot
# ---------------------------------------------------------------------------------------------

ENTRY_A = (1000, 3, 41, 5041, 4, TS + 10, -1, -1)
ENTRY_B = (2000, 0, 9, 5100, 0, TS + 20, 7, 5090)


def test_snapshot_layout() -> None:
    """ProducerStateManager.readSnapshot: every field of every entry, in file order."""
    parsed = producer_snapshot.parse_producer_snapshot(snapshot_bytes([ENTRY_A, ENTRY_B]))
    assert parsed.problems == []
    assert parsed.entries == [ProducerSnapshotEntry(*ENTRY_A), ProducerSnapshotEntry(*ENTRY_B)]
    b = parsed.entries[1]
    assert (b.producer_id, b.producer_epoch, b.last_sequence, b.last_offset) == (2000, 0, 9, 5100)
    assert (b.offset_delta, b.timestamp, b.coordinator_epoch, b.current_txn_first_offset) == (0, TS + 20, 7, 5090)


def test_snapshot_with_no_producers_is_valid() -> None:
    parsed = producer_snapshot.parse_producer_snapshot(snapshot_bytes([]))
    assert parsed.entries == [] and parsed.problems == []


def test_snapshot_bad_crc() -> None:
    """"Snapshot is corrupt (CRC is no longer valid). Stored crc: X. Computed crc: Y"."""
    good = snapshot_bytes([ENTRY_A])
    stored = struct.unpack_from(">I", good, 2)[0]
    parsed = producer_snapshot.parse_producer_snapshot(snapshot_bytes([ENTRY_A], crc=stored ^ 1))
    assert checks(parsed.problems) == ["snapshot_mismatch"]
    assert "CRC is no longer valid" in parsed.problems[0].message
    assert parsed.problems[0].details == {"stored_crc": stored ^ 1, "computed_crc": stored}


def test_snapshot_crc_covers_the_entries() -> None:
    """The CRC-32C covers everything after the crc field: a flipped entry byte breaks it."""
    data = bytearray(snapshot_bytes([ENTRY_A, ENTRY_B]))
    data[-3] ^= 0x40
    parsed = producer_snapshot.parse_producer_snapshot(bytes(data))
    assert checks(parsed.problems) == ["snapshot_mismatch"]


@pytest.mark.parametrize("version", [0, 2, -1])
def test_snapshot_unknown_version(version: int) -> None:
    """"Snapshot contained an unknown file version N": nothing is read."""
    parsed = producer_snapshot.parse_producer_snapshot(snapshot_bytes([ENTRY_A], version=version))
    assert parsed.entries == []
    assert checks(parsed.problems) == ["snapshot_mismatch"]
    assert f"unknown file version {version}" in parsed.problems[0].message


@pytest.mark.parametrize("size", [0, 1, 6, 9])
def test_snapshot_shorter_than_its_header_is_truncated(size: int) -> None:
    parsed = producer_snapshot.parse_producer_snapshot(snapshot_bytes([ENTRY_A])[:size])
    assert parsed.entries == []
    assert checks(parsed.problems) == ["snapshot_mismatch"]


def test_snapshot_truncated_inside_an_entry() -> None:
    """A snapshot cut inside its second entry: the count disagrees with the bytes (and the CRC
    breaks); the whole entries are kept for the dump but the file is not valid."""
    data = snapshot_bytes([ENTRY_A, ENTRY_B])[:-10]
    parsed = producer_snapshot.parse_producer_snapshot(data)
    assert parsed.entries == [ProducerSnapshotEntry(*ENTRY_A)]
    assert "snapshot_mismatch" in checks(parsed.problems)
    assert any("declares 2 producer entries" in p.message for p in parsed.problems)


@pytest.mark.parametrize("count", [3, 1, -1, 0])
def test_snapshot_count_mismatch_with_a_valid_crc(count: int) -> None:
    """The count field disagrees with the entries present although the CRC is right."""
    parsed = producer_snapshot.parse_producer_snapshot(snapshot_bytes([ENTRY_A, ENTRY_B], count=count))
    assert checks(parsed.problems) == ["snapshot_mismatch"]
    assert parsed.problems[0].details == {"count": count}
    assert len(parsed.entries) == max(0, min(count, 2))


def test_snapshot_trailing_bytes_are_a_count_mismatch() -> None:
    body = struct.pack(">i", 1) + SNAPSHOT_ENTRY.pack(*ENTRY_A) + b"\x00\x00"
    data = struct.pack(">hI", 1, crc32c.crc32c(body)) + body
    parsed = producer_snapshot.parse_producer_snapshot(data)
    assert checks(parsed.problems) == ["snapshot_mismatch"]


def test_read_producer_snapshot_takes_the_offset_from_the_file_name(tmp_path: Path) -> None:
    """The file name is the offset after the state it captures."""
    path = tmp_path / "00000000000000005101.snapshot"
    path.write_bytes(snapshot_bytes([ENTRY_A, ENTRY_B]))
    snap = producer_snapshot.read_producer_snapshot(str(path))
    assert snap.offset == 5101 and snap.valid and snap.problems == []
    assert [e.producer_id for e in snap.entries] == [1000, 2000]


def test_read_producer_snapshot_with_a_bad_crc_is_not_valid(tmp_path: Path) -> None:
    """A snapshot a broker would refuse (CorruptSnapshotException) must not seed producer state."""
    path = tmp_path / "00000000000000000010.snapshot"
    path.write_bytes(snapshot_bytes([ENTRY_A], crc=1))
    snap = producer_snapshot.read_producer_snapshot(str(path))
    assert not snap.valid and checks(snap.problems) == ["snapshot_mismatch"]


def test_snapshot_offset_of_a_name_without_digits_is_none() -> None:
    assert producer_snapshot.snapshot_offset_of("/x/00000000000000000042.snapshot") == 42
    assert producer_snapshot.snapshot_offset_of("/x/latest.snapshot") is None


# ---------------------------------------------------------------------------------------------
# Checkpoint files
# ---------------------------------------------------------------------------------------------


def test_offset_checkpoint_layout() -> None:
    """OffsetCheckpointFile: version 0, count, then ``topic partition offset`` lines; topics may
    hold '.', '-' and '_'."""
    text = b"0\n3\norders.eu-west 2 100\n__consumer_offsets 49 7\nmy_topic-x 0 0\n"
    parsed = checkpoints.parse_offset_checkpoint(text)
    assert parsed.problems == []
    assert parsed.entries == [
        TopicPartitionOffset("orders.eu-west", 2, 100),
        TopicPartitionOffset("__consumer_offsets", 49, 7),
        TopicPartitionOffset("my_topic-x", 0, 0),
    ]


def test_offset_checkpoint_with_no_entries() -> None:
    parsed = checkpoints.parse_offset_checkpoint(b"0\n0\n")
    assert parsed.entries == [] and parsed.problems == []


@pytest.mark.parametrize("text", [b"", b"0\n", b"0"], ids=["empty", "version-only", "version-no-newline"])
def test_empty_checkpoint_file_is_an_empty_checkpoint(text: bytes) -> None:
    """CheckpointFile.read returns no entries, without error, for an empty file or one ending
    after the version line (brokers leave an empty ``cleaner-offset-checkpoint``)."""
    for parse in (checkpoints.parse_offset_checkpoint, checkpoints.parse_leader_epoch_checkpoint):
        parsed = parse(text)
        assert parsed.entries == [] and parsed.problems == []


@pytest.mark.parametrize("version", [b"1", b"-1", b"x"])
def test_checkpoint_with_wrong_version(version: bytes) -> None:
    """CheckpointFile: "Unrecognised version ... in checkpoint file": no entry is trusted."""
    parsed = checkpoints.parse_offset_checkpoint(version + b"\n1\nt 0 5\n", "cp")
    assert parsed.entries == []
    assert checks(parsed.problems) == ["index_mismatch"]
    assert "version" in parsed.problems[0].message.lower()
    assert parsed.problems[0].position is None and parsed.problems[0].details == {"line": 1}


def test_wrong_version_is_a_problem_even_without_a_count_line() -> None:
    parsed = checkpoints.parse_offset_checkpoint(b"3\n")
    assert parsed.entries == [] and len(parsed.problems) == 1


@pytest.mark.parametrize(
    "line",
    [b"t 0", b"t 0 5 9", b"t x 5", b"t 0 five", b"t 0 5.5", b""],
    ids=["two-fields", "four-fields", "partition-not-int", "offset-not-int", "offset-float", "blank"],
)
def test_malformed_checkpoint_line_is_a_problem_and_good_lines_are_kept(line: bytes) -> None:
    """CheckpointFile: "Malformed line in checkpoint file"; here the good lines survive and the
    problem names the line number (a line, not a byte position)."""
    text = b"0\n3\ngood 0 10\n" + line + b"\nother 1 20\n"
    parsed = checkpoints.parse_offset_checkpoint(text, "cp")
    assert parsed.entries == [TopicPartitionOffset("good", 0, 10), TopicPartitionOffset("other", 1, 20)]
    malformed = [p for p in parsed.problems if "Malformed" in p.message]
    assert len(malformed) == 1 and malformed[0].position is None and malformed[0].details == {"line": 4}


@pytest.mark.parametrize("count", [b"1", b"5", b"-2", b"two"])
def test_checkpoint_count_disagreeing_with_the_lines(count: bytes) -> None:
    """CheckpointFile: "Expected [N] entries in checkpoint file, but found only [M]"."""
    parsed = checkpoints.parse_offset_checkpoint(b"0\n" + count + b"\na 0 1\nb 0 2\n", "cp")
    assert len(parsed.entries) == 2
    assert checks(parsed.problems) == ["index_mismatch"]
    assert "Expected" in parsed.problems[0].message and "found 2" in parsed.problems[0].message
    assert parsed.problems[0].position is None and parsed.problems[0].details == {"line": 2}


def test_checkpoint_that_is_not_utf8_is_a_problem() -> None:
    parsed = checkpoints.parse_offset_checkpoint(b"0\n1\nt\xff\xfe 0 5\n")
    assert any("UTF-8" in p.message for p in parsed.problems)


def test_checkpoint_with_crlf_line_endings() -> None:
    """BufferedReader.readLine accepts \\r\\n."""
    parsed = checkpoints.parse_offset_checkpoint(b"0\r\n1\r\nt 0 5\r\n")
    assert parsed.entries == [TopicPartitionOffset("t", 0, 5)] and parsed.problems == []


def test_leader_epoch_checkpoint_layout() -> None:
    """LeaderEpochCheckpointFile: version 0, count, then ``epoch startOffset`` lines."""
    parsed = checkpoints.parse_leader_epoch_checkpoint(b"0\n3\n0 0\n2 150\n5 9000\n")
    assert parsed.entries == [EpochEntry(0, 0), EpochEntry(2, 150), EpochEntry(5, 9000)]
    assert parsed.problems == []


def test_leader_epoch_checkpoint_with_three_fields_is_malformed() -> None:
    parsed = checkpoints.parse_leader_epoch_checkpoint(b"0\n2\n0 0\n1 5 7\n")
    assert parsed.entries == [EpochEntry(0, 0)]
    assert [p.position for p in parsed.problems] == [None, None]
    assert sorted(p.details["line"] for p in parsed.problems) == [2, 4]  # the count, the bad line


def test_meta_properties_with_comments() -> None:
    """java.util.Properties: '#' and '!' comments, blank lines, ``key=value`` and ``key: value``."""
    text = (
        b"#\n#Tue Nov 14 22:13:20 UTC 2023\n! another comment\n\n"
        b"node.id=1\ndirectory.id = PSZ6JrcqE2NiTBfmqjFcvw\nversion: 1\ncluster.id=a=b\n"
    )
    parsed = checkpoints.parse_properties(text)
    assert parsed.problems == []
    assert parsed.entries == [
        Property("node.id", "1"),
        Property("directory.id", "PSZ6JrcqE2NiTBfmqjFcvw"),
        Property("version", "1"),
        Property("cluster.id", "a=b"),
    ]


def test_partition_metadata_is_read_as_properties() -> None:
    """PartitionMetadataFile: ``version: 0`` and ``topic_id: <uuid>``."""
    parsed = checkpoints.parse_properties(b"version: 0\ntopic_id: DuF3GEJ3RHuB62-zMzajeA\n", "partition.metadata")
    assert parsed.entries == [Property("version", "0"), Property("topic_id", "DuF3GEJ3RHuB62-zMzajeA")]


def test_meta_properties_malformed_line() -> None:
    parsed = checkpoints.parse_properties(b"node.id=1\njust some words\n=nokey\n")
    assert parsed.entries == [Property("node.id", "1")]
    assert [p.position for p in parsed.problems] == [None, None]
    assert sorted(p.details["line"] for p in parsed.problems) == [2, 3]


# ---------------------------------------------------------------------------------------------
# Missing and unreadable files: a problem, never an exception
# ---------------------------------------------------------------------------------------------

READERS = {
    "index": lambda p: OFFSET_INDEX.read(p, 0),
    "timeindex": lambda p: TIME_INDEX.read(p, 0),
    "txnindex": transaction_index.read_transaction_index,
    "offset-checkpoint": checkpoints.read_offset_checkpoint,
    "leader-epoch-checkpoint": checkpoints.read_leader_epoch_checkpoint,
    "properties": checkpoints.read_properties,
}


def _problems_of(reader_name: str, path: str) -> list[Problem]:
    return READERS[reader_name](path).problems


@pytest.mark.parametrize("reader", sorted(READERS))
def test_missing_file_is_a_problem(tmp_path: Path, reader: str) -> None:
    problems = _problems_of(reader, str(tmp_path / "does-not-exist"))
    assert len(problems) == 1 and problems[0].details.get("unreadable") is True
    assert "Cannot read" in problems[0].message


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_folder_where_a_file_is_expected_is_a_problem(tmp_path: Path, reader: str) -> None:
    problems = _problems_of(reader, str(tmp_path))
    assert len(problems) == 1 and problems[0].details.get("unreadable") is True


@pytest.mark.skipif(ROOT, reason="root reads files whatever their mode")
@pytest.mark.parametrize("reader", sorted(READERS))
def test_unreadable_file_is_a_problem(tmp_path: Path, reader: str) -> None:
    path = tmp_path / "locked"
    path.write_bytes(b"0\n0\n")
    path.chmod(0)
    try:
        problems = _problems_of(reader, str(path))
    finally:
        path.chmod(0o644)
    assert len(problems) == 1 and problems[0].details.get("unreadable") is True


@pytest.mark.parametrize("reader", sorted(READERS))
def test_permission_denied_is_a_problem(tmp_path: Path, reader: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The unreadable case for a run as root (where chmod 000 does not stop reads): the open
    itself fails with EACCES."""
    from kafka_audit.io import storage_context

    path = tmp_path / "locked"
    path.write_bytes(b"0\n0\n")

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(storage_context, "open", denied, raising=False)
    problems = _problems_of(reader, str(path))
    assert len(problems) == 1 and problems[0].details.get("unreadable") is True
    assert "Permission denied" in problems[0].message


def test_missing_snapshot_is_an_invalid_snapshot(tmp_path: Path) -> None:
    snap = producer_snapshot.read_producer_snapshot(str(tmp_path / "00000000000000000001.snapshot"))
    assert not snap.valid and snap.entries == [] and checks(snap.problems) == ["snapshot_mismatch"]
    assert snap.offset == 1


@pytest.mark.skipif(ROOT, reason="root reads files whatever their mode")
def test_unreadable_snapshot_is_an_invalid_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000001.snapshot"
    path.write_bytes(snapshot_bytes([ENTRY_A]))
    path.chmod(0)
    try:
        snap = producer_snapshot.read_producer_snapshot(str(path))
    finally:
        path.chmod(0o644)
    assert not snap.valid and checks(snap.problems) == ["snapshot_mismatch"]


# ---------------------------------------------------------------------------------------------
# Round trips with the writer's encoders
# ---------------------------------------------------------------------------------------------


def test_writer_offset_index_encoder_round_trips() -> None:
    entries = [(1005, 0), (1010, 4200), (1400, 99_000)]
    data = _SidecarEncoders.offset_index(entries, 1000)
    assert data == index_bytes([(5, 0), (10, 4200), (400, 99_000)])
    parsed = OFFSET_INDEX.parse(data, 1000)
    assert [(e.offset, e.position) for e in parsed.entries] == entries


def test_writer_time_index_encoder_round_trips() -> None:
    entries = [(TS, 1003), (TS + 7, 1009)]
    data = _SidecarEncoders.time_index(entries, 1000)
    assert data == timeindex_bytes([(TS, 3), (TS + 7, 9)])
    parsed = TIME_INDEX.parse(data, 1000)
    assert [(e.timestamp, e.offset) for e in parsed.entries] == entries


def test_writer_transaction_index_encoder_round_trips() -> None:
    entries = [WriterAbortedTxn(7, 10, 20, 10), WriterAbortedTxn(8, 15, 30, 31)]
    data = _SidecarEncoders.transaction_index(entries)
    assert data == txn_bytes([(0, 7, 10, 20, 10), (0, 8, 15, 30, 31)])
    parsed = transaction_index.parse_transaction_index(data)
    assert parsed.entries == [AbortedTxn(0, 7, 10, 20, 10), AbortedTxn(0, 8, 15, 30, 31)]


def test_writer_snapshot_encoder_round_trips() -> None:
    states = [
        ProducerState(1000, 3, 41, 5041, 4, TS + 10, -1, -1),
        ProducerState(2000, 0, 9, 5100, 0, TS + 20, 7, 5090),
    ]
    data = _SidecarEncoders.producer_snapshot(states)
    assert data == snapshot_bytes([ENTRY_A, ENTRY_B])
    parsed = producer_snapshot.parse_producer_snapshot(data)
    assert parsed.problems == []
    assert parsed.entries == [ProducerSnapshotEntry(*ENTRY_A), ProducerSnapshotEntry(*ENTRY_B)]


def test_writer_checkpoint_encoders_round_trip() -> None:
    offsets = [("orders.eu-west", 2, 100), ("t", 0, 0)]
    parsed = checkpoints.parse_offset_checkpoint(_SidecarEncoders.offset_checkpoint(offsets))
    assert parsed.problems == [] and [(e.topic, e.partition, e.offset) for e in parsed.entries] == offsets
    empty = checkpoints.parse_offset_checkpoint(_SidecarEncoders.offset_checkpoint([]))
    assert empty.problems == [] and empty.entries == []
    epochs = [(0, 0), (4, 77)]
    parsed = checkpoints.parse_leader_epoch_checkpoint(_SidecarEncoders.leader_epoch_checkpoint(epochs))
    assert parsed.problems == [] and [(e.epoch, e.start_offset) for e in parsed.entries] == epochs
    props = {"cluster.id": "abc", "node.id": "3", "version": "1"}
    parsed = checkpoints.parse_properties(_SidecarEncoders.meta_properties(props))
    assert parsed.problems == [] and {e.key: e.value for e in parsed.entries} == props


@pytest.fixture(scope="module")
def written_log_dir(tmp_path_factory) -> tuple[Path, LogDirWriter]:
    """A log dir with rolled segments, indexes, idempotent and transactional producers, an
    aborted transaction and retention."""
    root = tmp_path_factory.mktemp("logdir")
    d = LogDirWriter(root, node_id=4)
    w = d.partition("orders.eu-west", 2, segment_bytes=1500, index_interval_bytes=400)
    idem = Producer(500, epoch=2)
    txn = Producer(600, transactional=True, coordinator_epoch=9)
    for i in range(12):
        idem.send(w, records([b"v" * 90] * 3, [b"k%d" % i] * 3))
        if i % 4 == 1:
            txn.begin()
            txn.send(w, records([b"t" * 50] * 2))
            if i % 8 == 1:
                txn.abort()
            else:
                txn.commit()
    other = d.partition("plain", 0, index_interval_bytes=100)
    for _ in range(5):
        other.append(BatchSpec(records=records([b"p" * 60] * 2)))
    other.delete_records(3)
    d.close()
    return root, d


def _sidecar_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.endswith(".log"))


def test_log_dir_writer_sidecars_all_read_without_problems(written_log_dir) -> None:
    root, _ = written_log_dir
    seen = set()
    for path in _sidecar_files(root):
        base = int(path.name.split(".")[0]) if path.name[0].isdigit() else 0
        if path.suffix == ".index":
            parsed = OFFSET_INDEX.read(str(path), base)
        elif path.suffix == ".timeindex":
            parsed = TIME_INDEX.read(str(path), base)
        elif path.suffix == ".txnindex":
            parsed = transaction_index.read_transaction_index(str(path))
        elif path.suffix == ".snapshot":
            parsed = producer_snapshot.read_producer_snapshot(str(path))
        elif path.name == "leader-epoch-checkpoint":
            parsed = checkpoints.read_leader_epoch_checkpoint(str(path))
        elif path.name.endswith("-checkpoint"):
            parsed = checkpoints.read_offset_checkpoint(str(path))
        else:
            parsed = checkpoints.read_properties(str(path))
        assert parsed.problems == [], path
        seen.add(path.suffix if path.name[0].isdigit() else path.name)
    assert {".index", ".timeindex", ".txnindex", ".snapshot", "leader-epoch-checkpoint", "meta.properties"} <= seen


def test_log_dir_writer_indexes_read_back_as_written(written_log_dir) -> None:
    """Every .index/.timeindex entry the writer kept comes back, absolute, and each offset index
    entry points at a batch start whose last offset is the entry's offset (a leader's append)."""
    root, d = written_log_dir
    w = d.partitions[("orders.eu-west", 2)]
    assert len(w.segments) >= 3
    total_entries = 0
    for segment in w.segments:
        stem = w.path / f"{segment.base_offset:020d}"
        parsed = OFFSET_INDEX.read(f"{stem}.index", segment.base_offset)
        assert [(e.offset, e.position) for e in parsed.entries] == segment.offset_index
        times = TIME_INDEX.read(f"{stem}.timeindex", segment.base_offset)
        assert [(e.timestamp, e.offset) for e in times.entries] == segment.time_index
        with FileRecords(f"{stem}.log") as log:
            batches = {b.position: b for b in log.batches() if isinstance(b, RecordBatch)}
        for entry in parsed.entries:
            assert batches[entry.position].last_offset == entry.offset
        total_entries += len(parsed.entries)
    assert total_entries >= 3


def test_log_dir_writer_txnindex_and_snapshots_read_back(written_log_dir) -> None:
    root, d = written_log_dir
    w = d.partitions[("orders.eu-west", 2)]
    aborted = [t for s in w.segments for t in s.txn_index]
    assert aborted
    read = []
    for segment in w.segments:
        path = w.path / f"{segment.base_offset:020d}.txnindex"
        if path.exists():
            read += transaction_index.read_transaction_index(str(path)).entries
    assert [(a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset) for a in read] == [
        (a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset) for a in aborted
    ]
    assert w.snapshots
    for offset, states in w.snapshots.items():
        snap = producer_snapshot.read_producer_snapshot(str(w.path / f"{offset:020d}.snapshot"))
        assert snap.valid and snap.offset == offset
        assert [(e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset) for e in snap.entries] == [
            (s.producer_id, s.producer_epoch, s.last_sequence, s.last_offset) for s in states
        ]
    final = producer_snapshot.read_producer_snapshot(str(w.path / f"{w.log_end_offset:020d}.snapshot"))
    assert {e.producer_id for e in final.entries} == {500, 600}


def test_log_dir_writer_checkpoints_read_back(written_log_dir) -> None:
    root, d = written_log_dir
    ends = {(w.topic, w.partition): w.log_end_offset for w in d.partitions.values()}
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        parsed = checkpoints.read_offset_checkpoint(str(root / name))
        assert {(e.topic, e.partition): e.offset for e in parsed.entries} == ends
    starts = checkpoints.read_offset_checkpoint(str(root / "log-start-offset-checkpoint"))
    assert [(e.topic, e.partition, e.offset) for e in starts.entries] == [("plain", 0, 3)]
    props = {e.key: e.value for e in checkpoints.read_properties(str(root / "meta.properties")).entries}
    assert props["node.id"] == "4" and props["version"] == "1"
    epochs = checkpoints.read_leader_epoch_checkpoint(str(root / "orders.eu-west-2" / "leader-epoch-checkpoint"))
    assert epochs.entries == [EpochEntry(0, 0)]


def test_an_index_with_more_entries_than_batches_is_read_no_further() -> None:
    """Every entry names a batch of its own: past the segment's batch count the file cannot
    agree with the log, and a garbage file is not turned into millions of entries."""
    data = index_bytes([(i, 4096 * i) for i in range(1, 50)])
    parsed = OFFSET_INDEX.parse(data, 0, "g.index", max_entries=10)
    assert len(parsed.entries) == 10
    assert checks(parsed.problems) == ["index_mismatch"]
    assert parsed.problems[0].position == 80 and parsed.problems[0].details == {"max_entries": 10}
    timed = TIME_INDEX.parse(timeindex_bytes([(TS + i, i) for i in range(1, 50)]), 0, "g.ti", 3)
    assert len(timed.entries) == 3 and checks(timed.problems) == ["index_mismatch"]
    # The zero tail of a preallocated index is not "too many".
    tail = OFFSET_INDEX.parse(index_bytes([(1, 4096)]) + bytes(800), 0, max_entries=1)
    assert tail.problems == [] and tail.preallocated_bytes == 800
