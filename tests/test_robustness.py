"""Damaged input (issue 7): the audit reports what it is given and never crashes.

Every test builds a log dir with one damaged partition (or file) beside healthy ones and runs the
whole audit core in this process (:func:`kafka_audit.engines.local.audit_in_process`, no Spark). Each
checks (a) that nothing raises, (b) the finding (check id, position) or the one-line note the
damage must give, and (c) that the healthy partitions come out exactly as when audited without
the damage beside them: same findings, field for field, and the summary counts of the damaged
run are those of the healthy run plus those of the damaged partition audited alone.

The last tests are regression tests for the crashes ``bench/fuzz.py`` found, each with the
minimal bytes that crashed.
"""

from __future__ import annotations

import builtins
import errno
import gzip
import hashlib
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import crc32c
import pytest

from kafka_audit.audit.results import ScanResult
from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.engines.local import audit_in_process
from kafka_audit.io import local_file, storage_context
from kafka_audit.log.log_dir import discover
from kafka_audit.record import batch_records
from kafka_audit.record.compression import compress
from kafka_audit.rules.catalogue import CHECKS
from tests.conftest import REPO
from tests.support.writer import (
    TS_BASE,
    BatchSpec,
    Faults,
    LogDirWriter,
    Producer,
    RecordSpec,
    encode_batch,
    legacy_message,
    records,
    varint,
)

HEALTHY_TOPICS = ("clicks", "ledger", "legacy", "witness")
COUNTS = ("segments", "batches", "records", "bytes")


# -- the healthy neighbours ---------------------------------------------------------------------


def write_healthy(root: Path) -> LogDirWriter:
    """Partitions that must come out of every scan the same: v2 with codecs, an idempotent and a
    transactional producer, v1 gzip wrappers, and ``witness-0`` with one finding of its own
    (a CRC mismatch) that damage elsewhere must not hide."""
    writer = LogDirWriter(root)
    for number, codec in ((0, 0), (1, 4)):
        w = writer.partition("clicks", number, segment_bytes=700)
        producer = Producer(100 + number)
        for i in range(6):
            producer.send(w, records([f"click-{i}-{j}" for j in range(3)], [f"k{j}" for j in range(3)]), codec=codec)
    ledger = writer.partition("ledger", 0)
    txn = Producer(300, transactional=True, coordinator_epoch=2)
    for i in range(3):
        txn.begin()
        txn.send(ledger, records([f"entry-{i}"], [f"acct-{i}"]))
        txn.commit() if i != 1 else txn.abort()
    legacy = writer.partition("legacy", 0)
    for i in range(3):
        legacy.append(BatchSpec(magic=1, codec=1, records=records([f"old-{i}-{j}" for j in range(4)])))
    witness = writer.partition("witness", 0)
    witness.append(BatchSpec(records=records(["w0"])))
    witness.append(BatchSpec(records=records(["w1"]), faults=Faults(bad_crc=True)))
    witness.append(BatchSpec(records=records(["w2"])))
    return writer


def audit(*paths: Path | str, **filters) -> ScanResult:
    return audit_in_process(discover([str(p) for p in paths], **filters), ScanOptions())


def findings_of(result: ScanResult, topics=HEALTHY_TOPICS) -> list[dict]:
    return [f.to_dict() for f in result.findings if f.topic in topics]


def damaged(result: ScanResult) -> list:
    return [f for f in result.findings if f.topic not in HEALTHY_TOPICS]


class Scene:
    """``alone``: the healthy partitions only; ``root``: the same plus the damage. Build the
    damage with :attr:`writer` (a :class:`LogDirWriter` on ``root``, closed by :meth:`scan`) or
    with raw bytes after :meth:`close`."""

    def __init__(self, tmp_path: Path) -> None:
        self.alone = tmp_path / "alone"
        self.root = tmp_path / "logs"
        write_healthy(self.alone).close()
        self.writer = write_healthy(self.root)
        self.closed = False

    def partition(self, topic: str, number: int = 0, **options):
        return self.writer.partition(topic, number, **options)

    def close(self) -> Scene:
        if not self.closed:
            self.writer.close()
            self.closed = True
        return self

    def scan(self, damaged_paths: list[Path] | None = None) -> ScanResult:
        """Audit the damaged dir and check that the healthy partitions are untouched by it.
        ``damaged_paths``: what to audit alone for the count comparison (default: every folder
        that is not a healthy partition)."""
        self.close()
        healthy = audit(self.alone)
        result = audit(self.root)
        assert findings_of(result) == findings_of(healthy)
        assert ("crc_mismatch", "witness") in [(f.check, f.topic) for f in healthy.findings]  # not vacuous
        if damaged_paths is None:
            damaged_paths = [
                p for p in sorted(self.root.iterdir())
                if p.is_dir() and not any(p.name.startswith(t + "-") for t in HEALTHY_TOPICS)
            ]
        if damaged_paths:
            alone = audit(*damaged_paths)
            for key in COUNTS:
                assert result.summary[key] == healthy.summary[key] + alone.summary[key], key
        else:
            for key in COUNTS:
                assert result.summary[key] == healthy.summary[key], key
        for finding in result.findings:
            assert finding.check in CHECKS
        return result


@pytest.fixture
def scene(tmp_path) -> Scene:
    return Scene(tmp_path)


def only(result: ScanResult) -> list[tuple[str, int | None]]:
    return [(f.check, f.position) for f in damaged(result)]


def patch_v2(data: bytes, at: int, fmt: str, value, *, fix_crc: bool = True) -> bytes:
    """Set one header field of the v2 batch at the start of ``data``; keep its CRC valid."""
    buf = bytearray(data)
    struct.pack_into(fmt, buf, at, value)
    if fix_crc:
        struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def v2_with_records(raw_records: bytes, count: int = 1, codec: int = 0) -> bytes:
    """A v2 batch (valid CRC) whose records section is ``raw_records`` (compressed with
    ``codec`` when set) and whose header counts ``count`` records."""
    payload = compress(codec, raw_records, 2) if codec else raw_records
    return encode_batch(BatchSpec(records=records(["v"]), codec=codec, faults=Faults(payload=payload, record_count=count)))


def segment(scene: Scene, topic: str = "bad", base: int = 0) -> Path:
    folder = scene.root / f"{topic}-0"
    folder.mkdir(exist_ok=True)
    return folder / f"{base:020d}.log"


# -- truncation and zero tails ------------------------------------------------------------------


def test_truncated_batch_at_the_end_of_the_newest_segment_is_an_incomplete_tail(scene):
    # SPEC incomplete_tail: a still copy (nothing changed during the scan) is a warning, and
    # recovery truncates at the cut batch (LogSegment.recover).
    w = scene.partition("bad")
    w.append(BatchSpec(records=records(["a", "b"])))
    cut = w.append(BatchSpec(records=records(["c", "d"]), faults=Faults(truncate=9)))
    result = scene.scan()
    assert only(result) == [("incomplete_tail", cut.position)]
    (finding,) = damaged(result)
    assert finding.severity == "warning"
    assert finding.details["truncate_to_offset"] == 2 and finding.details["changed_during_scan"] is False
    assert finding.details["bytes"] == cut.size  # the bytes written of the cut batch


def test_zero_filled_tail_of_a_preallocated_segment_is_not_data(scene):
    # SPEC incomplete_tail: zeros after the last complete batch (FileRecords.open) are never a finding.
    w = scene.partition("bad")
    w.append(BatchSpec(records=records(["a"])))
    w.append(BatchSpec(records=records(["b"]), faults=Faults(zero_tail=70000)))
    result = scene.scan()
    assert damaged(result) == []
    assert result.summary["segment_bytes"]["bad-0/00000000000000000000.log"]["read"] > 70000


def _max_rss_kib_of_audit(path: Path) -> tuple[list, int]:
    """Audit ``path`` in a fresh interpreter; return its findings and peak resident set (KiB)."""
    code = (
        "import sys, json\n"
        "from kafka_audit.audit.scan_options import ScanOptions\n"
        "from kafka_audit.engines.local import audit_in_process\n"
        "from kafka_audit.log.log_dir import discover\n"
        "r = audit_in_process(discover([sys.argv[1]]), ScanOptions())\n"
        "print(json.dumps([[f.check, f.position, f.details] for f in r.findings]))\n"
        # VmHWM, the interpreter's own peak: ru_maxrss would start at pytest's peak (Linux keeps
        # it across the exec of a vforked child).
        "print(next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=REPO, check=True)
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[0]), int(lines[1])


def test_huge_sparse_segment_of_zeros_is_passed_without_reading_it(scene):
    w = scene.partition("bad")
    w.append(BatchSpec(records=records(["a"])))
    scene.close()
    log = scene.root / "bad-0" / f"{0:020d}.log"
    start = log.stat().st_size
    with open(log, "r+b") as handle:
        handle.truncate(2 << 30)  # 2 GiB, a hole after the first batch
    assert start < (2 << 30)
    result = scene.scan()
    assert damaged(result) == []  # preallocated zeros: not data (SPEC incomplete_tail)
    findings, max_rss_kib = _max_rss_kib_of_audit(scene.root / "bad-0")
    assert findings == []
    assert max_rss_kib < 512 * 1024  # far below the 2 GiB a read of the hole would map in


# -- byte flips ---------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["attributes", "producer_id", "record_count", "payload", "crc"])
def test_a_flipped_byte_under_the_crc_is_a_crc_mismatch_and_the_next_batch_is_read(scene, where):
    w = scene.partition("bad")
    w.append(BatchSpec(records=records(["a"])))
    victim = w.append(BatchSpec(records=records(["bb", "cc"], ["k1", "k2"]), producer_id=7, producer_epoch=0, base_sequence=0))
    w.append(BatchSpec(records=records(["d"])))
    scene.close()
    log = scene.root / "bad-0" / f"{0:020d}.log"
    data = bytearray(log.read_bytes())
    at = victim.position + {"attributes": 22, "producer_id": 50, "record_count": 60, "payload": 70, "crc": 18}[where]
    data[at] ^= 0x41
    log.write_bytes(data)
    result = scene.scan()
    assert only(result) == [("crc_mismatch", victim.position)]
    assert result.summary["batches"] == audit(scene.alone).summary["batches"] + 3


def test_a_flipped_magic_byte_is_unknown_magic_and_the_walk_goes_on(scene):
    w = scene.partition("bad")
    w.append(BatchSpec(records=records(["a"])))
    victim = w.append(BatchSpec(records=records(["b"]), faults=Faults(magic=0x42)))
    after = w.append(BatchSpec(records=records(["c"])))
    result = scene.scan()
    # The skipped batch's offset is missing from what can be read.
    assert only(result) == [("unknown_magic", victim.position), ("offset_gap", after.position)]


def test_a_segment_of_random_bytes_gives_findings_at_position_zero(scene):
    log = segment(scene.close())
    log.write_bytes(hashlib.sha512(b"not kafka").digest() * 40)
    result = scene.scan()
    assert damaged(result) and damaged(result)[0].position == 0
    assert {f.check for f in damaged(result)} <= {"invalid_batch_size", "truncated_batch", "unknown_magic", "crc_mismatch"}


# -- size and length fields ---------------------------------------------------------------------


@pytest.mark.parametrize("size", [2**31 - 1, 2**30, 1 << 24])
def test_a_size_field_past_the_end_is_truncated_batch(scene, size):
    w = scene.partition("bad")
    w.append(BatchSpec(records=records(["a"])))
    victim = w.append(BatchSpec(records=records(["b"]), faults=Faults(size=size)))
    result = scene.scan()
    (finding,) = damaged(result)
    assert (finding.check, finding.position, finding.details["size"]) == ("truncated_batch", victim.position, size)


@pytest.mark.parametrize("size", [-1, -(2**31), 0, 13])
@pytest.mark.parametrize("magic", [0, 1, 2])
def test_a_negative_or_tiny_size_is_invalid_batch_size(scene, size, magic):
    w = scene.partition("bad")
    w.append(BatchSpec(records=records(["a"]), magic=magic))
    victim = w.append(BatchSpec(records=records(["b"]), magic=magic, faults=Faults(size=size)))
    result = scene.scan()
    assert only(result) == [("invalid_batch_size", victim.position)]


def test_v2_size_below_the_61_byte_header(scene):
    w = scene.partition("bad")
    victim = w.append(BatchSpec(records=records(["b"]), faults=Faults(size=30)))
    w.append(BatchSpec(records=records(["c"])))
    result = scene.scan()
    assert only(result)[0] == ("invalid_batch_size", victim.position)


@pytest.mark.parametrize("count", [2**31 - 1, -(2**31), -5, 1000])
def test_a_v2_batch_claiming_an_absurd_record_count(scene, count):
    w = scene.partition("bad")
    victim = w.append(BatchSpec(records=records(["a", "b"]), faults=Faults(record_count=count)))
    w.append(BatchSpec(records=records(["c"])))
    result = scene.scan()
    # The header's count against its offset range: LogValidator.validateBatch rejects the batch
    # there, before DefaultRecordBatch's iterator reads a record.
    assert only(result) == [("non_monotonic_offsets", victim.position)]
    assert [f.record_index for f in damaged(result)] == [None]


def _record(body_after_length: bytes) -> bytes:
    return varint(len(body_after_length)) + body_after_length


@pytest.mark.parametrize(
    "name, body",
    [
        # attributes, timestampDelta, offsetDelta, key (null), value "v", header count
        ("header count 2^31-1", bytes([0]) + varint(0) + varint(0) + varint(-1) + varint(1) + b"v" + varint(2**31 - 1)),
        ("header count -2", bytes([0]) + varint(0) + varint(0) + varint(-1) + varint(1) + b"v" + varint(-2)),
        ("key length 2^31-1", bytes([0]) + varint(0) + varint(0) + varint(2**31 - 1) + b"k"),
        ("key length -7", bytes([0]) + varint(0) + varint(0) + varint(-7) + b"k"),
        ("value length -(2^31)", bytes([0]) + varint(0) + varint(0) + varint(-1) + varint(-(2**31))),
        ("header key length huge", bytes([0]) + varint(0) + varint(0) + varint(-1) + varint(-1) + varint(1) + varint(2**30) + b"h"),
        ("timestamp varlong of 0xFF", bytes([0]) + b"\xff" * 30),
    ],
)
def test_absurd_lengths_and_counts_inside_a_record(scene, name, body):
    w = scene.partition("bad")
    w.append(BatchSpec(records=records(["a"])))
    victim = w.append_bytes(patch_v2(v2_with_records(_record(body)), 0, ">q", 1, fix_crc=False))
    w.append(BatchSpec(records=records(["c"]), base_offset=2))
    result = scene.scan()
    (finding,) = damaged(result)
    # DefaultRecord.readFrom throws InvalidRecordException: a batch-level INVALID_RECORD that
    # names no record (no KIP-467 record_errors); details say which record could not be read.
    assert (finding.check, finding.position, finding.record_index) == ("non_monotonic_offsets", victim.position, None)
    assert (finding.error_code, finding.details["record"]) == (87, 0)


@pytest.mark.parametrize("codec", [0, 1, 4])
def test_a_varint_of_0xff_bytes_that_never_ends(scene, codec):
    w = scene.partition("bad")
    victim = w.append_bytes(v2_with_records(b"\xff" * 100_000, codec=codec))
    w.append(BatchSpec(records=records(["c"]), base_offset=1))
    result = scene.scan()
    (finding,) = damaged(result)
    assert (finding.check, finding.position) == ("non_monotonic_offsets", victim.position)
    assert "Varint is too long" in finding.message


# -- compressed payloads that are not what they claim -------------------------------------------


def _bomb(codec: int, size: int) -> bytes:
    if codec == 2:
        # Raw snappy whose length header claims ``size`` bytes: the corrupt-length bomb.
        return _uvarint(size) + b"\x00" * 8
    return compress(codec, bytes(size), 2)


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_a_decompression_bomb_in_a_batch_with_a_valid_crc(scene, monkeypatch, codec):
    # A smaller cap keeps the test light; the rule is the same: a batch may not inflate past it.
    monkeypatch.setattr(batch_records, "_MIN_DECOMPRESSED_CAP", 1 << 20)
    w = scene.partition("bad")
    w.append(BatchSpec(records=records(["a"])))
    victim = w.append(BatchSpec(records=records(["b"]), codec=codec, faults=Faults(payload=_bomb(codec, 8 << 20))))
    w.append(BatchSpec(records=records(["c"])))
    result = scene.scan()
    (finding,) = damaged(result)
    assert (finding.check, finding.position) == ("decompression_failed", victim.position)
    assert "inflates past" in finding.message


def test_a_gzip_bomb_past_the_default_cap(scene):
    w = scene.partition("bad")
    victim = w.append(BatchSpec(records=records(["b"]), codec=1, faults=Faults(payload=gzip.compress(bytes(80 << 20), 9))))
    result = scene.scan()
    (finding,) = damaged(result)
    assert (finding.check, finding.position) == ("decompression_failed", victim.position)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
@pytest.mark.parametrize("magic", [1, 2])
def test_a_payload_that_is_not_what_its_codec_claims(scene, codec, magic):
    w = scene.partition("bad")
    other = compress(4 if codec != 4 else 1, b"records of another codec" * 20, magic)
    victim = w.append(BatchSpec(records=records(["b"]), magic=magic, codec=codec, faults=Faults(payload=other)))
    w.append(BatchSpec(records=records(["c"]), magic=magic))
    result = scene.scan()
    assert only(result) == [("decompression_failed", victim.position)]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("depth", [1, 40])
def test_nested_compression_in_a_legacy_wrapper_is_a_finding_not_recursion(scene, magic, depth):
    inner = legacy_message(0, magic, 0, TS_BASE, b"k", b"v") + legacy_message(1, magic, 0, TS_BASE, b"k", b"w")
    for _ in range(depth):
        inner = legacy_message(0, magic, 1, TS_BASE, None, compress(1, inner, magic))
    # The wrapper's value is a message set whose one message is itself a gzip wrapper.
    w = scene.partition("bad")
    victim = w.append(BatchSpec(magic=magic, codec=1, records=(RecordSpec(value=_value_of(inner, magic), attributes=1),)))
    result = scene.scan()
    (finding,) = damaged(result)
    # LogValidator.validateRecordCompression: INVALID_RECORD, the inner record named.
    assert (finding.check, finding.position, finding.record_index) == ("nested_compression", victim.position, 0)
    assert (finding.error_code, finding.error_name) == (87, "INVALID_RECORD")
    assert "should not have an inner record with a compression attribute" in finding.message


def _value_of(message: bytes, magic: int) -> bytes:
    """The value field of one legacy message."""
    cursor = 12 + 6 + (8 if magic == 1 else 0)
    (key_length,) = struct.unpack_from(">i", message, cursor)
    cursor += 4 + max(key_length, 0)
    (value_length,) = struct.unpack_from(">i", message, cursor)
    return message[cursor + 4 : cursor + 4 + value_length]


# -- files that are not segments, or cannot be read ---------------------------------------------


def test_an_empty_segment_and_empty_sidecars(scene):
    folder = scene.close().root / "bad-0"
    folder.mkdir()
    for suffix in (".log", ".index", ".timeindex", ".txnindex"):
        (folder / f"{0:020d}{suffix}").write_bytes(b"")
    result = scene.scan()
    assert only(result) == []  # an empty segment is a freshly rolled one, empty sidecars are valid
    assert result.summary["segments"] == audit(scene.alone).summary["segments"] + 1


def test_files_that_are_not_segments_are_skipped_file_findings(scene):
    """Info findings, so that ndjson/csv carry them and ``--fail-on info`` sees them."""
    scene.close()
    (scene.root / "bad-0").mkdir()
    (scene.root / "bad-0" / "server.log").write_text("[2024-01-01 00:00:00,000] INFO starting (kafka.Kafka)\n")
    (scene.root / "bad-0" / "README.txt").write_text("copied from broker 3\n")
    (scene.root / "bad-0" / "core.12345").write_bytes(os.urandom(64))
    result = scene.scan(damaged_paths=[])
    assert [(f.check, f.severity, f.segment, f.details["reason"]) for f in damaged(result)] == [
        ("skipped_file", "info", "bad-0/README.txt", "not a Kafka segment or sidecar file"),
        ("skipped_file", "info", "bad-0/core.12345", "not a Kafka segment or sidecar file"),
        ("skipped_file", "info", "bad-0/server.log", "not a segment (its name is not a 20-digit base offset)"),
    ]
    assert result.summary["files_skipped"] == 3 and result.summary["segments_unreadable"] == 0


def unreadable(result: ScanResult) -> list[tuple]:
    return [(f.segment, f.details["reason"]) for f in result.findings if f.check == "unreadable_segment"]


def test_a_segment_that_is_a_folder_is_an_unreadable_segment(scene):
    (segment(scene.close(), base=5)).mkdir()
    result = scene.scan(damaged_paths=[])
    assert unreadable(result) == [(f"bad-0/{5:020d}.log", "a folder, not a segment or sidecar file")]
    assert [(f.check, f.severity, f.topic, f.partition) for f in damaged(result)] == [
        ("unreadable_segment", "error", "bad", 0)
    ]


def test_a_segment_that_is_a_fifo_is_unreadable_not_opened(scene):
    os.mkfifo(segment(scene.close()))
    result = scene.scan(damaged_paths=[])  # opening the FIFO would block forever
    assert unreadable(result) == [(f"bad-0/{0:020d}.log", "not a regular file")]
    assert result.summary["segments_unreadable"] == 1


ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _deny(monkeypatch, module, target: Path) -> None:
    """Make ``open(target)`` in ``module`` fail as an unreadable file does (root reads anything)."""
    real_open = builtins.open

    def guarded(path, *args, **kwargs):
        if os.fspath(path) == str(target):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(module, "open", guarded, raising=False)


@pytest.mark.parametrize("how", ["chmod", "simulated"])
def test_an_unreadable_segment_is_an_error_finding(scene, monkeypatch, how):
    w = scene.partition("bad")
    w.append(BatchSpec(records=records(["a"])))
    w.roll()
    w.append(BatchSpec(records=records(["b"])))
    scene.close()
    locked = scene.root / "bad-0" / f"{0:020d}.log"
    if how == "chmod":
        if ROOT:
            pytest.skip("root reads files whatever their mode; the 'simulated' variant covers the path")
        locked.chmod(0)
    else:
        _deny(monkeypatch, local_file, locked)
    try:
        healthy = audit(scene.alone)
        result = audit(scene.root)
    finally:
        locked.chmod(0o644)
    assert findings_of(result) == findings_of(healthy)
    # The readable segment after it is audited in full; the locked one is an error.
    assert unreadable(result) == [(f"bad-0/{0:020d}.log", "cannot read (Permission denied)")]
    assert [f.check for f in damaged(result)] == ["unreadable_segment"]
    assert result.summary["batches"] == healthy.summary["batches"] + 1
    size = locked.stat().st_size
    assert result.summary["segment_bytes"][f"bad-0/{0:020d}.log"] == {"found": size, "read": 0}
    assert result.summary["bytes_found"] == result.summary["bytes_read"] + size


def test_an_unreadable_sidecar_is_a_finding_of_its_check(scene, monkeypatch):
    w = scene.partition("bad")
    for i in range(40):
        w.append(BatchSpec(records=records([f"value-{i}" * 20])))
    scene.close()
    index = scene.root / "bad-0" / f"{0:020d}.index"
    assert index.stat().st_size > 0
    _deny(monkeypatch, storage_context, index)
    result = scene.scan()
    (finding,) = damaged(result)
    assert finding.check == "index_mismatch" and finding.details["unreadable"] is True


def test_broken_symlinks_and_symlink_loops(scene):
    folder = scene.close().root / "bad-0"
    folder.mkdir()
    (folder / f"{0:020d}.log").symlink_to(folder / "gone.log")
    (folder / "loop-a").symlink_to(folder / "loop-b")
    (folder / "loop-b").symlink_to(folder / "loop-a")
    (folder / "back-up").symlink_to(scene.root)  # a folder loop
    (scene.root / "clicks-0" / "self").symlink_to(scene.root / "clicks-0")
    result = audit(scene.root)
    assert findings_of(result, ("ledger", "legacy", "witness")) == findings_of(audit(scene.alone), ("ledger", "legacy", "witness"))
    # A link named like a segment that leads nowhere: a segment not read, an error.
    assert unreadable(result) == [(f"bad-0/{0:020d}.log", "broken symbolic link (No such file or directory)")]
    skipped = {f.segment: f.details["reason"] for f in result.findings if f.check == "skipped_file"}
    assert skipped == {
        "bad-0/back-up": "symbolic link to a folder already scanned",
        "bad-0/loop-a": "broken symbolic link (Too many levels of symbolic links)",
        "bad-0/loop-b": "broken symbolic link (Too many levels of symbolic links)",
        "clicks-0/self": "symbolic link to a folder already scanned",
    }


@pytest.mark.parametrize("name", ["weird", "orders-", "orders-99999999999999999999", "-3"])
def test_partition_folders_with_unexpected_names(scene, name):
    w = scene.partition("bad")
    w.append(BatchSpec(records=records(["a"])))
    w.append(BatchSpec(records=records(["b"]), faults=Faults(bad_crc=True)))
    scene.close()
    (scene.root / "bad-0").rename(scene.root / name)
    result = scene.scan()
    assert [(f.check, f.topic, f.partition) for f in damaged(result)] == [("crc_mismatch", name, -1)]
    assert any(name in n and "not <topic>-<partition>" in n for n in result.notes)


def test_a_segment_name_past_long_max_value_is_an_unreadable_segment(scene):
    # LogLoader reads every *.log of a partition folder and parses its name with Long.parseLong
    # (LogFileUtils.offsetFromFileName): 20 digits above Long.MAX_VALUE throw, and the broker
    # cannot load the partition. The file is not audited, so the scan must not say clean.
    folder = scene.close().root / "bad-0"
    folder.mkdir()
    (folder / "99999999999999999999.log").write_bytes(encode_batch(BatchSpec(records=records(["x"]))))
    (folder / "99999999999999999998.log").symlink_to(folder / "gone")
    result = scene.scan(damaged_paths=[])
    found = sorted((f.check, f.severity, f.segment, f.details["reason"]) for f in damaged(result))
    assert found == [
        ("unreadable_segment", "error", "bad-0/99999999999999999998.log", "broken symbolic link (No such file or directory)"),
        ("unreadable_segment", "error", "bad-0/99999999999999999999.log",
         "its 20-digit name is above Long.MAX_VALUE: a broker cannot load it "
         "(LogFileUtils.offsetFromFileName throws NumberFormatException)"),
    ]


# -- sidecar files ------------------------------------------------------------------------------


def _partition_with_sidecars(scene: Scene) -> Path:
    w = scene.partition("bad")
    p = Producer(500, transactional=True)
    for i in range(30):
        p.begin()
        p.send(w, records([f"value-{i}" * 30]))
        p.abort() if i % 3 == 0 else p.commit()
    scene.close()
    folder = scene.root / "bad-0"
    for suffix in (".index", ".timeindex", ".txnindex", ".snapshot"):
        assert list(folder.glob(f"*{suffix}")), suffix
    return folder


@pytest.mark.parametrize(
    "suffix, check",
    [(".index", "index_mismatch"), (".timeindex", "index_mismatch"), (".txnindex", "txn_index_mismatch"), (".snapshot", "snapshot_mismatch")],
)
@pytest.mark.parametrize("damage", ["garbage", "truncated", "swapped"])
def test_corrupt_sidecars_are_findings_and_the_log_is_still_audited(scene, suffix, check, damage):
    folder = _partition_with_sidecars(scene)
    (target,) = folder.glob(f"*{suffix}")
    data = target.read_bytes()
    if damage == "garbage":
        new = hashlib.sha256(data).digest() * 3 + b"\x07"
    elif damage == "truncated":
        new = data[: len(data) - 5]
    else:
        donor = {".index": ".timeindex", ".timeindex": ".txnindex", ".txnindex": ".index", ".snapshot": ".txnindex"}[suffix]
        (source,) = folder.glob(f"*{donor}")
        new = source.read_bytes()[:-1]
    target.write_bytes(new)
    result = scene.scan()
    checks = {f.check for f in damaged(result)}
    assert check in checks
    assert checks <= {"index_mismatch", "txn_index_mismatch", "snapshot_mismatch"}
    assert result.summary["batches"] == audit(scene.alone).summary["batches"] + 60


def test_a_garbage_index_gives_a_bounded_number_of_findings(scene):
    from kafka_audit.rules.partition.index_check import MAX_FINDINGS_PER_INDEX

    folder = _partition_with_sidecars(scene)
    (index,) = folder.glob("*.index")
    garbage = hashlib.shake_256(b"garbage index").digest(80_000)  # 10,000 entries, none zero
    index.write_bytes(garbage)
    result = scene.scan()
    found = [f for f in damaged(result) if f.details.get("index_file", "").endswith(".index")]
    assert found and all(f.check == "index_mismatch" for f in found)
    # Read no further than an entry per batch (+1), each of those a mismatch, and the rest named.
    (too_many,) = [f for f in found if "max_entries" in f.details]
    batches = too_many.details["max_entries"] - 1
    assert len(found) == min(batches + 1, MAX_FINDINGS_PER_INDEX + 1) + 1


def test_a_segment_whose_read_fails_is_an_unreadable_segment(scene, monkeypatch):
    w = scene.partition("bad")
    w.append(BatchSpec(records=records(["a"])))
    scene.close()
    real_preadv = os.preadv

    def failing(fd, buffers, offset):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(f"bad-0/{0:020d}.log"):
            raise OSError(errno.EIO, "Input/output error")
        return real_preadv(fd, buffers, offset)

    monkeypatch.setattr(local_file.os, "preadv", failing)
    healthy = audit(scene.alone)
    result = audit(scene.root)
    assert findings_of(result) == findings_of(healthy)
    (finding,) = [f for f in damaged(result) if f.check == "unreadable_segment"]
    assert "Input/output error" in finding.message and finding.details["unread_bytes"] == 69


def test_sidecars_that_disagree_with_the_log(scene):
    folder = _partition_with_sidecars(scene)
    (index,) = folder.glob("*.index")
    entries = bytearray(index.read_bytes())
    struct.pack_into(">ii", entries, 0, 3, 17)  # an offset at a position where no batch starts
    index.write_bytes(entries)
    (txn,) = folder.glob("*.txnindex")
    txn.write_bytes(struct.pack(">hqqqq", 0, 999, 5, 6, 7))
    result = scene.scan()
    found = {(f.check, f.details.get("reason")) for f in damaged(result)}
    assert ("index_mismatch", None) in found
    assert ("txn_index_mismatch", "unknown_index_entry") in found
    assert ("txn_index_mismatch", "missing_index_entry") in found


@pytest.mark.parametrize(
    "text",
    [b"\x00\xff\xfe garbage", b"0\n2\nbad-0 0 notanumber\n", b"7\n", b"0\n1\nbad 0 99999999999999999999999\n", b""],
)
def test_a_checkpoint_file_with_garbage(scene, text):
    w = scene.partition("bad")
    w.append(BatchSpec(records=records(["a"])))
    scene.close()
    (scene.root / "log-start-offset-checkpoint").write_bytes(text)
    (scene.root / "recovery-point-offset-checkpoint").write_bytes(text)
    (scene.root / "bad-0" / "leader-epoch-checkpoint").write_bytes(text)
    result = scene.scan()
    assert damaged(result) == []
    if text:
        assert any("log-start-offset-checkpoint" in n for n in result.notes)


# -- never written to ---------------------------------------------------------------------------


def _listing(root: Path) -> dict:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            info = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() else None
            out[str(path.relative_to(root))] = (info.st_mode, info.st_size, info.st_mtime_ns, digest)
    return out


def test_the_audited_dir_is_left_byte_for_byte_and_mtime_unchanged(scene):
    w = scene.partition("bad")
    w.append(BatchSpec(records=records(["a"])))
    w.append(BatchSpec(records=records(["b"]), faults=Faults(zero_tail=100)))
    scene.close()
    (scene.root / "bad-0" / f"{0:020d}.snapshot").write_bytes(b"garbage")
    before = _listing(scene.root)
    root_mtime = scene.root.stat().st_mtime_ns
    result = scene.scan()
    assert damaged(result)
    assert _listing(scene.root) == before
    assert scene.root.stat().st_mtime_ns == root_mtime


# -- regression tests for the crashes bench/fuzz.py found ----------------------------------------


def _snapshot(*entries: tuple) -> bytes:
    """A valid ``.snapshot`` file (version 1, CRC-32C) of ``(pid, epoch, last_seq, last_offset,
    offset_delta, timestamp, coordinator_epoch, txn_first_offset)`` entries."""
    body = struct.pack(">i", len(entries)) + b"".join(struct.pack(">qhiqiqiq", *e) for e in entries)
    return struct.pack(">hI", 1, crc32c.crc32c(body)) + body


@pytest.mark.parametrize(
    "entry",
    [
        # fuzz seed 2 case 166: a negative offset delta took the first sequence past 2^31-1
        (7, 0, 2**31 - 1, 10, -1, TS_BASE, 0, -1),
        # fuzz seed 3 case 609: lastOffset - offsetDelta past Long.MAX_VALUE
        (7, 0, 0, 2**63 - 1, -1, TS_BASE, 0, -1),
        (7, 0, 0, 0, 2**31 - 1, TS_BASE, 0, -1),
    ],
)
def test_regression_snapshot_entry_with_an_offset_delta_no_broker_writes(scene, entry):
    w = scene.partition("bad")
    w.append(BatchSpec(records=records(["a"]), producer_id=7, producer_epoch=0, base_sequence=0))
    scene.close()
    (scene.root / "bad-0" / f"{0:020d}.snapshot").write_bytes(_snapshot(entry))
    (scene.root / "bad-0" / f"{1:020d}.snapshot").write_bytes(_snapshot(entry))
    result = scene.scan()
    assert {f.check for f in damaged(result)} <= {"snapshot_mismatch", "out_of_order_sequence", "duplicate_sequence"}


@pytest.mark.parametrize(
    "line",
    [
        "bad 0 ²",  # isdigit() but not int(): "²" crashed the checkpoint reader
        "bad 0 --5",  # lstrip("-") took both signs off, int() then raised
        "bad 0 " + "9" * 5000,  # int() refuses more than 4300 digits
        "bad ² 5",
    ],
)
def test_regression_checkpoint_numbers_that_int_refuses(scene, line):
    w = scene.partition("bad")
    w.append(BatchSpec(records=records(["a"])))
    scene.close()
    (scene.root / "log-start-offset-checkpoint").write_text(f"0\n1\n{line}\n", encoding="utf-8")
    (scene.root / "bad-0" / "leader-epoch-checkpoint").write_text(f"0\n1\n{line.split(' ', 1)[1]}\n", encoding="utf-8")
    result = scene.scan()
    assert damaged(result) == []
    (note, *_) = [n for n in result.notes if "log-start-offset-checkpoint" in n and "Malformed line 3" in n]
    assert len(note) < 400  # a garbage line is quoted cut short


def test_regression_checkpoint_count_of_5000_digits(scene):
    scene.close()
    (scene.root / "log-start-offset-checkpoint").write_text("0\n" + "9" * 5000 + "\n", encoding="utf-8")
    result = scene.scan(damaged_paths=[])
    assert any("Expected 9999" in n for n in result.notes)


def test_regression_snapshot_name_of_digits_int_refuses():
    from kafka_audit.log.producer_snapshot import snapshot_offset_of

    assert snapshot_offset_of("/logs/t-0/²³.snapshot") is None
    assert snapshot_offset_of("/logs/t-0/00000000000000000042.snapshot") == 42


def test_the_fuzz_script_runs_and_reports_no_failure():
    """bench/fuzz.py stays runnable: a few cases, each in a forked child with a time limit."""
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "fuzz.py"), "--iterations", "6", "--seed", "7", "--timeout", "120"],
        capture_output=True,
        text=True,
        cwd=REPO, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1].endswith("seed 7: no failure")


def test_findings_of_one_check_are_listed_up_to_a_cap_then_counted(tmp_path: Path) -> None:
    """A segment of 1,200 batches with bad CRCs: 1,000 listed, one finding counts the other 200,
    and every batch is still walked and counted."""
    from kafka_audit.audit.segment_audit import MAX_FINDINGS_PER_CHECK

    with LogDirWriter(tmp_path) as d:
        w = d.partition("garbage", 0)
        for _ in range(MAX_FINDINGS_PER_CHECK + 200):
            w.append(BatchSpec(records=records(["x"]), faults=Faults(bad_crc=True)))
    result = audit_in_process(discover([str(tmp_path)]), ScanOptions())
    crc = [f for f in result.findings if f.check == "crc_mismatch"]
    assert len(crc) == MAX_FINDINGS_PER_CHECK + 1
    (summary,) = [f for f in crc if f.position is None]
    assert summary.details["more_findings"] == 200
    assert "200 more crc_mismatch findings" in summary.message
    assert result.summary["batches"] == MAX_FINDINGS_PER_CHECK + 200
