"""Fuzz the audit core with damaged copies of real and fixture segments (issue 7).

Each case copies one to three partition folders (from ``fixtures/`` and ``../shared/corpus/real/``)
into a fresh temporary log dir, damages them with a few random mutations, and runs the whole audit
core (:func:`kafka_audit.engines.local.audit_in_process`, no Spark) on it in a forked child process with a
time limit. The originals are only ever read.

Mutations: byte flips (raw, or with the batch CRC recomputed so the damage reaches the record
decoders), flips inside the decompressed records of a compressed batch (recompressed, CRC fixed),
runs of 0xFF (varints that never end), truncation, splices of other segments, zeroed ranges,
extreme values in the size/count/offset/producer fields of a batch header, duplicated and
reordered batches, zero-filled and sparse tails, garbage, truncated and swapped sidecars
(``.index``, ``.timeindex``, ``.txnindex``, ``.snapshot``), garbage checkpoints, and structural
damage (a segment replaced by a folder, symbolic link loops, odd folder names).

A case fails when the audit raises (a crash), runs past ``--timeout`` (a hang), yields a finding
that breaks the report contract (unknown check id, a segment position outside the file), or
writes to the audited dir. Failures are printed with their traceback and the command that
replays the case; the exit code is then 1.

    python bench/fuzz.py --iterations 5000 --seed 1 --jobs 8
    python bench/fuzz.py --seed 1 --case 1234 --keep /tmp/case   # replay one case, keep its dir
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import random
import shutil
import struct
import sys
import tempfile
import time
import traceback
import zlib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import crc32c  # noqa: E402

from kafka_audit.record.compression import DecompressionError, compress, decompress  # noqa: E402
from kafka_audit.record.record_batch import (  # noqa: E402
    HEADER_SIZE_UP_TO_MAGIC,
    LEGACY_CRC_OFFSET,
    LEGACY_MAGIC_OFFSET,
    LEGACY_RECORD_OVERHEAD_V0,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_VALUE_V2,
    SIZE_OFFSET,
    V2_ATTRIBUTES_OFFSET,
    V2_BASE_SEQUENCE_OFFSET,
    V2_BASE_TIMESTAMP_OFFSET,
    V2_BATCH_LENGTH_OVERHEAD,
    V2_CRC_OFFSET,
    V2_LAST_OFFSET_DELTA_OFFSET,
    V2_LENGTH_OFFSET,
    V2_MAGIC_OFFSET,
    V2_MAX_TIMESTAMP_OFFSET,
    V2_PARTITION_LEADER_EPOCH_OFFSET,
    V2_PRODUCER_EPOCH_OFFSET,
    V2_PRODUCER_ID_OFFSET,
    V2_RECORD_BATCH_OVERHEAD,
    V2_RECORDS_COUNT_OFFSET,
)

FIXTURES = REPO / "fixtures"
CORPUS = REPO.parent / "shared" / "corpus" / "real"
LOG_DIR_FILES = (
    "log-start-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "replication-offset-checkpoint",
    "cleaner-offset-checkpoint",
    "meta.properties",
)
I32_EXTREMES = (0, 1, -1, 13, 14, 25, 26, 48, 49, 50, 61, 2**31 - 1, 2**31 - 2, -(2**31), 2**16, 2**24)
I64_EXTREMES = (0, -1, 1, 2**63 - 1, -(2**63), 2**31, 2**62)
I16_EXTREMES = (0, -1, 1, 2**15 - 1, -(2**15), 7, 0x27, 0x3F, 0x0F)


# -- sources ------------------------------------------------------------------------------------


def partition_sources() -> list[Path]:
    """Every folder holding a ``.log`` file under the fixtures and the real-broker corpus."""
    found = set()
    for root in (FIXTURES, CORPUS):
        if root.is_dir():
            for log in root.rglob("*.log"):
                found.add(log.parent)
    return sorted(found)


def copy_partition(source: Path, target_root: Path, name: str) -> Path:
    """Copy a partition folder (and its log dir's checkpoint files once) by reading and writing
    bytes: the copies are writable whatever the originals' modes, the originals untouched."""
    target = target_root / name
    target.mkdir(parents=True)
    for entry in sorted(source.iterdir()):
        if entry.is_file():
            (target / entry.name).write_bytes(entry.read_bytes())
    for extra in LOG_DIR_FILES:
        src = source.parent / extra
        dst = target_root / extra
        if src.is_file() and not dst.exists():
            dst.write_bytes(src.read_bytes())
    return target


# -- batch framing (independent of the code under test) ------------------------------------------


def batch_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each batch/top-level message while the ``offset i64, size i32`` framing holds."""
    spans = []
    pos = 0
    while pos + HEADER_SIZE_UP_TO_MAGIC <= len(data):
        (size,) = struct.unpack_from(">i", data, pos + SIZE_OFFSET)
        if size < LEGACY_RECORD_OVERHEAD_V0 or pos + LOG_OVERHEAD + size > len(data):
            break
        spans.append((pos, pos + LOG_OVERHEAD + size))
        pos += LOG_OVERHEAD + size
    return spans


def fix_crc(buf: bytearray, start: int, end: int) -> None:
    """Recompute the CRC of the batch/message at ``start`` (v2: CRC-32C, v0/v1: CRC-32)."""
    if end - start < HEADER_SIZE_UP_TO_MAGIC:
        return
    magic = buf[start + MAGIC_OFFSET]
    if magic == MAGIC_VALUE_V2 and end - start >= V2_RECORD_BATCH_OVERHEAD:
        crc = crc32c.crc32c(bytes(buf[start + V2_ATTRIBUTES_OFFSET : end]))
        struct.pack_into(">I", buf, start + V2_CRC_OFFSET, crc)
    elif magic in (0, 1):
        crc = zlib.crc32(bytes(buf[start + LEGACY_MAGIC_OFFSET : end]))
        struct.pack_into(">I", buf, start + LEGACY_CRC_OFFSET, crc)


# -- mutations ----------------------------------------------------------------------------------


@dataclass
class Case:
    root: Path
    rng: random.Random
    log: list[str]

    def files(self, suffix: str | None = None) -> list[Path]:
        out = []
        for path in sorted(self.root.rglob("*")):
            if path.is_file() and not path.is_symlink() and (suffix is None or path.name.endswith(suffix)):
                out.append(path)
        return out

    def pick(self, suffix: str | None = None) -> Path | None:
        files = self.files(suffix)
        return self.rng.choice(files) if files else None

    def pick_bytes(self, suffix: str | None = None) -> tuple[Path, bytearray] | tuple[None, None]:
        """A random file of the case and its bytes, or (None, None) when there is no such file
        or it is empty."""
        path = self.pick(suffix)
        data = bytearray(path.read_bytes()) if path else None
        return (path, data) if data else (None, None)

    def note(self, text: str) -> None:
        self.log.append(text)


def _rand_bytes(rng: random.Random, n: int) -> bytes:
    return bytes(rng.getrandbits(8) for _ in range(n))


def m_flip(case: Case) -> None:
    path, data = case.pick_bytes(".log")
    if path is None:
        return
    for _ in range(case.rng.randint(1, 8)):
        at = case.rng.randrange(len(data))
        data[at] ^= case.rng.randint(1, 255)
    path.write_bytes(data)
    case.note(f"flip bytes in {path.name}")


def m_flip_fix_crc(case: Case) -> None:
    """Damage inside a batch with its CRC recomputed: the decoders behind the CRC see it."""
    path, data = case.pick_bytes(".log")
    if path is None:
        return
    spans = batch_spans(bytes(data))
    if not spans:
        return
    start, end = case.rng.choice(spans)
    first = start + (V2_ATTRIBUTES_OFFSET if data[start + V2_MAGIC_OFFSET] == MAGIC_VALUE_V2 else 16)
    if first >= end:
        return
    for _ in range(case.rng.randint(1, 4)):
        at = case.rng.randrange(first, end)
        data[at] = case.rng.choice((0x00, 0xFF, 0x7F, 0x80, case.rng.getrandbits(8)))
    fix_crc(data, start, end)
    path.write_bytes(data)
    case.note(f"flip inside a batch at {start} of {path.name}, CRC fixed")


def m_ff_run(case: Case) -> None:
    """A run of 0xFF in the records of a batch (a varint that never ends), CRC fixed."""
    path, data = case.pick_bytes(".log")
    if path is None:
        return
    spans = [
        s
        for s in batch_spans(bytes(data))
        if data[s[0] + V2_MAGIC_OFFSET] == MAGIC_VALUE_V2 and s[1] - s[0] > V2_RECORD_BATCH_OVERHEAD + 1
    ]
    if not spans:
        return
    start, end = case.rng.choice(spans)
    at = case.rng.randrange(start + V2_RECORD_BATCH_OVERHEAD, end)
    n = case.rng.randint(1, min(64, end - at))
    data[at : at + n] = b"\xff" * n
    fix_crc(data, start, end)
    path.write_bytes(data)
    case.note(f"0xFF run of {n} at {at} in {path.name}, CRC fixed")


def m_recompress(case: Case) -> None:
    """Damage the decompressed records of a compressed batch, recompress (maybe with another
    codec, or as a bomb), fix sizes and CRC."""
    path = case.pick(".log")
    if not path:
        return
    data = bytes(path.read_bytes())
    rng = case.rng
    spans = batch_spans(data)
    if not spans:
        return
    start, end = rng.choice(spans)
    magic = data[start + V2_MAGIC_OFFSET]
    if magic == MAGIC_VALUE_V2 and end - start >= V2_RECORD_BATCH_OVERHEAD:
        header = bytearray(data[start : start + V2_RECORD_BATCH_OVERHEAD])
        codec = struct.unpack_from(">h", header, V2_ATTRIBUTES_OFFSET)[0] & 7
        payload = data[start + V2_RECORD_BATCH_OVERHEAD : end]
        try:
            raw = decompress(codec, payload, 2, 1 << 26) if codec else payload
        except DecompressionError:
            return
        raw = bytearray(raw)
        choice = rng.random()
        if choice < 0.15:
            raw = bytearray(rng.choice((1 << 20, 1 << 22, 70 << 20)))  # zeros: a bomb-ish payload
        elif raw:
            for _ in range(rng.randint(1, 4)):
                raw[rng.randrange(len(raw))] = rng.getrandbits(8)
        new_codec = rng.choice((1, 2, 3, 4)) if rng.random() < 0.7 else codec or 1
        packed = compress(new_codec, bytes(raw), 2)
        attributes = (struct.unpack_from(">h", header, V2_ATTRIBUTES_OFFSET)[0] & ~7) | new_codec
        struct.pack_into(">h", header, V2_ATTRIBUTES_OFFSET, attributes)
        struct.pack_into(">i", header, V2_LENGTH_OFFSET, V2_BATCH_LENGTH_OVERHEAD + len(packed))
        body = bytearray(header) + packed
        fix_crc(body, 0, len(body))
        new = data[:start] + bytes(body) + data[end:]
    elif magic in (0, 1):
        attributes = data[start + 17]
        codec = attributes & 7
        # key/value of the wrapper
        cursor = start + 18 + (8 if magic == 1 else 0)
        (klen,) = struct.unpack_from(">i", data, cursor)
        cursor += 4 + max(klen, 0)
        if cursor + 4 > end:
            return
        (vlen,) = struct.unpack_from(">i", data, cursor)
        value = data[cursor + 4 : cursor + 4 + max(vlen, 0)]
        if codec:
            try:
                inner = bytearray(decompress(codec, value, magic, 1 << 26))
            except DecompressionError:
                return
        else:
            inner = bytearray(data[start:end])  # wrap the lone message: maybe nested compression
        if inner and rng.random() < 0.7:
            at = rng.randrange(len(inner))
            inner[at] = rng.getrandbits(8)
        new_codec = rng.choice((1, 2, 3))
        packed = compress(new_codec, bytes(inner), magic)
        head = data[start + 16 : start + 18 + (8 if magic == 1 else 0)]
        body = bytes((head[0], (head[1] & ~7) | new_codec)) + head[2:] + struct.pack(">i", -1)
        body += struct.pack(">i", len(packed)) + packed
        message = bytearray(data[start : start + 8] + struct.pack(">iI", 4 + len(body), 0) + body)
        fix_crc(message, 0, len(message))
        new = data[:start] + bytes(message) + data[end:]
    else:
        return
    path.write_bytes(new)
    case.note(f"recompressed batch at {start} of {path.name}")


def m_truncate(case: Case) -> None:
    path = case.pick(".log")
    if not path:
        return
    data = path.read_bytes()
    if not data:
        return
    spans = batch_spans(data)
    if spans and case.rng.random() < 0.5:
        start, end = case.rng.choice(spans)
        cut = max(0, min(len(data), end + case.rng.randint(-20, 3)))
    else:
        cut = case.rng.randrange(len(data))
    path.write_bytes(data[:cut])
    case.note(f"truncate {path.name} at {cut}")


def m_splice(case: Case) -> None:
    path = case.pick(".log")
    other = case.pick()
    if not path or not other:
        return
    data = path.read_bytes()
    donor = other.read_bytes()
    if not donor:
        return
    a = case.rng.randrange(len(donor))
    b = min(len(donor), a + case.rng.randint(1, 4096))
    at = case.rng.randint(0, len(data))
    new = data[:at] + donor[a:b] + data[at:] if case.rng.random() < 0.5 else data[:at] + donor[a:b] + data[at + (b - a):]
    path.write_bytes(new)
    case.note(f"splice {other.name}[{a}:{b}] into {path.name} at {at}")


def m_zero_range(case: Case) -> None:
    path, data = case.pick_bytes(".log")
    if path is None:
        return
    a = case.rng.randrange(len(data))
    b = min(len(data), a + case.rng.randint(1, 1 << 14))
    data[a:b] = bytes(b - a)
    path.write_bytes(data)
    case.note(f"zero {path.name}[{a}:{b}]")


# (offset in the batch, struct format, extremes, covered by the CRC)
_V2_FIELDS = (
    (0, ">q", I64_EXTREMES, False),  # baseOffset
    (V2_LENGTH_OFFSET, ">i", I32_EXTREMES, False),
    (V2_PARTITION_LEADER_EPOCH_OFFSET, ">i", I32_EXTREMES, False),
    (V2_MAGIC_OFFSET, ">b", (0, 1, 2, 3, -1, 127), False),
    (V2_ATTRIBUTES_OFFSET, ">h", I16_EXTREMES, True),
    (V2_LAST_OFFSET_DELTA_OFFSET, ">i", I32_EXTREMES, True),
    (V2_BASE_TIMESTAMP_OFFSET, ">q", I64_EXTREMES, True),
    (V2_MAX_TIMESTAMP_OFFSET, ">q", I64_EXTREMES, True),
    (V2_PRODUCER_ID_OFFSET, ">q", I64_EXTREMES, True),
    (V2_PRODUCER_EPOCH_OFFSET, ">h", I16_EXTREMES, True),
    (V2_BASE_SEQUENCE_OFFSET, ">i", I32_EXTREMES, True),
    (V2_RECORDS_COUNT_OFFSET, ">i", I32_EXTREMES, True),
)
_LEGACY_FIELDS = (
    (0, ">q", I64_EXTREMES, False),
    (8, ">i", I32_EXTREMES, False),
    (16, ">b", (0, 1, 2, 3, -1), True),
    (17, ">B", (0, 1, 2, 3, 4, 5, 7, 8, 0x0B, 0xFF), True),
)


def m_extreme_field(case: Case) -> None:
    path, data = case.pick_bytes(".log")
    if path is None:
        return
    spans = batch_spans(bytes(data))
    if not spans:
        return
    start, end = case.rng.choice(spans)
    v2 = data[start + V2_MAGIC_OFFSET] == MAGIC_VALUE_V2 and end - start >= V2_RECORD_BATCH_OVERHEAD
    fields = _V2_FIELDS if v2 else _LEGACY_FIELDS
    at, fmt, values, covered = case.rng.choice(fields)
    value = case.rng.choice(values) if case.rng.random() < 0.85 else None
    size = struct.calcsize(fmt)
    if start + at + size > end:
        return
    if value is None:
        data[start + at : start + at + size] = _rand_bytes(case.rng, size)
    else:
        struct.pack_into(fmt, data, start + at, value)
    if covered or case.rng.random() < 0.5:
        fix_crc(data, start, end)
    path.write_bytes(data)
    case.note(f"field +{at} of batch at {start} in {path.name} set to {value}")


def m_duplicate(case: Case) -> None:
    path = case.pick(".log")
    if not path:
        return
    data = path.read_bytes()
    spans = batch_spans(data)
    if not spans:
        return
    start, end = case.rng.choice(spans)
    chunk = data[start:end]
    kind = case.rng.random()
    if kind < 0.4:
        new = data[:end] + chunk + data[end:]
    elif kind < 0.7:
        new = data + chunk
    else:
        # swap two batches
        s2, e2 = case.rng.choice(spans)
        if (s2, e2) == (start, end):
            return
        (a0, a1), (b0, b1) = sorted([(start, end), (s2, e2)])
        new = data[:a0] + data[b0:b1] + data[a1:b0] + data[a0:a1] + data[b1:]
    path.write_bytes(new)
    case.note(f"duplicate/swap batch at {start} in {path.name}")


def m_tail(case: Case) -> None:
    path = case.pick(".log")
    if not path:
        return
    size = path.stat().st_size
    if case.rng.random() < 0.3:
        # sparse preallocated tail (up to 512 MiB, nothing written)
        grow = case.rng.choice((1 << 20, 64 << 20, 512 << 20))
        with open(path, "r+b") as handle:
            handle.truncate(size + grow)
    else:
        with open(path, "ab") as handle:
            handle.write(bytes(case.rng.randint(1, 70000)))
    case.note(f"zero tail on {path.name}")


def m_sidecar(case: Case) -> None:
    rng = case.rng
    kinds = (".index", ".timeindex", ".txnindex", ".snapshot")
    path = case.pick(rng.choice(kinds)) or case.pick(".log")
    if not path:
        return
    segment = path.with_suffix(".log")
    choice = rng.random()
    if path.suffix == ".log":
        # give the segment a sidecar it did not have
        target = path.with_suffix(rng.choice(kinds[:3]))
        target.write_bytes(_rand_bytes(rng, rng.choice((0, 3, 8, 12, 34, 100))))
        case.note(f"new garbage {target.name}")
        return
    data = bytearray(path.read_bytes())
    if choice < 0.25 and data:
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.getrandbits(8)
    elif choice < 0.45:
        data = data[: rng.randint(0, len(data))]
    elif choice < 0.6:
        data = bytearray(_rand_bytes(rng, rng.randint(0, 200)))
    elif choice < 0.75:
        other = case.pick(rng.choice(kinds + (".log",)))
        if other is not None:
            data = bytearray(other.read_bytes())
    elif choice < 0.85 and path.suffix == ".snapshot":
        # a snapshot whose entry count is absurd but whose CRC holds
        count = rng.choice((2**31 - 1, -1, 1000000, 3))
        body = struct.pack(">i", count) + bytes(data[10:])
        data = bytearray(struct.pack(">hI", 1, crc32c.crc32c(body)) + body)
    else:
        # entries with extreme values
        data = bytearray()
        for _ in range(rng.randint(1, 5)):
            if path.suffix == ".index":
                data += struct.pack(">ii", rng.choice(I32_EXTREMES), rng.choice(I32_EXTREMES))
            elif path.suffix == ".timeindex":
                data += struct.pack(">qi", rng.choice(I64_EXTREMES), rng.choice(I32_EXTREMES))
            elif path.suffix == ".txnindex":
                data += struct.pack(">hqqqq", 0, *(rng.choice(I64_EXTREMES) for _ in range(4)))
        if path.suffix == ".snapshot":
            body = struct.pack(">i", 1) + struct.pack(
                ">qhiqiqiq",
                *(rng.choice(v) for v in (I64_EXTREMES, I16_EXTREMES, I32_EXTREMES, I64_EXTREMES,
                                           I32_EXTREMES, I64_EXTREMES, I32_EXTREMES, I64_EXTREMES)),
            )
            data = bytearray(struct.pack(">hI", 1, crc32c.crc32c(body)) + body)
    path.write_bytes(bytes(data))
    case.note(f"damaged sidecar {path.name} (segment {segment.name})")


def m_checkpoint(case: Case) -> None:
    rng = case.rng
    name = rng.choice(LOG_DIR_FILES + ("leader-epoch-checkpoint",))
    folders = [p for p in case.root.iterdir() if p.is_dir()]
    where = case.root if name != "leader-epoch-checkpoint" or not folders else rng.choice(folders)
    topics = [p.name.rsplit("-", 1) for p in folders if "-" in p.name] or [["t", "0"]]
    lines = ["0", str(rng.choice((1, 2, -1, 99, 2**40, "²", "9" * 5000)))]
    for _ in range(rng.randint(0, 4)):
        topic, part = rng.choice(topics)
        lines.append(
            rng.choice(
                (
                    f"{topic} {part} {rng.choice(I64_EXTREMES)}",
                    f"{topic} {part} 99999999999999999999999",
                    f"{topic} 99999999999999 5",
                    f"{topic} {part}",
                    "\x00\xff garbage",
                    f"{topic} {part} {rng.choice(['²', '--5', '٣', '9' * 5000, '-', '+7'])}",
                    f"{rng.choice(I32_EXTREMES)} {rng.choice(I64_EXTREMES)}",
                )
            )
        )
    text = "\n".join(lines).encode("utf-8", errors="replace")
    if rng.random() < 0.3:
        text = _rand_bytes(rng, rng.randint(0, 100))
    (where / name).write_bytes(text)
    case.note(f"garbage {name}")


def m_structure(case: Case) -> None:
    rng = case.rng
    choice = rng.random()
    folders = [p for p in case.root.iterdir() if p.is_dir() and not p.is_symlink()]
    if not folders:
        return
    folder = rng.choice(folders)
    if choice < 0.2:
        (folder / f"{rng.randint(0, 10**6):020d}.log").mkdir()
        case.note("segment that is a folder")
    elif choice < 0.35:
        os.symlink("loop-a", folder / "loop-b")
        os.symlink("loop-b", folder / "loop-a")
        os.symlink("..", folder / "parent")
        case.note("symlink loops")
    elif choice < 0.5:
        os.symlink("missing.log", folder / f"{rng.randint(0, 10**6):020d}.log")
        case.note("broken symlink segment")
    elif choice < 0.65:
        new = folder.with_name(rng.choice(("weird", "t-", "-1", "t-99999999999999999999", "t-٣", "x.y-2.abc-delete")))
        if not new.exists():
            folder.rename(new)
            case.note(f"renamed folder to {new.name}")
    elif choice < 0.75:
        (folder / "99999999999999999999.log").write_bytes(_rand_bytes(rng, 100))
        case.note("base offset past Long.MAX_VALUE")
    elif choice < 0.85:
        (folder / f"{0:020d}.log.deleted").write_bytes(b"")
        (folder / "00000000000000000007.log").write_bytes(b"")
        case.note("empty segments")
    else:
        log = case.pick(".log")
        if log is not None:
            index = log.with_suffix(".index")
            if index.exists():
                index.unlink()
            index.mkdir()
            case.note("an index that is a folder")


MUTATIONS = (
    (m_flip, 3),
    (m_flip_fix_crc, 5),
    (m_ff_run, 2),
    (m_recompress, 3),
    (m_truncate, 2),
    (m_splice, 2),
    (m_zero_range, 1),
    (m_extreme_field, 5),
    (m_duplicate, 2),
    (m_tail, 1),
    (m_sidecar, 3),
    (m_checkpoint, 1),
    (m_structure, 1),
)


def build_case(seed: int, iteration: int, sources: list[Path], root: Path) -> list[str]:
    rng = random.Random(f"{seed}:{iteration}")
    case = Case(root, rng, [])
    picked = rng.sample(sources, k=min(len(sources), rng.randint(1, 3)))
    for number, source in enumerate(picked):
        name = source.name if not (root / source.name).exists() else f"{source.name.rsplit('-', 1)[0]}-{900 + number}"
        copy_partition(source, root, name)
        case.note(f"source {source.relative_to(REPO.parent)} as {name}")
    functions = [m for m, _ in MUTATIONS]
    weights = [w for _, w in MUTATIONS]
    for mutate in rng.choices(functions, weights, k=rng.randint(1, 4)):
        try:
            mutate(case)
        except OSError as exc:  # e.g. the same structural damage twice: the case goes on without it
            case.note(f"{mutate.__name__} not applied: {exc}")
    return case.log


# -- running one case ---------------------------------------------------------------------------


def tree_fingerprint(root: Path) -> dict[str, tuple]:
    """Name -> (kind, size, mtime_ns, sha256) of everything under ``root`` (links not followed)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            info = os.lstat(path)
            digest = None
            if os.path.isfile(path) and not os.path.islink(path) and info.st_size < (1 << 24):
                with open(path, "rb") as handle:
                    digest = hashlib.sha256(handle.read()).hexdigest()
            out[os.path.relpath(path, root)] = (info.st_mode, info.st_size, info.st_mtime_ns, digest)
    return out


def audit_case(root: str) -> tuple[list[str], dict[str, int]]:
    """Run the audit core; return contract violations and the findings per check (an exception
    propagates)."""
    from kafka_audit.audit.scan_options import ScanOptions
    from kafka_audit.engines.local import audit_in_process
    from kafka_audit.log.log_dir import discover
    from kafka_audit.record.batch_records import read_batch_records
    from kafka_audit.record.file_records import FileRecords
    from kafka_audit.record.record_batch import RecordBatch
    from kafka_audit.rules.catalogue import CHECKS

    problems = []
    discovery = discover([root])
    sizes = {s.display_path: s.size for p in discovery.partitions for s in p.segments}
    result = audit_in_process(discovery, ScanOptions(split_bytes=1 << 16))
    for finding in result.findings:
        if finding.check not in CHECKS:
            problems.append(f"unknown check {finding.check!r}")
        size = sizes.get(finding.segment)
        if (
            size is not None
            and finding.position is not None
            and "index_file" not in finding.details
            and not 0 <= finding.position <= size
        ):
            problems.append(f"{finding.check} at position {finding.position} outside {finding.segment} ({size} bytes)")
    # The dump path: every batch decoded with its data.
    for partition in discovery.partitions:
        for segment in partition.segments:
            try:
                records = FileRecords(segment.path)
            except OSError:
                continue
            with records:
                for item in records.batches():
                    if isinstance(item, RecordBatch):
                        read_batch_records(records.buffer, item, with_data=True)
    by_check: dict[str, int] = {}
    for finding in result.findings:
        by_check[finding.check] = by_check.get(finding.check, 0) + 1
    if result.notes:
        by_check["(note)"] = len(result.notes)
    return problems, by_check


def _child(root: str, conn) -> None:
    try:
        violations, by_check = audit_case(root)
        conn.send(("ok", violations, by_check))
    except BaseException as exc:  # report everything, even SystemExit/RecursionError
        conn.send(("crash", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
    finally:
        conn.close()


@dataclass
class Outcome:
    iteration: int
    status: str  # ok, crash, hang, violation, wrote
    detail: str = ""
    trace: str = ""
    steps: list[str] | None = None
    seconds: float = 0.0
    by_check: dict | None = None


def run_case(seed: int, iteration: int, sources: list[Path], timeout: float, keep: str | None) -> Outcome:
    root = Path(tempfile.mkdtemp(prefix=f"kafka-audit-fuzz-{seed}-{iteration}-")) if not keep else Path(keep)
    if keep:
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
    logdir = root / "logs"
    logdir.mkdir()
    started = time.monotonic()
    try:
        steps = build_case(seed, iteration, sources, logdir)
        before = tree_fingerprint(logdir)
        context = multiprocessing.get_context("fork")
        parent, child = context.Pipe(duplex=False)
        process = context.Process(target=_child, args=(str(logdir), child))
        process.start()
        child.close()
        if parent.poll(timeout):
            try:
                message = parent.recv()
            except EOFError:
                message = ("crash", f"child died with exit code {process.join() or process.exitcode}", "")
        else:
            process.kill()
            process.join()
            return Outcome(iteration, "hang", f"no result after {timeout} s", steps=steps,
                           seconds=time.monotonic() - started)
        process.join()
        elapsed = time.monotonic() - started
        if message[0] == "crash":
            return Outcome(iteration, "crash", message[1], message[2], steps, elapsed)
        if message[1]:
            return Outcome(iteration, "violation", "; ".join(message[1][:5]), steps=steps, seconds=elapsed)
        after = tree_fingerprint(logdir)
        if after != before:
            changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
            return Outcome(iteration, "wrote", f"the audit changed {changed[:5]}", steps=steps, seconds=elapsed)
        return Outcome(iteration, "ok", steps=steps, seconds=elapsed, by_check=message[2])
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0, help="first iteration number")
    parser.add_argument("--case", type=int, help="run only this iteration (replay a failure)")
    parser.add_argument("--keep", help="with --case: build the case in this folder and keep it")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case before it counts as a hang")
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once")
    parser.add_argument("--stats", action="store_true", help="print how many cases gave each check")
    args = parser.parse_args(argv)

    import kafka_audit.engines.local  # noqa: F401  (imported before any fork)

    sources = partition_sources()
    if not sources:
        print("fuzz: no source segments found", file=sys.stderr)
        return 2
    iterations = [args.case] if args.case is not None else list(range(args.start, args.start + args.iterations))
    keep = args.keep if args.case is not None else None
    print(f"fuzz: seed {args.seed}, {len(iterations)} case(s), {len(sources)} source partitions, {args.jobs} job(s)")
    failures: list[Outcome] = []
    seen: dict[str, int] = {}  # cases with at least one finding of each check
    started = time.monotonic()
    done = 0

    def report(outcome: Outcome) -> None:
        nonlocal done
        done += 1
        for check in outcome.by_check or {}:
            seen[check] = seen.get(check, 0) + 1
        if outcome.status != "ok":
            failures.append(outcome)
            print(f"\n=== {outcome.status.upper()} at iteration {outcome.iteration} (seed {args.seed}): {outcome.detail}")
            for step in outcome.steps or []:
                print(f"    {step}")
            if outcome.trace:
                print(outcome.trace.rstrip())
            print(f"    replay: python bench/fuzz.py --seed {args.seed} --case {outcome.iteration} --keep /tmp/fuzz-case")
            sys.stdout.flush()
        elif args.case is not None:
            print("ok:", *outcome.steps, sep="\n    ")
        if done % 250 == 0:
            print(f"fuzz: {done}/{len(iterations)} cases, {len(failures)} failure(s), {time.monotonic() - started:.0f} s")
            sys.stdout.flush()

    if args.jobs <= 1:
        for iteration in iterations:
            report(run_case(args.seed, iteration, sources, args.timeout, keep))
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(args.jobs) as pool:
            for outcome in pool.map(lambda i: run_case(args.seed, i, sources, args.timeout, None), iterations):
                report(outcome)

    if args.stats:
        print("cases with a finding of each check:")
        for check, n in sorted(seen.items(), key=lambda kv: -kv[1]):
            print(f"  {check:32} {n}")
    counts: dict[str, int] = {}
    for failure in failures:
        counts[failure.status] = counts.get(failure.status, 0) + 1
    print(
        f"fuzz: {done} case(s) in {time.monotonic() - started:.0f} s, seed {args.seed}: "
        + (", ".join(f"{n} {k}" for k, n in sorted(counts.items())) if counts else "no failure")
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
