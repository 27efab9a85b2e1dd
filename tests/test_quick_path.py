"""The segment step's quick path gives exactly what the full audit of a batch gives.

``SegmentAuditor._quick_summary`` and the compiled ``screen_payload`` (``_record_screen.c``) skip
work whose answer they take to be empty. Each is held here to the slow path it stands for: the
auditor with and without its quick path, and the compiled payload screen against
``screen_payload_py``, on the fixtures, the real-broker corpus and damaged batches whose CRC is
made to hold again (so the damage reaches the header rules, the decompressors and the screen).
"""

from __future__ import annotations

import random
import shutil
import struct
from pathlib import Path

import crc32c
import pytest
import zstandard

from kafka_audit.audit import segment_audit
from kafka_audit.audit.log_dir_facts import with_inferred_compaction
from kafka_audit.audit.plan import plan_tasks
from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.audit.segment_audit import SegmentAuditor
from kafka_audit.log.log_dir import discover
from kafka_audit.record import file_records, record_screen
from kafka_audit.record.compression import compress
from kafka_audit.record.control_record import parse_control_key_value, parse_control_record
from kafka_audit.record.default_record import decode_records
from kafka_audit.record.file_records import FileRecords
from kafka_audit.record.lz4_frame import LZ4_BLOCK_INTO
from kafka_audit.record.record_batch import (
    V2_ATTRIBUTES_OFFSET,
    V2_CRC_OFFSET,
    V2_RECORDS_OFFSET,
    RecordBatch,
)
from kafka_audit.record.record_screen import RecordScreen, screen_payload
from kafka_audit.record.zstd_frame import ZSTD_DECOMPRESSOR
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.validation.log_validator import ValidationConfig
from tests.support.audit_run import SHARED, THIRD_PARTY_CORPUS
from tests.support.record_screen_reference import screen_payload_py
from tests.support.screen_options import SCREEN_OPTIONS
from tests.support.writer import BatchSpec, ControlSpec, RecordSpec, encode_batch, records

REPO = Path(__file__).resolve().parent.parent
FIXTURES = [REPO / "fixtures" / name for name in ("healthy", "faulty", "producer-errors")]
CORPUS = SHARED / "corpus" / THIRD_PARTY_CORPUS
CORPUS_SOURCES = sorted(p for p in CORPUS.iterdir() if p.is_dir()) if CORPUS.is_dir() else []
TS = 1_700_000_000_000


def _audit(root: Path, quick: bool, options: ScanOptions, monkeypatch) -> list:
    """Every task's output and stats, with the quick path on or off."""
    discovery = discover([str(root)])
    options = with_inferred_compaction(options, discovery)
    with monkeypatch.context() as patch:
        if not quick:
            patch.setattr(SegmentAuditor, "_quick_summary", lambda self, buf, batch: None)
            patch.setattr(segment_audit, "WALK_COMPILED", False)  # the compiled walk is a quick path too
        out = []
        for task in plan_tasks(discovery, 4096):  # small ranges: tasks that start mid-segment too
            auditor = SegmentAuditor(task, options.validation, options.reference_time)
            out.append((task.file.display_path, task.start, list(auditor.run()), auditor.stats))
    return out


OPTIONS = [
    *SCREEN_OPTIONS,
    ScanOptions(validation=ValidationConfig(segment_bytes=400)),  # RECORD_LIST_TOO_LARGE after the records
]


def _assert_same(root: Path, monkeypatch) -> int:
    summaries = 0
    for options in OPTIONS:
        slow = _audit(root, False, options, monkeypatch)
        fast = _audit(root, True, options, monkeypatch)
        assert fast == slow
        summaries += sum(isinstance(item, BatchSummary) for _, _, items, _ in fast for item in items)
    return summaries


@pytest.mark.parametrize("root", FIXTURES, ids=lambda p: p.name)
def test_quick_path_audits_the_fixtures_as_the_full_audit_does(root: Path, monkeypatch) -> None:
    assert _assert_same(root, monkeypatch) > 0


@pytest.mark.parametrize("root", CORPUS_SOURCES, ids=lambda p: p.name)
def test_quick_path_audits_the_real_corpus_as_the_full_audit_does(root: Path, monkeypatch) -> None:
    assert _assert_same(root, monkeypatch) > 0


def _fix_crc(batch: bytearray) -> None:
    struct.pack_into(">I", batch, V2_CRC_OFFSET, crc32c.crc32c(bytes(batch[V2_ATTRIBUTES_OFFSET:])))


def _damaged_batches(seed: int) -> list[bytes]:
    """Batches of every codec and kind, each damaged in its header or payload, CRC fixed."""
    rng = random.Random(seed)
    specs = []
    for codec in (0, 1, 2, 3, 4):
        recs = records([b"v" * rng.randrange(1, 300) for _ in range(rng.randrange(1, 6))], keys=[b"k"] * 5)
        specs.append(BatchSpec(records=recs, codec=codec, producer_id=7, producer_epoch=0, base_sequence=0))
        specs.append(BatchSpec(records=recs, codec=codec, timestamp_type=1, log_append_time=TS))
    for type_id in (0, 1, 2):
        specs.append(
            BatchSpec(control=ControlSpec(type_id, coordinator_epoch=3), transactional=True, producer_id=7, producer_epoch=0)
        )
    out = []
    for spec in specs:
        data = bytearray(encode_batch(spec))
        kind = rng.randrange(6)
        if kind == 0:  # a payload byte
            at = rng.randrange(V2_RECORDS_OFFSET, len(data))
            data[at] = rng.randrange(256)
        elif kind == 1:  # record count / last offset delta
            field = rng.choice([(57, ">i"), (23, ">i")])
            struct.pack_into(field[1], data, field[0], rng.randrange(-1, 8))
        elif kind == 2:  # attributes: codec, timestamp type, transactional, control bits
            struct.pack_into(">h", data, V2_ATTRIBUTES_OFFSET, rng.randrange(0, 0x40))
        elif kind == 3:  # producer id / sequence
            struct.pack_into(">q", data, 43, rng.choice([-1, 0, 7]))
            struct.pack_into(">i", data, 53, rng.choice([-1, 0, 2**31 - 1]))
        elif kind == 4:  # a timestamp
            struct.pack_into(">q", data, 27, rng.choice([0, TS, TS + 10**10]))
        if kind != 5:
            _fix_crc(data)
        out.append(bytes(data))
    return out


def _segment_of(batches: list[bytes]) -> bytes:
    """Batches back to back with consecutive base offsets (each header's count kept)."""
    out = bytearray()
    offset = 0
    for batch in batches:
        data = bytearray(batch)
        struct.pack_into(">q", data, 0, offset)
        out += data
        offset += 10
    return bytes(out)


@pytest.mark.parametrize("seed", range(12))
def test_quick_path_audits_damaged_batches_as_the_full_audit_does(seed: int, tmp_path: Path, monkeypatch) -> None:
    shutil.copytree(FIXTURES[0], tmp_path / "logs")
    for topic in ("bad-0", "__consumer_offsets-3"):  # a plain and a compacted topic
        folder = tmp_path / "logs" / topic
        folder.mkdir()
        (folder / "00000000000000000000.log").write_bytes(_segment_of(_damaged_batches(seed)))
    _assert_same(tmp_path / "logs", monkeypatch)


# -- the compiled payload screen answers as screen_payload_py ------------------------------------

SCREENS = [RecordScreen(), RecordScreen(True), RecordScreen(False, TS - 10, TS + 10**6), RecordScreen(True, None, TS)]


def _check_all(buf, batches: list[RecordBatch]) -> int:
    """Compiled against Python for every v2 batch and screen; returns how many it answered."""
    answered = 0
    for batch in batches:
        if batch.magic != 2:
            continue
        for screen in SCREENS:
            for want_record in (False, True):
                fast = screen_payload(buf, batch, screen, want_record)
                if fast is not None:
                    answered += 1
                    assert fast == screen_payload_py(buf, batch, screen, want_record), batch
    return answered


def _batches(buf) -> list[RecordBatch]:
    return [item for item in file_records.iter_batches(buf) if isinstance(item, RecordBatch)]


def test_compiled_payload_screen_reads_records_where_record_batch_says_they_start() -> None:
    from kafka_audit.record import _record_screen

    assert _record_screen.V2_RECORDS_OFFSET == V2_RECORDS_OFFSET


@pytest.mark.parametrize("root", FIXTURES + CORPUS_SOURCES, ids=lambda p: p.name)
def test_compiled_payload_screen_agrees_on_fixtures_and_corpus(root: Path) -> None:
    answered = 0
    for path in sorted(root.rglob("*.log")):
        if not path.is_file():  # the fixtures' dangling link of an unreadable segment
            continue
        with FileRecords(path) as segment:
            answered += _check_all(segment.buffer, [b for b in segment.batches() if isinstance(b, RecordBatch)])
    assert answered > 0


@pytest.mark.parametrize("seed", range(40))
def test_compiled_payload_screen_agrees_on_damaged_batches(seed: int) -> None:
    buf = _segment_of(_damaged_batches(seed))
    _check_all(buf, _batches(buf))


def _v2_with_payload(payload: bytes, codec: int, count: int) -> bytes:
    """A v2 batch header (count records, CREATE_TIME, base timestamp TS) before ``payload``."""
    plain = encode_batch(BatchSpec(records=records([b"x"] * count), codec=0))
    data = bytearray(plain[:V2_RECORDS_OFFSET] + payload)
    struct.pack_into(">i", data, 8, len(data) - 12)
    struct.pack_into(">h", data, V2_ATTRIBUTES_OFFSET, codec)
    _fix_crc(data)
    return bytes(data)


def _raw_records(count: int, value_size: int = 40) -> bytes:
    plain = encode_batch(BatchSpec(records=records([b"v" * value_size] * count, keys=[b"k"] * count)))
    return plain[V2_RECORDS_OFFSET:]


def _frames(raw: bytes) -> list[tuple[str, int, bytes]]:
    """LZ4 and zstd framings beyond what Kafka's clients write: each the compiled screen either
    reads as the Python path does or leaves to it."""
    import lz4.frame

    out = [("kafka lz4", 3, compress(3, raw, 2)), ("kafka zstd", 4, compress(4, raw, 2))]
    for size in (0, 4, 5, 6, 7):  # block sizes 64 KiB .. 4 MiB (0: lz4's default)
        for checksum in (False, True):
            for linked in (False, True):
                out.append(
                    (
                        f"lz4 bs{size} cs{checksum} linked{linked}",
                        3,
                        lz4.frame.compress(
                            raw, block_size=size, content_checksum=checksum, block_linked=linked,
                            store_size=checksum,
                        ),
                    )
                )
    big = raw * 40  # several 64 KiB blocks
    out.append(("lz4 blocks", 3, lz4.frame.compress(big, block_size=4, block_linked=False)))
    out.append(("lz4 blocks linked", 3, lz4.frame.compress(big, block_size=4, block_linked=True)))
    out.append(("lz4 stored", 3, lz4.frame.compress(raw, block_size=4, compression_level=0)))
    compressor = zstandard.ZstdCompressor(write_checksum=True, write_content_size=False)
    out.append(("zstd checksum, no size", 4, compressor.compress(raw)))
    half = len(raw) // 2
    out.append(("zstd two frames", 4, compress(4, raw[:half], 2) + compress(4, raw[half:], 2)))
    out.append(("zstd skippable", 4, b"\x50\x2a\x4d\x18\x00\x00\x00\x00" + compress(4, raw, 2)))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_compiled_payload_screen_agrees_on_other_framings_whole_and_damaged(seed: int) -> None:
    rng = random.Random(seed)
    count = rng.randrange(1, 40)
    raw = _raw_records(count, rng.randrange(1, 400))
    for _label, codec, payload in _frames(raw):
        variants = [payload]
        for _ in range(8):
            damaged = bytearray(payload)
            at = rng.randrange(len(damaged))
            if rng.randrange(2):
                damaged[at] = rng.randrange(256)
            else:
                del damaged[at:]
            variants.append(bytes(damaged))
        for variant in variants:
            buf = _v2_with_payload(variant, codec, count)
            _check_all(buf, _batches(buf))
    # Kafka's own framings are read by the compiled screen, not left to the Python path.
    for label, codec, payload in _frames(raw)[:2]:
        buf = _v2_with_payload(payload, codec, count)
        (batch,) = _batches(buf)
        assert screen_payload(buf, batch, RecordScreen(), False) is True, label


def test_compiled_payload_screen_keeps_the_bomb_cap() -> None:
    """A payload whose frames could inflate past max_decompressed_size is left to the Python
    path, which raises the cap's error (and so reports decompression_failed)."""
    raw = _raw_records(1, 10)
    buf = _v2_with_payload(compress(4, raw, 2), 4, 1)
    (batch,) = _batches(buf)
    args = (buf, batch, RecordScreen(), 0, False, LZ4_BLOCK_INTO, ZSTD_DECOMPRESSOR)
    assert record_screen._compiled_payload(*args) is None
    assert record_screen._compiled_payload(*args[:3], 1 << 20, *args[4:]) is True


# -- the pieces the quick path builds differently ------------------------------------------------


def test_batch_summary_of_fills_the_fields_in_their_order() -> None:
    data = encode_batch(
        BatchSpec(records=records([b"a", b"b"]), codec=3, producer_id=9, producer_epoch=2, base_sequence=2**31 - 1,
                  transactional=True)
    )
    (batch,) = _batches(data)
    control = parse_control_key_value(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05")
    summary = BatchSummary.of("t", 1, "seg", 100, batch, True, control)
    assert summary == BatchSummary(
        topic="t", partition=1, segment="seg", segment_base_offset=100, position=batch.position,
        base_offset=batch.base_offset, last_offset=batch.last_offset, magic=batch.magic, valid=True,
        producer_id=batch.producer_id, producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence,
        last_sequence=batch.last_sequence, is_transactional=batch.is_transactional, is_control=batch.is_control,
        control_type=1, coordinator_epoch=5, max_timestamp=batch.max_timestamp, record_count=batch.record_count,
        size=batch.size, compression=batch.compression, crc_valid=batch.crc_valid,
        partition_leader_epoch=batch.partition_leader_epoch, crc=batch.stored_crc,
    )
    assert type(summary) is BatchSummary and summary._asdict()["last_sequence"] == 0


@pytest.mark.parametrize(
    "key, value",
    [
        (b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x07"),
        (b"\x00\x00\x00\x01", b"\x00\x00"),
        (b"\x00\x00\x00\x01", None),
        (b"\x00\x01\x00\x01", b""),
        (b"\x00\x00\x00\x09", b""),
        (b"\x00\x00\x00\x02", None),
        (b"\x00", None),
        (None, None),
        (b"\x00\x00\x00\x00", b"\xff\xff\x00\x00\x00\x01"),
    ],
)
def test_cached_control_parse_is_the_record_parse(key, value) -> None:
    raw = _raw_control(key, value)
    (record,) = decode_records(raw, 0, TS, 1, None).records
    assert parse_control_key_value(key, value) == parse_control_record(record)


def _raw_control(key: bytes | None, value: bytes | None) -> bytes:
    data = encode_batch(BatchSpec(records=(RecordSpec(key=key, value=value),)))
    return data[V2_RECORDS_OFFSET:]


@pytest.mark.parametrize("seed", range(4))
def test_quick_path_through_the_python_inflater_audits_as_the_full_audit_does(seed: int, tmp_path: Path, monkeypatch) -> None:
    """Where the C inflater leaves a payload alone (gzip, snappy, framings it does not take) the
    quick path decompresses it in Python and screens it with the compiled record screen: made to
    do so for every batch, it still audits as the full audit does."""
    monkeypatch.setattr(record_screen, "_compiled_payload", lambda *args: None)
    shutil.copytree(FIXTURES[1], tmp_path / "logs", symlinks=True)
    folder = tmp_path / "logs" / "bad-0"
    folder.mkdir()
    (folder / "00000000000000000000.log").write_bytes(_segment_of(_damaged_batches(seed)))
    assert _assert_same(tmp_path / "logs", monkeypatch) > 0
