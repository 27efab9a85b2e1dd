"""The benchmark's synthetic broker log dir, written with the fixture writer.

Deterministic: every choice comes from seeded ``random.Random`` instances and the writer reads no
clock, so the same ``size_mb`` writes the same bytes. The layout, for a dir of ``S`` bytes:

================  ==========  =====  ===============================  ===========================
topic             partitions  codec  producers                        share of ``S``
================  ==========  =====  ===============================  ===========================
``clicks``        4           none   2 idempotent, 1 header/record    30 %
``orders``        3           lz4    2 idempotent                     25 %
``payments``      3           zstd   1 transactional (1 in 8 abort)   20 %
``bench.large``   1           mixed  idempotent + transactional       25 %, one segment
================  ==========  =====  ===============================  ===========================

Segments roll at 1 MiB, except ``bench.large-0``, which is a single segment (at 1 GiB it is
256 MiB: larger than 1.5x the Spark split size, so the Spark plan cuts it into byte ranges).
Batches hold 1-64 records; records have a 12-byte key and a 100-1000 byte JSON-like value.
The dir is written to ``<root>.tmp`` and renamed, so a half-written dir is never reused.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

from tests.support.writer import LogDirWriter, Producer, RecordSpec

# Bump when the layout changes: a dir written by another version is regenerated.
LAYOUT_VERSION = 1
MARKER = "BENCH-DATA.json"
NONE, LZ4, ZSTD = 0, 3, 4
SEGMENT_BYTES = 1 << 20
LARGE_TOPIC = "bench.large"
# Records per batch (uniform) and value sizes (uniform) in bytes.
RECORDS_PER_BATCH = (1, 64)
VALUE_BYTES = (100, 1000)
# Spark splits segments above 1.5 x 64 MiB; the large segment is a quarter of the dir.
LARGE_SHARE = 0.25


@dataclass(frozen=True)
class TopicPlan:
    topic: str
    partitions: int
    codec: int | None  # None: cycle none/lz4/zstd batch by batch
    share: float
    transactional: bool
    producers: int
    header: bool


PLANS = (
    TopicPlan("clicks", 4, NONE, 0.30, False, 2, True),
    TopicPlan("orders", 3, LZ4, 0.25, False, 2, False),
    TopicPlan("payments", 3, ZSTD, 0.20, True, 1, False),
    TopicPlan(LARGE_TOPIC, 1, None, LARGE_SHARE, True, 2, False),
)


def _value_pool(rng: random.Random, size: int) -> bytes:
    """JSON-ish text (compresses about 3x with lz4, like typical event payloads)."""
    events = ["page_view", "add_to_cart", "checkout", "login", "search", "payment_authorised", "refund"]
    countries = ["DE", "FR", "US", "GB", "IN", "BR", "JP", "NL", "SE", "ES"]
    parts = []
    total = 0
    while total < size:
        doc = json.dumps(
            {
                "user": rng.randrange(10**7),
                "event": rng.choice(events),
                "country": rng.choice(countries),
                "amount": round(rng.random() * 1000, 2),
                "session": f"{rng.getrandbits(64):016x}",
                "path": f"/p/{rng.randrange(5000)}/{rng.randrange(100)}",
            },
            separators=(",", ":"),
        ).encode()
        parts.append(doc)
        total += len(doc)
    return b"".join(parts)[:size]


def _records(rng: random.Random, pool: bytes, count: int, serial: int, header: bool) -> tuple[RecordSpec, ...]:
    top = len(pool) - VALUE_BYTES[1]
    lo, hi = VALUE_BYTES
    headers = (("source", b"web"),) if header else ()
    return tuple(
        RecordSpec(
            key=b"k-%010d" % ((serial + i) % 10_000_000),
            value=pool[(start := rng.randrange(top)) : start + rng.randint(lo, hi)],
            headers=headers,
        )
        for i in range(count)
    )


def send(producer: Producer, writer, recs: tuple[RecordSpec, ...], codec: int, abort: bool) -> None:
    """One batch of ``producer``'s; a transactional producer's is a transaction of its own, ended
    by its marker (ABORT when ``abort``)."""
    if producer.transactional:
        producer.begin()
        producer.send(writer, recs, codec=codec)
        if abort:
            producer.abort()
        else:
            producer.commit()
    else:
        producer.send(writer, recs, codec=codec)


def _partition_size(writer) -> int:
    return sum(segment.size for segment in writer.segments)


def generate(root: Path, size_mb: int, log=print) -> dict:
    """Write the log dir of ``size_mb`` MiB at ``root`` (replacing it) and return its marker."""
    target = size_mb << 20
    tmp = root.with_name(root.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    rng = random.Random(20240606)
    pool = _value_pool(random.Random(1), 1 << 20)
    stats = {"data_records": 0, "batches": 0}
    producer_id = 1000
    with LogDirWriter(tmp) as out:
        for plan in PLANS:
            quota = int(target * plan.share) // plan.partitions
            large = plan.topic == LARGE_TOPIC
            segment_bytes = (1 << 62) if large else SEGMENT_BYTES
            writers = [out.partition(plan.topic, p, segment_bytes=segment_bytes) for p in range(plan.partitions)]
            producers = []
            for n in range(plan.producers):
                codec = plan.codec if plan.codec is not None else NONE
                producers.append(
                    Producer(producer_id, transactional=plan.transactional and (not large or n == 1), codec=codec)
                )
                producer_id += 1
            serial = 0
            turn = 0
            open_writers = list(writers)
            while open_writers:
                writer = open_writers[turn % len(open_writers)]
                producer = producers[turn % len(producers)]
                turn += 1
                count = rng.randint(*RECORDS_PER_BATCH)
                recs = _records(rng, pool, count, serial, plan.header)
                serial += count
                codec = producer.codec if plan.codec is not None else (NONE, LZ4, ZSTD)[turn % 3]
                send(producer, writer, recs, codec, abort=turn % 8 == 0)
                stats["batches"] += 2 if producer.transactional else 1
                stats["data_records"] += count
                if _partition_size(writer) >= quota:
                    open_writers.remove(writer)
            log(f"  generated {plan.topic}: {sum(_partition_size(w) for w in writers) / 1e6:.1f} MB")
    marker = {"layout_version": LAYOUT_VERSION, "size_mb": size_mb, **stats}
    (tmp / MARKER).write_text(json.dumps(marker) + "\n")
    shutil.rmtree(root, ignore_errors=True)
    os.replace(tmp, root)
    return marker


def ensure(root: Path, size_mb: int, log=print) -> dict:
    """The marker of the dir at ``root``, generating it first unless a complete one is there."""
    try:
        marker = json.loads((root / MARKER).read_text())
        if marker.get("layout_version") == LAYOUT_VERSION and marker.get("size_mb") == size_mb:
            return marker
    except (OSError, ValueError):
        pass
    return generate(root, size_mb, log)


def large_segment(root: Path) -> Path:
    return root / f"{LARGE_TOPIC}-0" / f"{0:020d}.log"


# The dump benchmark's segments: one topic per codec, ~200-byte records (a 12-byte key and a
# 188-byte value), batches of 1-64 records, one idempotent producer, one segment each.
DUMP_VALUE_BYTES = 188
DUMP_CODECS = {"none": NONE, "zstd": ZSTD}


def ensure_dump_segment(data_dir: Path, codec: str, record_count: int, log=print) -> Path:
    """The dump benchmark's segment of ``record_count`` records in ``codec`` (written once under
    ``data_dir``, then reused): the ``.log`` file of partition ``bench.dump-<codec>-0``."""
    root = data_dir / f"dump-{codec}-{record_count}"
    segment = root / f"bench.dump-{codec}-0" / f"{0:020d}.log"
    if (root / MARKER).is_file():
        return segment
    tmp = root.with_name(root.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    rng = random.Random(20240607)
    pool = _value_pool(random.Random(2), 1 << 20)
    top = len(pool) - DUMP_VALUE_BYTES
    with LogDirWriter(tmp) as out:
        writer = out.partition(f"bench.dump-{codec}", 0, segment_bytes=1 << 62)
        producer = Producer(2000, codec=DUMP_CODECS[codec])
        written = 0
        while written < record_count:
            count = min(rng.randint(*RECORDS_PER_BATCH), record_count - written)
            recs = tuple(
                RecordSpec(
                    key=b"k-%010d" % (written + i),
                    value=pool[(start := rng.randrange(top)) : start + DUMP_VALUE_BYTES],
                )
                for i in range(count)
            )
            producer.send(writer, recs)
            written += count
    (tmp / MARKER).write_text(json.dumps({"codec": codec, "records": record_count}) + "\n")
    shutil.rmtree(root, ignore_errors=True)
    os.replace(tmp, root)
    log(f"  generated the dump segment {segment} ({segment.stat().st_size / 1e6:.1f} MB)")
    return segment
