"""Cost of reading a segment through the Aiven tiered-storage plugin's objects (chunks ranged-read,
decrypted, decompressed: kafka_audit.io.rsm_objects) against reading the plain segment.

One run over every segment of the real-broker corpora, written as the plugin writes them
(tests/support/rsm_writer.py) in three variants; each segment is walked batch by batch
(FileRecords.batches) ``--rounds`` times, each round as one scan (manifests read and data keys
unwrapped again). Prints seconds and the ratio to the plain read.

    .venv/bin/python bench/tiered_reconstruction.py [--rounds 20] [--chunk-size 4194304]
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafka_audit.io import rsm_objects  # noqa: E402
from kafka_audit.io.storage import StorageSettings  # noqa: E402
from kafka_audit.io.storage_context import StorageContext  # noqa: E402
from kafka_audit.record.file_records import FileRecords  # noqa: E402
from tests.support.audit_run import SHARED  # noqa: E402
from tests.support.rsm_writer import object_stem, segment_id_for, write_segment  # noqa: E402
from tests.support.tiering import TOPIC_ID, segment_indexes  # noqa: E402


def walk(paths: list[str], rounds: int, pem: bytes) -> tuple[float, int]:
    """Each round as one scan: the key installed afresh (each data key unwrapped once, each
    manifest read once), every segment walked."""
    started, batches = time.perf_counter(), 0
    for _ in range(rounds):
        request = StorageContext(StorageSettings(rsm_key=rsm_objects.RsmKey(pem)))
        for path in paths:
            with FileRecords(path, storage=request) as segment:
                batches += sum(1 for _ in segment.batches())
    return time.perf_counter() - started, batches


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--chunk-size", type=int, default=4 * 1024 * 1024)  # the plugin's chunk.size default
    parser.add_argument("--large-mb", type=int, default=0,
                        help="instead: one segment of about this size, the corpus's segments end to end (a walk "
                             "of batches does not need its offsets to follow on)")
    args = parser.parse_args()
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    logs = sorted(p for c in ("real-broker", "real-broker-4") for p in (SHARED / "corpus" / c).glob("*/data/*/*.log"))
    if args.large_mb:
        whole = b"".join(p.read_bytes() for p in logs)
        scratch = tempfile.mkdtemp()
        atexit.register(shutil.rmtree, scratch, True)
        large = Path(scratch) / "00000000000000000000.log"
        large.write_bytes(whole * max(1, args.large_mb * 1024 * 1024 // len(whole)))
        logs = [large]
    total = sum(p.stat().st_size for p in logs)
    print(f"{len(logs)} segments, {total:,} bytes, {args.rounds} rounds, chunk size {args.chunk_size:,}")
    plain_s, batches = walk([str(p) for p in logs], args.rounds, pem)
    print(f"plain                 {plain_s:7.3f} s  ({batches:,} batches)")
    variants = {"fixed": (False, None), "zstd": (True, None), "zstd+aes-gcm": (True, key.public_key())}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (compression, public) in variants.items():
            paths = []
            for number, log in enumerate(logs):
                stem = str(Path(tmp) / name / object_stem("", "t", TOPIC_ID, 0, number, segment_id_for(number)))
                objects = write_segment(stem, log.read_bytes(), segment_indexes(log), args.chunk_size, compression, public).objects
                for path, data in objects.items():
                    Path(path).parent.mkdir(parents=True, exist_ok=True)
                    Path(path).write_bytes(data)
                paths.append(stem + ".log")
            seconds, same = walk(paths, args.rounds, pem)
            assert same == batches
            print(f"{name:20s}  {seconds:7.3f} s  ratio {seconds / plain_s:5.2f}x")


if __name__ == "__main__":
    main()
