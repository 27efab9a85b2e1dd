"""The streamed reading of a batch (record/streamed_batch.py: ranged reads, decompress_stream,
StreamedRecords, StreamedLegacy) against the one-buffer reading (read_batch_records), batch by
batch over every segment of fixtures/ and corpus/ and over damaged copies of their batches: the
same records (keys and values as bounded prefixes), problems and batch view. Kafka's
DefaultRecordBatch reads a batch through the same iterators whether it is compressed in one buffer
or as a stream (compressedIterator), so the two readings must not differ.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from kafka_audit.record.batch_records import max_decompressed_size, read_batch_records
from kafka_audit.record.byte_stream import ByteStream, buffer_pieces
from kafka_audit.record.compression import compress, decompress_stream
from kafka_audit.record.file_records import iter_batches
from kafka_audit.record.record_batch import MAGIC_VALUE_V2, Record, RecordBatch
from kafka_audit.record.stream_records import DATA_PREFIX
from kafka_audit.record.streamed_batch import streamed_legacy, streamed_v2

REPO = Path(__file__).resolve().parent.parent
SEGMENTS = sorted(
    p for root in ("fixtures", "corpus") for p in (REPO / root).rglob("*.log") if p.is_file() and not p.is_symlink()
)
# Batches compared per segment (the first ones, and the last): enough for every codec and format the
# corpora hold, in seconds.
PER_SEGMENT = 4


def _trimmed(record: Record) -> Record:
    """A record as the stream keeps it: keys, values and header parts as prefixes."""
    headers = tuple(replace(h, key=h.key.encode()[:DATA_PREFIX].decode("utf-8", errors="replace"),
                            value=None if h.value is None else h.value[:DATA_PREFIX]) for h in record.headers)
    return replace(
        record,
        key=None if record.key is None else bytes(record.key[:DATA_PREFIX]),
        value=None if record.value is None else bytes(record.value[:DATA_PREFIX]),
        headers=headers,
    )


def _streamed(buf: bytes, batch: RecordBatch, with_data: bool):
    read = lambda start, stop: buf[start:stop]  # noqa: E731
    if batch.magic == MAGIC_VALUE_V2:
        return streamed_v2(buf, batch, with_data, max_decompressed_size(batch), read)
    return streamed_legacy(buf, batch, with_data, max_decompressed_size(batch), read)


def _assert_same(buf: bytes, batch: RecordBatch) -> None:
    for with_data in (False, True):
        whole = read_batch_records(buf, batch, with_data)
        streamed = _streamed(buf, batch, with_data)
        assert [_trimmed(r) for r in streamed.records] == [_trimmed(r) for r in whole.records]
        assert len(streamed.records) == len(whole.records)
        assert streamed.problems == whole.problems
        assert (streamed.batch or batch) == (whole.batch or batch)


def _batches(buf: bytes) -> Iterator[RecordBatch]:
    batches = [item for item in iter_batches(buf) if isinstance(item, RecordBatch) and item.crc_valid]
    yield from batches[:PER_SEGMENT] + batches[PER_SEGMENT:][-1:]


@pytest.mark.parametrize("path", SEGMENTS, ids=[str(p.relative_to(REPO)) for p in SEGMENTS])
def test_streamed_reading_matches_one_buffer(path: Path) -> None:
    buf = path.read_bytes()
    for batch in _batches(buf):
        _assert_same(buf, batch)


def _damaged_copies(rng: random.Random) -> Iterator[tuple[bytes, RecordBatch]]:
    """Batches of the fixtures with bytes flipped after the header (payload, inner sets), the CRC
    left alone: the readers compared do not check it."""
    for path in SEGMENTS[::7]:
        buf = path.read_bytes()
        for batch in _batches(buf):
            start = batch.position + (61 if batch.magic == MAGIC_VALUE_V2 else 26)
            end = batch.position + batch.size
            if end <= start:
                continue
            data = bytearray(buf)
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(start, end)] = rng.randrange(256)
            yield bytes(data), batch


def test_streamed_reading_matches_one_buffer_on_damaged_batches() -> None:
    for buf, batch in _damaged_copies(random.Random(30)):
        if batch.magic != MAGIC_VALUE_V2:
            from kafka_audit.record.legacy_record import parse_message

            message = parse_message(buf, batch.position, batch.position + batch.size)
            if isinstance(message, str):
                continue  # the walk reports such a message; it never reaches the decoders
            _assert_same(buf, replace(batch, crc_valid=message.crc_valid))
        else:
            _assert_same(buf, batch)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
@pytest.mark.parametrize("magic", [0, 1, 2])
def test_decompress_stream_in_odd_pieces_matches_one_call(codec: int, magic: int) -> None:
    """Pieces of 1..5000 bytes, concatenated gzip members and zstd frames: the same output."""
    from kafka_audit.record.compression import decompress

    rng = random.Random(codec * 3 + magic)
    data = b"".join(rng.choice([b"abc" * 300, rng.randbytes(700), bytes(5000)]) for _ in range(300))
    payload = compress(codec, data, magic)
    if codec in (1, 4):
        payload += compress(codec, data[:999], magic)
    expected = decompress(codec, payload, magic, 1 << 30)
    cuts = sorted(rng.sample(range(1, len(payload)), min(200, len(payload) - 1)))
    pieces = [payload[a:b] for a, b in zip([0] + cuts, cuts + [len(payload)])]
    assert b"".join(decompress_stream(codec, pieces, magic, 1 << 30)) == expected


def test_byte_stream_skips_and_takes_across_pieces() -> None:
    data = bytes(range(256)) * 40
    stream = ByteStream(buffer_pieces(data, 0, len(data)))
    assert stream.read(3) == data[:3]
    assert stream.take(5000, 10) == data[3:13]
    assert stream.position == 5003
    assert stream.skip(10**9) == len(data) - 5003
    assert stream.at_end()
    assert struct.calcsize(">i") == 4
