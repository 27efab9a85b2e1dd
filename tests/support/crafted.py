"""Crafted segments for the memory bound (issue 30, SPEC section 1 "Memory is bounded whatever the
input"): a v2 batch whose payload inflates to gigabytes under the 64x ratio cap, written as a
stream (its records never held in memory), a plain bomb past the cap, and a sparse file whose
second batch claims 2^31-1 bytes. Used by tests/test_memory_bound.py and bench/crafted_memory.py.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import cramjam
import crc32c
import lz4.frame
import zstandard

from kafka_audit.record.compression import XERIAL_MAGIC, compress
from kafka_audit.record.default_record import encode_record, encode_varint
from kafka_audit.record.record_batch import V2_ATTRIBUTES_OFFSET, V2_CRC_OFFSET, V2_HEADER, V2_RECORD_BATCH_OVERHEAD

GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
MIB = 1024 * 1024
BASE_TIMESTAMP = 1_700_000_000_000


@dataclass(frozen=True)
class CraftedBatch:
    """Where the crafted batch lies in its segment and what it is."""

    position: int
    size: int  # on disk, log overhead included
    inflated: int  # bytes its payload inflates to
    base_offset: int
    record_count: int


def _value_blocks(value_size: int, random_per_mib: int) -> Iterator[bytes]:
    """A value of ``value_size`` bytes, 1 MiB at a time: ``random_per_mib`` random bytes then zeros
    (the random share sets the compression ratio)."""
    zeros = bytes(MIB)
    for start in range(0, value_size, MIB):
        n = min(MIB, value_size - start)
        head = os.urandom(min(n, random_per_mib))
        yield head + zeros[: n - len(head)]


class _Compressor:
    """A streaming compressor for one codec as Kafka's clients write v2 payloads."""

    def __init__(self, codec: int) -> None:
        self.codec = codec
        if codec == GZIP:
            self._obj = zlib.compressobj(1, zlib.DEFLATED, 31)
        elif codec == ZSTD:
            self._obj = zstandard.ZstdCompressor(level=1).compressobj()
        elif codec == LZ4:
            self._obj = lz4.frame.LZ4FrameCompressor(block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False)
        self._pending = bytearray()
        self._started = False

    def compress(self, data: bytes) -> bytes:
        if self.codec in (GZIP, ZSTD):
            return self._obj.compress(data)
        if self.codec == LZ4:
            head = b"" if self._started else self._obj.begin()
            self._started = True
            return head + self._obj.compress(data)
        # snappy: xerial framing, 32 KiB blocks (SnappyOutputStream)
        out = bytearray() if self._started else bytearray(XERIAL_MAGIC + struct.pack(">ii", 1, 1))
        self._started = True
        self._pending += data
        while len(self._pending) >= 32 * 1024:
            block = bytes(cramjam.snappy.compress_raw(bytes(self._pending[: 32 * 1024])))
            del self._pending[: 32 * 1024]
            out += struct.pack(">i", len(block)) + block
        return bytes(out)

    def flush(self) -> bytes:
        if self.codec == LZ4:
            return self._obj.flush()
        if self.codec == SNAPPY:
            out = b""
            if self._pending:
                block = bytes(cramjam.snappy.compress_raw(bytes(self._pending)))
                out = struct.pack(">i", len(block)) + block
            return out
        return self._obj.flush()


def _small_batch(base_offset: int, codec: int = 0) -> bytes:
    """A healthy v2 batch of one keyed record (the batches around the crafted one)."""
    from kafka_audit.record.record_batch import encode_v2_batch

    records = compress(codec, encode_record(0, 0, 0, b"k", b"v"), 2)
    return encode_v2_batch(
        records, base_offset=base_offset, partition_leader_epoch=0, attributes=codec, last_offset_delta=0,
        base_timestamp=BASE_TIMESTAMP, max_timestamp=BASE_TIMESTAMP, producer_id=-1, producer_epoch=-1,
        base_sequence=-1, record_count=1,
    )


def write_bomb_segment(
    path: Path, codec: int, value_size: int, records: int, random_per_mib: int
) -> CraftedBatch:
    """A segment: a healthy batch at offset 0, the crafted batch of ``records`` records of
    ``value_size`` bytes each (compressed with ``codec``) at offset 1, a healthy batch after it.
    The payload is compressed and written as it is made; the header's length and CRC-32C are
    written last."""
    with open(path, "wb") as out:
        first = _small_batch(0)
        out.write(first)
        position = out.tell()
        out.write(bytes(V2_RECORD_BATCH_OVERHEAD))
        compressor = _Compressor(codec)
        crc_payload = 0
        inflated = 0

        def emit(data: bytes) -> None:
            nonlocal crc_payload
            if data:
                crc_payload = crc32c.crc32c(data, crc_payload)
                out.write(data)

        for index in range(records):
            body_head = bytes((0,)) + encode_varint(0) + encode_varint(index) + encode_varint(-1) + encode_varint(value_size)
            length = len(body_head) + value_size + 1
            head = encode_varint(length) + body_head
            inflated += len(head) + value_size + 1
            emit(compressor.compress(head))
            for block in _value_blocks(value_size, random_per_mib):
                emit(compressor.compress(block))
            emit(compressor.compress(b"\x00"))  # no headers
        emit(compressor.flush())
        end = out.tell()
        header = bytearray(V2_HEADER.pack(
            1, end - position - 12, 0, 2, 0, codec, records - 1, BASE_TIMESTAMP, BASE_TIMESTAMP, -1, -1, -1, records
        ))
        crc = crc32c.crc32c(bytes(header[V2_ATTRIBUTES_OFFSET:]))
        # crc32c of header + payload from the two crcs: recompute over the payload read back.
        out.flush()
        with open(path, "rb") as back:
            back.seek(position + V2_RECORD_BATCH_OVERHEAD)
            while chunk := back.read(MIB):
                crc = crc32c.crc32c(chunk, crc)
        struct.pack_into(">I", header, V2_CRC_OFFSET, crc)
        out.seek(position)
        out.write(header)
        out.seek(end)
        out.write(_small_batch(1 + records))
    return CraftedBatch(position, end - position, inflated, 1, records)


def write_sparse_claim(path: Path, size: int = 4 << 30) -> int:
    """A sparse file of ``size`` bytes: a healthy batch, then a v2 batch header whose length field
    claims 2^31-1 bytes (of holes); returns the claiming batch's position."""
    first = _small_batch(0)
    header = V2_HEADER.pack(1, (1 << 31) - 1, 0, 2, 0, 0, 0, BASE_TIMESTAMP, BASE_TIMESTAMP, -1, -1, -1, 1)
    with open(path, "wb") as out:
        out.write(first + header)
        out.truncate(size)
    return len(first)


def write_healthy_segment(path: Path, batches: int = 3) -> None:
    """A small segment of healthy batches with one whose CRC is damaged (a known finding)."""
    data = bytearray(b"".join(_small_batch(offset) for offset in range(batches)))
    data[-1] ^= 0xFF  # the last batch's last byte: its CRC no longer holds
    path.write_bytes(bytes(data))




def peak_rss_kib() -> int:
    """This process's peak RSS (VmHWM of /proc/self/status). Not ru_maxrss: Linux keeps a vforked
    child's ru_maxrss from its parent across exec, hiding any growth below the parent's peak."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


# A child that runs the kafka-audit CLI (argv[2:]) and writes its own peak RSS in KiB to argv[1]
# at exit (atexit runs on the CLI's SystemExit, before the interpreter tears down).
PEAK_CHILD = r"""
import atexit, sys
from tests.support.crafted import peak_rss_kib
def _write_peak():
    with open(sys.argv[1], "w") as out:
        out.write(str(peak_rss_kib()))
atexit.register(_write_peak)
from kafka_audit.cli.app import main
main(sys.argv[2:])
"""


def write_repeated_gzip_bomb(path: Path, value_mib: int, records: int, random_per_mib: int = 17 * 1024) -> CraftedBatch:
    """:func:`write_bomb_segment` for gzip, fast: every 1 MiB block of every value is the same
    bytes, compressed once behind a full flush (so its deflate output can be repeated), the gzip
    trailer's CRC-32 and size computed over the whole. ``random_per_mib`` sets the ratio."""
    block = os.urandom(random_per_mib) + bytes(MIB - random_per_mib)
    deflate = zlib.compressobj(1, zlib.DEFLATED, -15)
    packed_block = deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH)
    crc, size = 0, 0
    parts: list[bytes] = []
    for index in range(records):
        body_head = bytes((0,)) + encode_varint(0) + encode_varint(index) + encode_varint(-1) + encode_varint(value_mib * MIB)
        head = encode_varint(len(body_head) + value_mib * MIB + 1) + body_head
        parts.append(deflate.compress(head) + deflate.flush(zlib.Z_FULL_FLUSH))
        crc, size = zlib.crc32(head, crc), size + len(head)
        for _ in range(value_mib):
            parts.append(packed_block)
            crc, size = zlib.crc32(block, crc), size + MIB
        parts.append(deflate.compress(b"\x00") + deflate.flush(zlib.Z_FULL_FLUSH))
        crc, size = zlib.crc32(b"\x00", crc), size + 1
    parts.append(deflate.flush())
    gzip_header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    payload = gzip_header + b"".join(parts) + struct.pack("<II", crc, size & 0xFFFFFFFF)
    from kafka_audit.record.record_batch import encode_v2_batch

    batch = encode_v2_batch(
        payload, base_offset=1, partition_leader_epoch=0, attributes=GZIP, last_offset_delta=records - 1,
        base_timestamp=BASE_TIMESTAMP, max_timestamp=BASE_TIMESTAMP, producer_id=-1, producer_epoch=-1,
        base_sequence=-1, record_count=records,
    )
    first = _small_batch(0)
    path.write_bytes(first + batch + _small_batch(1 + records))
    return CraftedBatch(len(first), len(batch), size, 1, records)
