"""Coverage-guided fuzzing (atheris, libFuzzer) of the compiled record screen and the pure-Python
decoders (issue 30 item 7), one harness for all of them.

Each input's first byte picks a target; the rest is its bytes:

  0 segment   iter_batches (the walk: framing, CRC) and, for every batch, read_batch_records
              (v2 records, v0/v1 wrappers, every codec) with and without data, held to the
              streamed reading (streamed_v2 / streamed_legacy: decompress_stream, StreamedRecords,
              StreamedLegacy) on the same bytes: the same records (prefixes), problems and view
  1 codec     decompress (codec and magic from the next two bytes) held to decompress_stream
              fed in odd pieces: the same output or the same error
  2 records   the compiled screen_records held to the pure-Python reference (screen_records_py)
  3 payload   the compiled screen_payload on every v2 batch of the bytes, held to the reference
              screen_payload_py
  4 text      dump's compiled record lines (_record_text.record_text) held to its Python loop
              (decode_records, then record_lines): the same text, or None where Python reports an error
  5 walk      the compiled batch walk (_batch_walk.walk, issue 34) on the bytes as a segment, its
              batches' CRCs made right first: its answer must hold together (make_walk_target); the
              differential test of the two walks is tests/test_batch_walk.py

An exception other than our own DecompressionError (which the decoders turn into Problem values)
is a crash; so is a disagreement between the two sides of a target (an AssertionError). Seeds:
every batch of fixtures/ and corpus/ (cut to at most --max-len bytes), for every target, and the
inputs that once failed (tests/support/fuzz_regressions.py).

    python bench/fuzz_atheris.py --runs 1000000               # libFuzzer's stats on stderr
    python bench/fuzz_atheris.py --runs 20000 --seconds 20    # what CI runs (tests/test_fuzz_atheris.py)
    python bench/fuzz_atheris.py --asan --runs 200000         # the extensions built with ASan/UBSan
    python bench/fuzz_atheris.py --asan --inputs crash-...    # run saved inputs once each

--asan builds both extensions sanitized (bench/sanitized_build.py: build/sanitized/<compiler>, with
clang also -fsanitize=fuzzer-no-link, so libFuzzer's cov/ft count the C code's edges), puts them
first on kafka_audit.record's path (checked: a stale or unsanitized module ends the run) and
re-runs this script with the sanitizer runtime preloaded (the interpreter is not instrumented).
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Set in the child of --asan: the dir of the sanitized extension modules it loads.
SANITIZED = "KAFKA_AUDIT_SANITIZED_RECORD_DIR"
# Batches of each segment of fixtures/ and corpus/ taken as seeds (its first ones).
SEEDS_PER_SEGMENT = 6


def _seeds(corpus: Path, max_len: int, limit: int) -> int:
    """Batches of fixtures/ and corpus/ as seeds of each target (at most ``max_len`` bytes, at
    most ``limit`` batches, taken evenly from all segments)."""
    from kafka_audit.record.file_records import iter_batches
    from kafka_audit.record.record_batch import MAGIC_VALUE_V2, RecordBatch
    from tests.support.fuzz_regressions import regression_inputs

    for name, data in regression_inputs().items():
        (corpus / f"regression-{name}").write_bytes(data)
    count = 0
    paths = sorted(p for root in ("fixtures", "corpus") for p in (REPO / root).rglob("*.log"))
    every = max(1, len(paths) * SEEDS_PER_SEGMENT // max(1, limit))
    for path in paths[::every]:
        if not path.is_file() or path.is_symlink():
            continue
        buf = path.read_bytes()
        whole = [b for b in itertools.islice(iter_batches(buf), SEEDS_PER_SEGMENT) if isinstance(b, RecordBatch)]
        ends = [b.position + b.size for b in whole if b.position + b.size <= max_len - 5]
        if ends:  # the walk target: the segment's first batches, whole
            (corpus / f"w{count}_5").write_bytes(bytes((5, 0, 0, 0, 0)) + buf[: max(ends)])
        for number, item in enumerate(iter_batches(buf)):
            if number >= SEEDS_PER_SEGMENT:
                break
            if not isinstance(item, RecordBatch) or item.size > max_len - 1:
                continue
            chunk = buf[item.position : item.position + item.size]
            for target in (0, 3):
                (corpus / f"s{count}_{target}").write_bytes(bytes((target,)) + chunk)
            count += 1
            if count % 50 == 0:  # the records and codec targets get a sample of payloads
                (corpus / f"s{count}_1").write_bytes(bytes((1, item.codec, item.magic)) + chunk[61:])
                (corpus / f"s{count}_2").write_bytes(bytes((2,)) + bytes(13) + chunk[61:])
            if count % 5 == 0 and item.magic == MAGIC_VALUE_V2:
                (corpus / f"s{count}_4").write_bytes(_text_seed(buf, item))
    return count


def _text_seed(buf: bytes, batch) -> bytes:
    """A text target input of ``batch``: its fields as the target reads them, its records inflated."""
    from kafka_audit.record.batch_records import v2_records_data
    from kafka_audit.record.compression import DecompressionError

    try:
        data = bytes(v2_records_data(buf, batch))
    except DecompressionError:
        data = buf[batch.position + 61 : batch.position + batch.size]
    fields = (batch.base_offset.to_bytes(8, "big", signed=True) + batch.base_timestamp.to_bytes(8, "big", signed=True)
              + (batch.base_sequence & 0xFFFFFFFF).to_bytes(4, "big") + ((batch.record_count or 0) & 0xFFFF).to_bytes(2, "big"))
    return bytes((4,)) + fields + bytes((1 | (2 if batch.timestamp_type == 1 else 0),)) + data


def make_walk_target() -> Callable[[bytes], None] | None:
    """Target 5, in both modes: the compiled batch walk (_batch_walk.walk) over the bytes as a
    segment, from a start, to a stop and a limit the input picks (also past the buffer's end), the
    CRC-32C of every batch it frames recomputed first (unless the input says not to: the walk would
    otherwise stop at the first mutated batch). Its answer must hold together: as many rows as it
    says, a position within [start, limit]. None where the walk is not built."""
    import crc32c

    try:
        from kafka_audit.record import _batch_walk  # type: ignore[attr-defined]
    except ImportError:
        return None
    from kafka_audit.record.batch_walk import ROW_BYTES
    from kafka_audit.record.byte_stream import STREAM_BOUND
    from kafka_audit.record.lz4_frame import LZ4_BLOCK_INTO
    from kafka_audit.record.record_screen import RecordScreen
    from kafka_audit.record.zstd_frame import ZSTD_DECOMPRESSOR

    def with_crcs(buf: bytearray, start: int) -> None:
        position = start
        while position >= 0 and position + 61 <= len(buf):
            end = position + 12 + int.from_bytes(buf[position + 8 : position + 12], "big", signed=True)
            if end < position + 61 or end > len(buf):
                return
            buf[position + 17 : position + 21] = crc32c.crc32c(bytes(buf[position + 21 : end])).to_bytes(4, "big")
            position = end

    def walk(data: bytes) -> None:
        if len(data) < 4:
            return
        flags, shift, cut, at = data[0], data[1] % 16, data[2], data[3]
        buf = bytearray(data[4:])
        start = at - 2 if flags & 8 else 0
        if not flags & 1:
            with_crcs(buf, start)
        limit = len(buf) - cut + 16 if flags & 16 else len(buf)
        stop = len(buf) - cut if flags & 32 else len(buf)
        create = RecordScreen(bool(flags & 2), 0 if flags & 4 else None, 1 << 42 if flags & 4 else None)
        append = RecordScreen(bool(flags & 64), None, 1 << 41 if flags & 128 else None)
        columns, count, position, want = _batch_walk.walk(
            bytes(buf), start, stop, limit, STREAM_BOUND >> shift, STREAM_BOUND >> (data[1] >> 4), create, append,
            LZ4_BLOCK_INTO, ZSTD_DECOMPRESSOR)
        assert len(columns) == count * ROW_BYTES, (len(columns), count)
        assert count == 0 or start <= position <= min(limit, len(buf)), (start, position, limit)

    return walk


def make_target() -> Callable[[bytes], None]:
    """The harness's one entry (an input's first byte picks the target), its modules imported
    here, where the caller instruments them."""
    from dataclasses import replace

    from kafka_audit.record import _record_screen, _record_text  # type: ignore[attr-defined]
    from kafka_audit.record.batch_records import max_decompressed_size, read_batch_records
    from kafka_audit.record.compression import DecompressionError, decompress, decompress_stream
    from kafka_audit.record.default_record import decode_records
    from kafka_audit.record.file_records import iter_batches
    from kafka_audit.record.record_batch import MAGIC_VALUE_V2, TIMESTAMP_TYPE_MASK, RecordBatch
    from kafka_audit.record.record_screen import RecordScreen, screen_payload
    from kafka_audit.record.stream_records import DATA_PREFIX
    from kafka_audit.record.streamed_batch import streamed_legacy, streamed_v2
    from kafka_audit.report.dump import _TIMESTAMP_TYPE_NAMES, record_lines
    from tests.support.record_screen_reference import screen_payload_py, screen_records_py

    def trimmed(records):
        return [replace(r, key=None if r.key is None else bytes(r.key[:DATA_PREFIX]),
                        value=None if r.value is None else bytes(r.value[:DATA_PREFIX]), headers=len(r.headers))
                for r in records]

    def segment(buf: bytes) -> None:
        read = lambda start, stop: buf[start:stop]  # noqa: E731
        for item in iter_batches(buf):
            if not isinstance(item, RecordBatch):
                continue
            for with_data in (False, True):
                whole = read_batch_records(buf, item, with_data)
                stream = streamed_v2 if item.magic == MAGIC_VALUE_V2 else streamed_legacy
                streamed = stream(buf, item, with_data, max_decompressed_size(item), read)
                assert trimmed(streamed.records) == trimmed(whole.records), "streamed records differ"
                assert streamed.problems == whole.problems, (streamed.problems, whole.problems)
                assert (streamed.batch or item) == (whole.batch or item)

    def codec(data: bytes) -> None:
        if len(data) < 2:
            return
        kind, magic, payload = data[0] % 8, data[1] % 3, data[2:]
        if kind == 0:
            return  # decompress_stream passes an uncompressed payload on; decompress has no codec 0
        cuts = sorted({(b * 7919) % (len(payload) + 1) for b in payload[:16]} | {0, len(payload)})
        pieces = [payload[a:b] for a, b in zip(cuts, cuts[1:])]
        try:
            whole: bytes | str = decompress(kind, payload, magic, 1 << 22)
        except DecompressionError as exc:
            whole = str(exc)
        try:
            streamed: bytes | str = b"".join(decompress_stream(kind, pieces, magic, 1 << 22))
        except DecompressionError as exc:
            streamed = str(exc)
        if isinstance(whole, bytes) or isinstance(streamed, bytes):
            assert whole == streamed, "decompress_stream differs from decompress"

    def records(data: bytes) -> None:
        if len(data) < 13:
            return
        base = int.from_bytes(data[:8], "big", signed=True)
        count = int.from_bytes(data[8:12], "big", signed=True) % 4096
        flags = data[12]
        screen = RecordScreen(bool(flags & 1), base - 1000 if flags & 2 else None, base + 10**6 if flags & 4 else None)
        payload = data[13:]
        compiled = _record_screen.screen_records(payload, base, count, screen.require_key, screen.min_timestamp,
                                                 screen.max_timestamp)
        assert compiled == screen_records_py(payload, base, count, screen), "C screen_records differs"

    def payload(buf: bytes) -> None:
        for item in iter_batches(buf):
            if isinstance(item, RecordBatch) and item.magic == MAGIC_VALUE_V2:
                for screen in (RecordScreen(), RecordScreen(True, 0, 1 << 62)):
                    assert screen_payload(buf, item, screen, True) == screen_payload_py(buf, item, screen, True)

    def text(data: bytes) -> None:
        if len(data) < 23:
            return
        base_offset, base_timestamp = (int.from_bytes(data[a : a + 8], "big", signed=True) for a in (0, 8))
        base_sequence = int.from_bytes(data[16:20], "big", signed=True)
        count = int.from_bytes(data[20:22], "big", signed=True) % 4100 - 2
        print_data, append = bool(data[22] & 1), bool(data[22] & 2)
        payload = data[23:]
        batch = RecordBatch(0, base_offset, base_offset, MAGIC_VALUE_V2, 61 + len(payload), 0, True,
                            TIMESTAMP_TYPE_MASK if append else 0, count, base_timestamp=base_timestamp,
                            max_timestamp=base_timestamp ^ 0x5A5A, base_sequence=base_sequence)
        append_time = batch.max_timestamp if append else None
        compiled = _record_text.record_text(payload, base_offset, base_timestamp, append_time,
                                            _TIMESTAMP_TYPE_NAMES[batch.timestamp_type], base_sequence, count, print_data)
        decoded = decode_records(payload, base_offset, base_timestamp, count, append_time, print_data)
        if decoded.error:
            assert compiled is None, "the compiled record lines printed what Python reports as an error"
        elif compiled is not None:
            python = record_lines(batch, decoded.records, print_data)
            assert compiled == (python + "\n" if python else ""), "compiled record lines differ"

    targets = (segment, codec, records, payload, text, make_walk_target())

    def test_one_input(data: bytes) -> None:
        target = targets[data[0] % len(targets)] if data else None
        if target is not None:
            target(data[1:])

    return test_one_input


def _sanitized_child(argv: list[str]) -> int:
    """Build the sanitized extensions, then run this script again on them, their runtime preloaded."""
    import sanitized_build  # bench/, beside this script

    built = sanitized_build.build()
    print(f"sanitized build: {built.compiler}, libFuzzer sees the C code: {'yes' if built.c_coverage else 'no'}",
          file=sys.stderr)
    env = {**built.env(), SANITIZED: str(built.record_dir())}
    return subprocess.run([sys.executable, *argv], env=env, check=False).returncode


def _check_sanitized(record_dir: str) -> None:
    """Both extensions were loaded from the sanitized build (a stale or in-place .so is not fuzzed)."""
    from kafka_audit.record import _batch_walk, _record_screen, _record_text  # type: ignore[attr-defined]

    for module in (_record_screen, _record_text, _batch_walk):
        if Path(module.__file__).parent != Path(record_dir):
            raise SystemExit(f"fuzz: {module.__name__} came from {module.__file__}, not the sanitized build")
        print(f"extension: {module.__file__}", file=sys.stderr)


def make_native_target() -> Callable[[bytes], None]:
    """--native: the C entry points alone, on the same inputs (the first byte picks the target),
    with no Python reference beside them and no Python instrumented, for the long sanitized run:
    libFuzzer's cov/ft then count the C code's edges only (a clang build), and the rate is the C
    code's. What ends a run is a sanitizer report or an exception that is not our own; the
    differential checks are the default mode's.

      0, 3 payload  screen_payload on each v2 batch the bytes frame (its header read as written,
                    CRC and bounds unchecked: the C code must hold against any header), the screen,
                    want_record and max_size taken from the partition leader epoch's bytes
      2 records     screen_records, as the default mode calls it
      4 text        record_text, as the default mode calls it
      5 walk        the compiled batch walk, as the default mode calls it (make_walk_target)
      1 codec       (no C code: the input is passed over)
    """
    import struct

    from kafka_audit.record import _record_screen, _record_text  # type: ignore[attr-defined]
    from kafka_audit.record.lz4_frame import LZ4_BLOCK_INTO
    from kafka_audit.record.record_screen import RecordScreen
    from kafka_audit.record.zstd_frame import ZSTD_DECOMPRESSOR

    header = struct.Struct(">qiBBBBBiHiqqqhii")  # DefaultRecordBatch's 61 bytes (the epoch as 4 bytes)

    class Batch:  # the attributes screen_payload reads of a RecordBatch
        __slots__ = ("position", "size", "attributes", "base_timestamp", "record_count")

    def payload(buf: bytes) -> None:
        position = 0
        while position + header.size <= len(buf):
            fields = header.unpack_from(buf, position)
            flags, shift = fields[2], fields[3] % 24
            batch = Batch()
            batch.position, batch.size, batch.attributes = position, 12 + fields[1], fields[9]
            batch.base_timestamp, batch.record_count = fields[11], fields[15]
            screen = RecordScreen(bool(flags & 1), fields[11] - 1000 if flags & 2 else None,
                                  fields[11] + 10**6 if flags & 4 else None)
            _record_screen.screen_payload(buf, batch, screen, (1 << 22) >> shift, bool(flags & 8), LZ4_BLOCK_INTO,
                                          ZSTD_DECOMPRESSOR)
            if batch.size < header.size:
                return
            position += batch.size

    def records(data: bytes) -> None:
        if len(data) < 13:
            return
        base = int.from_bytes(data[:8], "big", signed=True)
        count = int.from_bytes(data[8:12], "big", signed=True) % 4096
        _record_screen.screen_records(data[13:], base, count, bool(data[12] & 1), base - 1000 if data[12] & 2 else None,
                                      base + 10**6 if data[12] & 4 else None)

    def text(data: bytes) -> None:
        if len(data) < 23:
            return
        base_offset, base_timestamp = (int.from_bytes(data[a : a + 8], "big", signed=True) for a in (0, 8))
        count = int.from_bytes(data[20:22], "big", signed=True) % 4100 - 2
        _record_text.record_text(data[23:], base_offset, base_timestamp, base_timestamp ^ 0x5A5A if data[22] & 2 else None,
                                 "LogAppendTime" if data[22] & 2 else "CreateTime",
                                 int.from_bytes(data[16:20], "big", signed=True), count, bool(data[22] & 1))

    targets = (payload, None, records, payload, text, make_walk_target())

    def test_one_input(data: bytes) -> None:
        target = targets[data[0] % len(targets)] if data else None
        if target is not None:
            target(data[1:])

    return test_one_input


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1_000_000, help="inputs to run")
    parser.add_argument("--seconds", type=int, default=0, help="stop after this many seconds (0: no limit)")
    parser.add_argument("--max-len", type=int, default=1 << 16)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=100_000, help="at most this many seed batches")
    parser.add_argument("--asan", action="store_true", help="fuzz the extensions built with ASan/UBSan")
    parser.add_argument("--corpus", default=None, help="the working corpus dir (default: a temporary one)")
    parser.add_argument("--inputs", nargs="+", default=None, help="run these saved inputs once each, nothing else")
    parser.add_argument("--native", action="store_true", help="the C entry points alone (see make_native_target)")
    args, rest = parser.parse_known_args()
    if args.asan and SANITIZED not in os.environ:
        sys.exit(_sanitized_child(sys.argv))
    sys.path.insert(0, str(REPO))
    if args.asan:
        import kafka_audit.record  # the sanitized extensions first on its path

        kafka_audit.record.__path__.insert(0, os.environ[SANITIZED])
    import atheris

    if args.native:
        test_one_input = make_native_target()
    else:  # instrumented first: a module imported before (by the seeding) would not be
        with atheris.instrument_imports(include=["kafka_audit", "tests.support.record_screen_reference"]):
            test_one_input = make_target()
    if args.asan:
        _check_sanitized(os.environ[SANITIZED])
    if args.inputs:
        inputs = [str(Path(path).resolve()) for path in args.inputs]
        atheris.Setup([sys.argv[0], *rest, *inputs], test_one_input)
        atheris.Fuzz()
        return
    corpus = Path(args.corpus) if args.corpus else Path(tempfile.mkdtemp(prefix="fuzz-atheris-"))
    corpus.mkdir(parents=True, exist_ok=True)
    if not any(corpus.iterdir()):
        print(f"seeds: {_seeds(corpus, args.max_len, args.seeds)} batches", file=sys.stderr)
    random.seed(args.seed)
    libfuzzer = [sys.argv[0], f"-runs={args.runs}", f"-max_len={args.max_len}", f"-seed={args.seed}",
                 "-timeout=30", "-rss_limit_mb=1536", "-print_final_stats=1", f"-artifact_prefix={corpus.parent}/",
                 *rest, str(corpus)]
    if args.seconds:
        libfuzzer.insert(1, f"-max_total_time={args.seconds}")
    atheris.Setup(libfuzzer, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
