"""``dump`` at parity with kafka-dump-log (``kafka.tools.DumpLogSegments``): the decoder options
(whatever the folder's name, printing records by themselves), ``--max-bytes``,
``--skip-record-metadata``, ``--verify-index-only`` / ``--index-sanity-check``, and the summaries
Kafka prints after the last file ("Non-consecutive offsets", index mismatches) and per segment
("Found N invalid bytes at the end of")."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from kafka_audit.cli.app import main
from kafka_audit.log.index_files import OFFSET_INDEX, TIME_INDEX
from tests.support.audit_run import corpus_dir
from tests.support.writer import TS_BASE, BatchSpec, RecordSpec, encode_batch


def _dump(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as stop:
        main(["dump", *(str(a) for a in args)])
    out, err = capsys.readouterr()
    return stop.value.code, out, err


def _offsets_segment(tmp_path: Path) -> Path:
    """A __consumer_offsets segment a real Kafka 4 broker wrote, copied where its folder says nothing."""
    source = corpus_dir("real-broker-4") / "consumer-group-848" / "data" / "__consumer_offsets-2" / "00000000000000000000.log"
    target = tmp_path / "copied.log"
    shutil.copyfile(source, target)
    return target


def _segment(tmp_path: Path, batches: list[tuple[int, int]]) -> tuple[Path, list[bytes]]:
    """A segment of v2 batches (base offset, record count), records 100 ms apart."""
    encoded = [encode_batch(BatchSpec(records=tuple(RecordSpec(value=b"v%d" % i) for i in range(count)),
                                      base_offset=base, base_timestamp=TS_BASE + 100 * base)) for base, count in batches]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(encoded))
    return path, encoded


def test_a_decoder_option_decodes_whatever_the_folder_and_prints_records(capsys, tmp_path):
    segment = _offsets_segment(tmp_path)
    code, plain, _ = _dump(capsys, segment)
    assert code == 0 and "| offset:" not in plain and "decoded:" not in plain
    code, out, _ = _dump(capsys, segment, "--offsets-decoder")
    records = [line for line in out.splitlines() if line.startswith("| offset:")]
    assert code == 0 and records and all(' decoded: {"record": "' in line for line in records)
    assert any('"record": "ConsumerGroupMetadata"' in line for line in records)
    code, out, _ = _dump(capsys, segment, "--offsets-decoder", "--format", "json")
    batch = json.loads(out.splitlines()[0])
    assert all("decoded" in r and "key" in r for r in batch["records"])  # records printed, with their data
    code, _, err = _dump(capsys, segment, "--offsets-decoder", "--transaction-log-decoder")
    assert code == 2 and err.count("\n") == 1 and "--offsets-decoder and --transaction-log-decoder" in err


def test_skip_record_metadata_prints_the_data_alone(capsys, tmp_path):
    segment = _offsets_segment(tmp_path)
    _, out, _ = _dump(capsys, segment, "--offsets-decoder", "--skip-record-metadata")
    records = [line for line in out.splitlines() if line.startswith("|")]
    assert records and all(line.startswith('| decoded: {"record": ') for line in records)
    _, out, _ = _dump(capsys, segment, "--records", "--skip-record-metadata")
    assert {line for line in out.splitlines() if line.startswith("|")} == {"| "}  # DumpLogSegments: "|" then " "
    code, _, err = _dump(capsys, segment, "--records", "--skip-record-metadata", "--format", "json")
    assert code == 2 and "--skip-record-metadata" in err


def test_max_bytes_reads_only_the_batches_within_the_first_bytes(capsys, tmp_path):
    segment, encoded = _segment(tmp_path, [(0, 3), (3, 2), (5, 4)])
    ends = [sum(len(b) for b in encoded[: i + 1]) for i in range(len(encoded))]
    for limit, kept in ((ends[0] - 1, 0), (ends[0], 1), (ends[1] + 5, 2), (ends[2], 3)):
        _, out, _ = _dump(capsys, segment, "--max-bytes", limit)
        assert out.count("baseOffset:") == kept, limit
        assert "invalid bytes" not in out


def test_invalid_bytes_at_the_end_are_counted(capsys, tmp_path):
    segment, encoded = _segment(tmp_path, [(0, 3), (3, 2)])
    whole = len(encoded[0]) + len(encoded[1])
    segment.write_bytes(segment.read_bytes() + encoded[1][:20])  # a batch cut short
    _, out, _ = _dump(capsys, segment)
    assert out.splitlines()[-1] == f"Found 20 invalid bytes at the end of {segment.name}"
    _, out, _ = _dump(capsys, segment, "--max-bytes", whole + 20)  # Kafka says nothing under --max-bytes
    assert "invalid bytes" not in out
    segment.write_bytes(segment.read_bytes()[:whole])
    _, out, _ = _dump(capsys, segment)
    assert "invalid bytes" not in out


def test_non_consecutive_offsets_are_summed_up_after_the_last_file(capsys, tmp_path):
    segment, _ = _segment(tmp_path, [(0, 3), (10, 2), (12, 1), (20, 1)])
    _, out, err = _dump(capsys, segment, "--records")
    assert err.splitlines() == [f"Non-consecutive offsets in {segment.resolve()}", "  2 is followed by 10", "  12 is followed by 20"]
    _, _, err = _dump(capsys, segment)  # shallow iteration: no record is read
    assert err == ""


def _indexes(tmp_path: Path) -> tuple[Path, Path, list[bytes]]:
    segment, encoded = _segment(tmp_path, [(0, 3), (3, 2), (5, 4)])
    positions = [0, len(encoded[0]), len(encoded[0]) + len(encoded[1])]
    index = tmp_path / "00000000000000000000.index"
    # Batch ends at 4 and 8; the second entry says 9 for the batch ending at 8.
    index.write_bytes(OFFSET_INDEX.encode([(4, positions[1]), (9, positions[2])], 0))
    times = tmp_path / "00000000000000000000.timeindex"
    # Batch 3-4's records are at TS_BASE + 300 + 0..1; the entry says + 302. Then one earlier.
    times.write_bytes(TIME_INDEX.encode([(TS_BASE + 302, 4), (TS_BASE + 100, 8)], 0))
    return index, times, encoded


def test_index_entries_are_checked_against_the_segment(capsys, tmp_path):
    index, times, _ = _indexes(tmp_path)
    _, out, err = _dump(capsys, index, times)
    assert "offset: 9 position:" in out and f"timestamp: {TS_BASE + 302} offset: 4" in out
    assert err.splitlines() == [
        f"Mismatches in :{index.resolve()}", "  Index offset: 9, log offset: 8",
        f"Found timestamp mismatch in :{times.resolve()}", f"  Index timestamp: {TS_BASE + 302}, log timestamp: {TS_BASE + 301}",
        f"  Index timestamp: {TS_BASE + 100}, log timestamp: {TS_BASE + 503}",
        f"Found out of order timestamp in :{times.resolve()}",
        f"  Index timestamp: {TS_BASE + 100}, Previously indexed timestamp: {TS_BASE + 302}",
    ]
    _, verified, err_verified = _dump(capsys, index, times, "--verify-index-only")
    assert verified.splitlines() == [f"Dumping {index}", f"Dumping {times}"] and err_verified == err


def test_index_sanity_check_is_the_brokers_start_up_check(capsys, tmp_path):
    index, times, _ = _indexes(tmp_path)
    times.write_bytes(TIME_INDEX.encode([(TS_BASE + 301, 4), (TS_BASE + 503, 8)], 0))
    _, out, err = _dump(capsys, index, times, "--index-sanity-check")
    assert out.splitlines() == [f"Dumping {index}", f"{index} passed sanity check.",
                                f"Dumping {times}", f"{times} passed sanity check."]
    assert err == ""
    index.write_bytes(index.read_bytes() + b"\x00" * 3)
    times.write_bytes(struct.pack(">qi", TS_BASE + 50, 1) + struct.pack(">qi", TS_BASE, 2))
    _, out, _ = _dump(capsys, index, times, "--index-sanity-check")
    lines = out.splitlines()
    assert lines[1] == f"Index file {index.resolve()} is corrupt, found 19 bytes which is neither positive nor a multiple of 8."
    assert lines[3] == (f"Corrupt time index found, time index file ({times.resolve()}) has non-zero size but the last "
                        f"timestamp is {TS_BASE} which is less than the first timestamp {TS_BASE + 50}")
    index.write_bytes(struct.pack(">ii", -5, 0))
    _, out, _ = _dump(capsys, index, "--index-sanity-check")
    assert out.splitlines()[1] == (f"Corrupt index found, index file ({index.resolve()}) has non-zero size but the last "
                                   "offset is -5 which is less than the base offset 0.")
