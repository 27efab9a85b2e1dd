"""A live partition for tests/test_live.py and bench/live_scans.py (SPEC section 1, issue 30).

:func:`build_log_dir` writes a log dir whose partition ``live-0`` has a few rolled segments; then
:class:`LiveWriter` starts a real child process (``python -m tests.support.live_writer``) that
appends real v2 batches (every codec, every fourth one written in two halves with a pause
between, as a broker's write can be seen half done) to the newest segment until it has written
its count or is stopped. :func:`delete_oldest` removes old segments as retention does, sidecars
first. :func:`copy_at` is the finished copy a live scan must agree with: the log dir with its
newest segment cut at the size that scan listed.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.support.writer import TS_BASE, BatchSpec, LogDirWriter, RecordSpec, encode_batch

TOPIC = "live"
FOLDER = "live-0"
CODECS = (0, 1, 2, 3, 4)  # none, gzip, snappy, lz4, zstd
REPO = Path(__file__).resolve().parents[2]
_WORDS = ("ledger", "order", "payment", "refund", "invoice", "shipment", "audit", "balance")


def _records(offset: int, count: int, rng: random.Random) -> tuple[RecordSpec, ...]:
    return tuple(
        RecordSpec(
            key=f"key-{(offset + i) % 97}".encode(),
            value=(f"{offset + i}:" + " ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 120)))).encode(),
        )
        for i in range(count)
    )


def batch_bytes(offset: int, index: int, rng: random.Random) -> tuple[bytes, int]:
    """The ``index``-th appended batch, at ``offset``: its bytes and record count."""
    count = rng.randint(1, 30)
    spec = BatchSpec(
        records=_records(offset, count, rng), base_offset=offset, codec=CODECS[index % len(CODECS)],
        base_timestamp=TS_BASE + offset,
    )
    return encode_batch(spec), count


def build_log_dir(root: Path, segments: int = 3, batches: int = 12, seed: int = 7) -> int:
    """Write the log dir; return the next offset of the newest segment."""
    rng = random.Random(seed)
    with LogDirWriter(root) as d:
        w = d.partition(TOPIC, 0)
        for segment in range(segments):
            for index in range(batches):
                count = rng.randint(1, 30)
                w.append(BatchSpec(records=_records(w.next_offset, count, rng), codec=CODECS[index % len(CODECS)]))
            if segment < segments - 1:
                w.roll()
        return w.next_offset


def newest_segment(root: Path) -> Path:
    return max((root / FOLDER).glob("*.log"))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def append(segment: Path, offset: int, count: int, seed: int, pause_s: float, stop: Path) -> None:
    """The writer process's work: ``count`` batches from ``offset`` (bounded), until ``stop`` exists."""
    rng = random.Random(seed)
    fd = os.open(segment, os.O_WRONLY | os.O_APPEND)
    try:
        for index in range(count):
            if stop.exists():
                return
            data, records = batch_bytes(offset, index, rng)
            if index % 4 == 1:  # a write seen half done
                cut = rng.randint(1, len(data) - 1)
                _write_all(fd, data[:cut])
                time.sleep(pause_s * 3)
                _write_all(fd, data[cut:])
            else:
                _write_all(fd, data)
            offset += records
            time.sleep(pause_s)
    finally:
        os.close(fd)


class LiveWriter:
    """The writer child process, started by :meth:`start` and stopped by PID in :meth:`stop`."""

    def __init__(self, root: Path, offset: int, count: int = 400, seed: int = 11, pause_s: float = 0.004) -> None:
        self.stop_file = root.parent / f"{root.name}.stop"
        self.args = [
            sys.executable, "-m", "tests.support.live_writer", str(newest_segment(root)), str(offset),
            str(count), str(seed), str(pause_s), str(self.stop_file),
        ]
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 60.0) -> LiveWriter:
        """Start the writer and return once it has appended (or raise after ``timeout``)."""
        segment = Path(self.args[3])
        size = segment.stat().st_size
        self.process = subprocess.Popen(self.args, cwd=REPO)
        deadline = time.monotonic() + timeout
        while segment.stat().st_size == size:
            if not self.running() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the writer appended nothing (exit code {self.process.poll()})")
            time.sleep(0.01)
        return self

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 30.0) -> int:
        """Ask the writer to stop, wait for it (killed by PID after ``timeout``); its exit code."""
        assert self.process is not None
        self.stop_file.touch()
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(timeout)


def delete_oldest(root: Path, keep: int = 1) -> list[str]:
    """Remove the oldest segments but ``keep``, sidecars first then the ``.log`` (as a broker's
    retention does, without the ``.deleted`` stage); the names of the logs removed."""
    logs = sorted((root / FOLDER).glob("*.log"))
    removed = []
    for log in logs[: max(0, len(logs) - keep)]:
        for sidecar in (".index", ".timeindex", ".txnindex"):
            log.with_suffix(sidecar).unlink(missing_ok=True)
        log.unlink(missing_ok=True)
        removed.append(log.name)
    return removed


def copy_at(root: Path, target: Path, listed_size: int) -> Path:
    """The finished copy of ``root`` with its newest segment cut at ``listed_size``."""
    shutil.copytree(root, target)
    os.truncate(newest_segment(target), listed_size)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description="Append real v2 batches to a segment, as a broker does.")
    parser.add_argument("segment", type=Path)
    parser.add_argument("offset", type=int)
    parser.add_argument("count", type=int)
    parser.add_argument("seed", type=int)
    parser.add_argument("pause_s", type=float)
    parser.add_argument("stop", type=Path)
    args = parser.parse_args()
    append(args.segment, args.offset, args.count, args.seed, args.pause_s, args.stop)


if __name__ == "__main__":
    main()
