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

An exception other than our own DecompressionError (which the decoders turn into Problem values)
is a crash; so is a disagreement between the two sides of a target (an AssertionError). Seeds:
every batch of fixtures/ and corpus/ (cut to at most --max-len bytes), for every target.

    python bench/fuzz_atheris.py --runs 1000000               # libFuzzer's stats on stderr
    python bench/fuzz_atheris.py --runs 20000 --seconds 20    # what CI runs (tests/test_fuzz_atheris.py)
    python bench/fuzz_atheris.py --asan --runs 200000         # the extension built with ASan/UBSan

--asan builds _record_screen with -fsanitize=address,undefined in a separate build dir
(build/asan), puts it first on the path and re-runs this script under LD_PRELOAD of gcc's
libasan (the interpreter itself is not instrumented).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ASAN_BUILD = REPO / "build" / "asan"
# Batches of each segment of fixtures/ and corpus/ taken as seeds (its first ones).
SEEDS_PER_SEGMENT = 6


def _seeds(corpus: Path, max_len: int, limit: int) -> int:
    """Batches of fixtures/ and corpus/ as seeds of each target (at most ``max_len`` bytes, at
    most ``limit`` batches, taken evenly from all segments)."""
    from kafka_audit.record.file_records import iter_batches
    from kafka_audit.record.record_batch import RecordBatch

    count = 0
    paths = sorted(p for root in ("fixtures", "corpus") for p in (REPO / root).rglob("*.log"))
    every = max(1, len(paths) * SEEDS_PER_SEGMENT // max(1, limit))
    for path in paths[::every]:
        if not path.is_file() or path.is_symlink():
            continue
        buf = path.read_bytes()
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
    return count


def _build_asan() -> Path:
    """_record_screen built with ASan and UBSan into build/asan; the path of gcc's libasan."""
    ASAN_BUILD.mkdir(parents=True, exist_ok=True)
    flags = "-fsanitize=address,undefined -fno-omit-frame-pointer -g -O1"
    env = {**os.environ, "CFLAGS": flags, "LDFLAGS": "-fsanitize=address,undefined"}
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(ASAN_BUILD), "--build-temp",
         str(ASAN_BUILD / "tmp"), "--force"],
        cwd=REPO, env=env, check=True,
    )
    return Path(subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True,
                               check=True).stdout.strip())


def make_target() -> Callable[[bytes], None]:
    """The harness's one entry (an input's first byte picks the target), its modules imported
    here, where the caller instruments them."""
    from dataclasses import replace

    from kafka_audit.record import _record_screen  # type: ignore[attr-defined]
    from kafka_audit.record.batch_records import max_decompressed_size, read_batch_records
    from kafka_audit.record.compression import DecompressionError, decompress, decompress_stream
    from kafka_audit.record.file_records import iter_batches
    from kafka_audit.record.record_batch import MAGIC_VALUE_V2, RecordBatch
    from kafka_audit.record.record_screen import RecordScreen, screen_payload
    from kafka_audit.record.stream_records import DATA_PREFIX
    from kafka_audit.record.streamed_batch import streamed_legacy, streamed_v2
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

    targets = (segment, codec, records, payload)

    def test_one_input(data: bytes) -> None:
        if data:
            targets[data[0] % len(targets)](data[1:])

    return test_one_input


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1_000_000, help="inputs to run")
    parser.add_argument("--seconds", type=int, default=0, help="stop after this many seconds (0: no limit)")
    parser.add_argument("--max-len", type=int, default=1 << 16)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=100_000, help="at most this many seed batches")
    parser.add_argument("--asan", action="store_true", help="fuzz the extension built with ASan/UBSan")
    parser.add_argument("--corpus", default=None, help="the working corpus dir (default: a temporary one)")
    args, rest = parser.parse_known_args()
    if args.asan and "KAFKA_AUDIT_ASAN_CHILD" not in os.environ:
        libasan = _build_asan()
        env = {**os.environ, "KAFKA_AUDIT_ASAN_CHILD": "1", "LD_PRELOAD": str(libasan),
               "PYTHONPATH": str(REPO),
               "ASAN_OPTIONS": "detect_leaks=0:allocator_may_return_null=1",
               "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
        sys.exit(subprocess.run([sys.executable, *sys.argv], env=env, check=False).returncode)
    sys.path.insert(0, str(REPO))
    if args.asan:
        import kafka_audit.record  # its sanitized extension first (coverage is lost under ASan anyway)

        kafka_audit.record.__path__.insert(0, str(ASAN_BUILD / "kafka_audit" / "record"))
    import atheris

    # Instrumented first: a module imported before (by the seeding) would not be.
    with atheris.instrument_imports(include=["kafka_audit", "tests.support.record_screen_reference"]):
        test_one_input = make_target()
    corpus = Path(args.corpus) if args.corpus else Path(tempfile.mkdtemp(prefix="fuzz-atheris-"))
    corpus.mkdir(parents=True, exist_ok=True)
    if not any(corpus.iterdir()):
        print(f"seeds: {_seeds(corpus, args.max_len, args.seeds)} batches", file=sys.stderr)
    if args.asan:
        from kafka_audit.record import _record_screen  # type: ignore[attr-defined]

        print(f"extension: {_record_screen.__file__}", file=sys.stderr)
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
