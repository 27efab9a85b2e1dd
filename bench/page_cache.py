"""Page-cache residency of a broker's hot file before and after a scan (issue 30 item 1).

A broker serves consumers from the page cache. This writes a partition of ``--mib`` MiB, drops
it from the cache, reads its last ``--hot`` fraction as a consumer tailing the log would (those
pages are the hot ones), then scans the log dir, and counts with ``mincore`` the file's resident
pages before and after. A scan that drops only the pages it brought in leaves the hot pages
resident and the cold ones out. For comparison the same is measured for a plain read of the
whole file (what a scan that did not care would leave: every page resident), and the scan's
wall time with ``--max-read-rate``.

    python bench/page_cache.py [--mib 256] [--hot 0.25] [--rate 50]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from kafka_audit.audit.scan_options import ScanOptions  # noqa: E402
from kafka_audit.engines.local import audit_in_process  # noqa: E402
from kafka_audit.io import page_cache  # noqa: E402
from kafka_audit.io.storage import READ_RATE_OPTION, StorageSettings  # noqa: E402
from kafka_audit.io.storage_context import StorageContext  # noqa: E402
from kafka_audit.log.log_dir import discover  # noqa: E402
from tests.support.writer import BatchSpec, LogDirWriter, records  # noqa: E402


def _write(root: Path, mib: int) -> Path:
    with LogDirWriter(root, segment_bytes=1 << 40) as d:
        w = d.partition("hot", 0)
        for _ in range(mib * 4):  # 256 KiB batches
            w.append(BatchSpec(records=records([os.urandom(1 << 17).hex()])))
    return root / "hot-0" / f"{0:020d}.log"


def _resident(fd: int, size: int) -> int:
    pages = page_cache.resident_pages(fd, 0, size)
    return -1 if pages is None else sum(b & 1 for b in pages)


def _heat(fd: int, size: int, hot: float) -> None:
    """Drop the file from the cache, then read its last ``hot`` fraction (a tailing consumer)."""
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    start = int(size * (1 - hot)) // page_cache.PAGE * page_cache.PAGE
    os.pread(fd, size - start, start)


def _scan(root: Path, rate: float | None) -> float:
    """A scan's wall seconds; ``rate``: its --max-read-rate (travelling as the CLI's does)."""
    options = {READ_RATE_OPTION: rate} if rate else {}
    started = time.monotonic()
    with StorageContext(StorageSettings.of(options)) as request:
        audit_in_process(discover([str(root)], storage=request), ScanOptions())
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--hot", type=float, default=0.25)
    parser.add_argument("--rate", type=float, default=50.0, help="--max-read-rate of the capped scan (MB/s)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="page-cache-", dir=REPO) as work:
        segment = _write(Path(work), args.mib)
        fd = os.open(segment, os.O_RDONLY)
        try:
            os.fsync(fd)
            size = os.fstat(fd).st_size
            total = -(-size // page_cache.PAGE)
            _heat(fd, size, args.hot)
            before = _resident(fd, size)
            scan_s = _scan(Path(work), None)
            after_scan = _resident(fd, size)
            _heat(fd, size, args.hot)
            capped_s = _scan(Path(work), args.rate)
            after_capped = _resident(fd, size)
            _heat(fd, size, args.hot)
            with open(segment, "rb") as plain:  # a reader that does not care
                while plain.read(1 << 24):
                    pass
            after_plain = _resident(fd, size)
        finally:
            os.close(fd)
    print(json.dumps({
        "file_mib": round(size / (1 << 20), 1), "pages": total, "hot_pages_before": before,
        "resident_after_scan": after_scan, "resident_after_capped_scan": after_capped,
        "resident_after_plain_read": after_plain, "scan_s": round(scan_s, 2),
        "capped_scan_s": round(capped_s, 2), "max_read_rate_mb_s": args.rate,
        "capped_mb_s": round(size / 1e6 / capped_s, 1),
    }))


if __name__ == "__main__":
    main()
