"""kafka_audit.record.compression against Kafka's codec rules and an independent implementation
(kafka-python's ``kafka.codec``, the ``lz4`` package, python-zstandard).

Kafka classes followed: ``CompressionType``, ``GzipCompression`` (``GZIPInputStream``),
``SnappyCompression`` (xerial ``SnappyInputStream``), ``Lz4BlockInputStream`` /
``Lz4BlockOutputStream``, ``ZstdCompression``.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import random
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import lz4.frame
import pytest
import xxhash
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka import codec as kc

from kafka_audit.record.compression import XERIAL_MAGIC, DecompressionError, compress, decompress
from kafka_audit.record.lz4_frame import LZ4_FRAME_MAGIC

REPO = Path(__file__).resolve().parent.parent
GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
CODECS = [GZIP, SNAPPY, LZ4, ZSTD]
MAGICS = [0, 1, 2]
BIG = 1 << 30  # a cap no test payload reaches


def payloads() -> dict[str, bytes]:
    rng = random.Random(20231114)
    noise = bytes(rng.getrandbits(8) for _ in range(50_000))
    return {
        "empty": b"",
        "one_byte": b"x",
        "text": b"the quick brown fox jumps over the lazy dog " * 200,
        "noise": noise,
        # Crosses the 32 KiB xerial block and the 64 KiB LZ4 block boundaries several times.
        "mixed_300k": (noise[:20_000] + bytes(30_000)) * 6,
    }


PAYLOADS = payloads()


# ---------------------------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PAYLOADS))
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", MAGICS)
def test_every_codec_round_trips_for_every_magic(magic: int, codec: int, name: str) -> None:
    """decompress(compress(x)) == x for gzip, snappy, lz4 and zstd in magic v0, v1 and v2."""
    data = PAYLOADS[name]
    packed = compress(codec, data, magic)
    assert decompress(codec, packed, magic, BIG) == data
    if name in ("text", "mixed_300k"):
        assert len(packed) < len(data)  # it really compressed


@pytest.mark.parametrize("magic", MAGICS)
def test_codec_none_writes_the_bytes_unchanged(magic: int) -> None:
    """CompressionType.NONE: the records are stored as they are."""
    assert compress(0, PAYLOADS["text"], magic) == PAYLOADS["text"]


def test_decompress_accepts_memoryview_and_bytearray() -> None:
    """The reader hands a memoryview of the mmap'ed segment; the codec must not need bytes."""
    packed = compress(ZSTD, PAYLOADS["text"], 2)
    assert decompress(ZSTD, memoryview(packed), 2, BIG) == PAYLOADS["text"]
    assert decompress(ZSTD, bytearray(packed), 2, BIG) == PAYLOADS["text"]


# ---------------------------------------------------------------------------------------------
# What Kafka clients write decodes
# ---------------------------------------------------------------------------------------------


def client_payloads(data: bytes) -> list[tuple[str, int, int, bytes]]:
    """(label, codec, magic, bytes) as kafka-python and other clients produce them."""
    half = len(data) // 2
    return [
        ("kafka-python gzip", GZIP, 2, kc.gzip_encode(data)),
        ("gzip with a name and mtime in the header", GZIP, 1, _gzip_with_name(data)),
        ("gzip, two concatenated members (GZIPInputStream reads on)", GZIP, 2, gzip.compress(data[:half]) + gzip.compress(data[half:])),
        ("kafka-python snappy, xerial framing (Java client)", SNAPPY, 1, kc.snappy_encode(data)),
        ("kafka-python snappy, xerial framing, 4 KiB blocks", SNAPPY, 2, kc.snappy_encode(data, xerial_blocksize=4096)),
        ("kafka-python snappy, raw (librdkafka)", SNAPPY, 2, kc.snappy_encode(data, xerial_compatible=False)),
        ("raw snappy in a v0 wrapper", SNAPPY, 0, kc.snappy_encode(data, xerial_compatible=False)),
        ("kafka-python lz4 frame", LZ4, 2, kc.lz4_encode(data)),
        ("kafka-python lz4 frame in v1", LZ4, 1, kc.lz4_encode(data)),
        ("kafka-python lz4 for 0.8/0.9 brokers (broken header checksum)", LZ4, 0, kc.lz4_encode_old_kafka(data)),
        (
            "lz4 linked blocks, content checksum, content size",
            LZ4,
            2,
            lz4.frame.compress(data, block_linked=True, content_checksum=True, store_size=True),
        ),
        (
            "lz4 linked 4 MiB blocks, block and content checksums",
            LZ4,
            2,
            lz4.frame.compress(
                data,
                block_size=lz4.frame.BLOCKSIZE_MAX4MB,
                block_linked=True,
                block_checksum=True,
                content_checksum=True,
            ),
        ),
        ("lz4 independent 256 KiB blocks", LZ4, 2, lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX256KB, block_linked=False)),
        ("kafka-python zstd", ZSTD, 2, kc.zstd_encode(data)),
        (
            "zstd, three concatenated frames",
            ZSTD,
            2,
            b"".join(zstandard.ZstdCompressor().compress(part) for part in (data[:7], data[7:half], data[half:])),
        ),
        ("zstd frame without content size", ZSTD, 2, zstandard.ZstdCompressor(write_content_size=False).compress(data)),
        ("zstd frame with checksum", ZSTD, 2, zstandard.ZstdCompressor(write_checksum=True).compress(data)),
    ]


def _gzip_with_name(data: bytes) -> bytes:
    import io

    out = io.BytesIO()
    with gzip.GzipFile(filename="records.bin", mode="wb", fileobj=out, mtime=1_700_000_000) as handle:
        handle.write(data)
    return out.getvalue()


CLIENT_CASES = client_payloads(PAYLOADS["mixed_300k"])


@pytest.mark.parametrize("label,codec,magic,packed", CLIENT_CASES, ids=[c[0] for c in CLIENT_CASES])
def test_formats_kafka_clients_write_decode(label: str, codec: int, magic: int, packed: bytes) -> None:
    """Every framing a Kafka client may put in a batch decodes to the original records."""
    assert decompress(codec, packed, magic, BIG) == PAYLOADS["mixed_300k"]


@pytest.mark.parametrize("label,codec,magic,packed", CLIENT_CASES, ids=[c[0] for c in CLIENT_CASES])
def test_client_formats_decode_through_the_bounded_block_path(label: str, codec: int, magic: int, packed: bytes) -> None:
    """With the cap at exactly the output size (so the LZ4 reader can no longer trust the block
    bound and inflates block by block), every framing still decodes."""
    data = PAYLOADS["mixed_300k"]
    assert decompress(codec, packed, magic, len(data)) == data


def test_linked_lz4_blocks_that_refer_to_earlier_blocks_decode_block_by_block() -> None:
    """A linked-block frame's blocks refer to the 64 KiB of output before them; the bounded
    block-by-block path must give each block that history."""
    rng = random.Random(7)
    chunk = bytes(rng.getrandbits(8) for _ in range(40_000))
    data = chunk * 10  # every block repeats bytes of the block before it
    linked = lz4.frame.compress(data, block_linked=True, content_checksum=True)
    independent = lz4.frame.compress(data, block_linked=False)
    assert len(linked) < len(independent) / 2  # the frame really uses cross-block references
    assert decompress(LZ4, linked, 2, len(data)) == data  # the cap forces the block path
    assert decompress(LZ4, linked, 2, BIG) == data


def test_concatenated_zstd_frames_decode_wherever_the_boundary_falls() -> None:
    """ZstdInputStream reads on across frames: two frames decode to their concatenation whatever
    the length of each (the boundary may fall anywhere in the reader's input slices)."""
    noise = PAYLOADS["noise"][:6000]
    compressor = zstandard.ZstdCompressor()
    for split in range(0, len(noise) + 1, 97):
        packed = compressor.compress(noise[:split]) + compressor.compress(noise[split:])
        assert decompress(ZSTD, packed, 2, BIG) == noise, f"split at {split}"


def test_gzip_members_decode_wherever_the_boundary_falls() -> None:
    """GZIPInputStream reads concatenated members."""
    noise = PAYLOADS["noise"][:6000]
    for split in range(0, len(noise) + 1, 397):
        packed = gzip.compress(noise[:split]) + gzip.compress(noise[split:])
        assert decompress(GZIP, packed, 1, BIG) == noise, f"split at {split}"


# ---------------------------------------------------------------------------------------------
# What we write decodes with kafka-python
# ---------------------------------------------------------------------------------------------


KP_DECODERS = {
    (GZIP, 0): kc.gzip_decode,
    (GZIP, 1): kc.gzip_decode,
    (GZIP, 2): kc.gzip_decode,
    (SNAPPY, 0): kc.snappy_decode,
    (SNAPPY, 1): kc.snappy_decode,
    (SNAPPY, 2): kc.snappy_decode,
    (LZ4, 0): kc.lz4_decode_old_kafka,
    (LZ4, 1): kc.lz4_decode,
    (LZ4, 2): kc.lz4_decode,
    (ZSTD, 2): kc.zstd_decode,
}


@pytest.mark.parametrize("name", ["text", "noise", "mixed_300k"])
@pytest.mark.parametrize("codec,magic", sorted(KP_DECODERS), ids=str)
def test_what_we_write_decodes_with_kafka_python(codec: int, magic: int, name: str) -> None:
    """compress() output is what a Kafka client of that magic writes, so kafka-python reads it."""
    data = PAYLOADS[name]
    assert KP_DECODERS[(codec, magic)](compress(codec, data, magic)) == data


@pytest.mark.parametrize("magic", [0, 1])
def test_snappy_in_v0_v1_uses_the_xerial_framing(magic: int) -> None:
    """SPEC 4: snappy in v0/v1 is xerial's stream: magic, version 1, compatible version 1, then
    ``length i32, raw snappy`` blocks of at most 32 KiB of input."""
    data = PAYLOADS["mixed_300k"]
    packed = compress(SNAPPY, data, magic)
    assert packed[:16] == XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    pos, blocks = 16, 0
    while pos < len(packed):
        (length,) = struct.unpack_from(">i", packed, pos)
        pos += 4 + length
        blocks += 1
    assert pos == len(packed)
    assert blocks == -(-len(data) // (32 * 1024))


def test_lz4_frame_layout_is_kafkas_block_output_stream() -> None:
    """Lz4BlockOutputStream: magic, FLG 0x60 (version 01, independent blocks, no checksums),
    BD 0x40 (64 KiB blocks), header checksum, blocks, end mark 0."""
    packed = compress(LZ4, PAYLOADS["text"], 2)
    assert packed[:4] == LZ4_FRAME_MAGIC
    assert packed[4:6] == b"\x60\x40"
    assert packed[6] == (xxhash.xxh32_intdigest(packed[4:6]) >> 8) & 0xFF
    assert packed[-4:] == b"\x00\x00\x00\x00"


def test_lz4_v0_header_checksum_is_kafkas_broken_one() -> None:
    """KAFKA-3160: Kafka's v0 writer hashed the frame magic too: HC = byte 1 of xxh32(magic..BD)."""
    packed = compress(LZ4, PAYLOADS["text"], 0)
    assert packed[6] == (xxhash.xxh32_intdigest(packed[0:6]) >> 8) & 0xFF
    assert packed[6] != (xxhash.xxh32_intdigest(packed[4:6]) >> 8) & 0xFF
    with pytest.raises(RuntimeError):  # a standard LZ4 reader refuses the broken checksum
        lz4.frame.decompress(packed)


# ---------------------------------------------------------------------------------------------
# LZ4 header checksum by magic (Lz4BlockInputStream.ignoreFlagDescriptorChecksum)
# ---------------------------------------------------------------------------------------------


def _with_header_checksum(frame: bytes, value: int) -> bytes:
    return frame[:6] + bytes((value,)) + frame[7:]


def test_lz4_v0_accepts_the_broken_and_the_correct_header_checksum() -> None:
    """Magic v0: Kafka reads with ignoreFlagDescriptorChecksum=true."""
    data = PAYLOADS["text"]
    assert decompress(LZ4, compress(LZ4, data, 0), 0, BIG) == data
    assert decompress(LZ4, kc.lz4_encode_old_kafka(data), 0, BIG) == data
    assert decompress(LZ4, kc.lz4_encode(data), 0, BIG) == data


def test_lz4_v0_ignores_a_wrong_header_checksum_as_kafka_does() -> None:
    """Magic v0: the HC byte is skipped, whatever it holds."""
    frame = compress(LZ4, PAYLOADS["text"], 1)
    good = frame[6]
    broken = (xxhash.xxh32_intdigest(frame[0:6]) >> 8) & 0xFF
    other = next(v for v in range(256) if v not in (good, broken))
    assert decompress(LZ4, _with_header_checksum(frame, other), 0, BIG) == PAYLOADS["text"]


@pytest.mark.parametrize("magic", [1, 2])
def test_lz4_v1_v2_require_the_correct_header_checksum(magic: int) -> None:
    """Magic v1+: Kafka verifies HC ("Stream frame descriptor corrupted"), so the broken v0
    checksum is a decompression failure there."""
    data = PAYLOADS["text"]
    with pytest.raises(DecompressionError, match="descriptor"):
        decompress(LZ4, compress(LZ4, data, 0), magic, BIG)
    with pytest.raises(DecompressionError, match="descriptor"):
        decompress(LZ4, kc.lz4_encode_old_kafka(data), magic, BIG)
    assert decompress(LZ4, compress(LZ4, data, magic), magic, BIG) == data


@pytest.mark.parametrize("cap", [BIG, 40_000], ids=["whole-frame", "block-by-block"])
def test_lz4_content_checksum_mismatch_fails(cap: int) -> None:
    """Lz4BlockInputStream: CONTENT_CHECKSUM_MISMATCH."""
    data = PAYLOADS["text"]  # 9,000 bytes: under a 40,000 cap, over one 4 MiB block's bound
    frame = bytearray(lz4.frame.compress(data, content_checksum=True, block_size=lz4.frame.BLOCKSIZE_MAX4MB))
    frame[-1] ^= 0x01
    with pytest.raises(DecompressionError):
        decompress(LZ4, bytes(frame), 2, cap)


@pytest.mark.parametrize("cap", [BIG, 40_000], ids=["whole-frame", "block-by-block"])
def test_lz4_block_checksum_mismatch_fails(cap: int) -> None:
    """Lz4BlockInputStream: BLOCK_HASH_MISMATCH."""
    data = PAYLOADS["text"]
    frame = bytearray(lz4.frame.compress(data, block_checksum=True, block_size=lz4.frame.BLOCKSIZE_MAX4MB))
    frame[-5] ^= 0x01  # last byte of the only block's checksum, before the end mark
    with pytest.raises(DecompressionError):
        decompress(LZ4, bytes(frame), 2, cap)


def test_lz4_block_larger_than_the_frames_maximum_fails() -> None:
    """Lz4BlockInputStream.readBlock: "Block size %d exceeded max"."""
    frame = bytearray(compress(LZ4, bytes(100), 2))
    struct.pack_into("<I", frame, 7, 0x80000000 | (64 * 1024 + 1))
    frame += bytes(64 * 1024 + 1)
    with pytest.raises(DecompressionError, match="maximum block size"):
        decompress(LZ4, bytes(frame), 2, BIG)


# ---------------------------------------------------------------------------------------------
# Truncated and garbage payloads
# ---------------------------------------------------------------------------------------------


def _valid_prefixes(codec: int, packed: bytes) -> set[int]:
    """Cut points that leave a complete, shorter stream (xerial: after a whole block)."""
    if codec == SNAPPY and packed.startswith(XERIAL_MAGIC):
        cuts, pos = {16}, 16
        while pos < len(packed):
            (length,) = struct.unpack_from(">i", packed, pos)
            pos += 4 + length
            cuts.add(pos)
        return cuts
    return set()


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", MAGICS)
def test_every_truncation_raises_decompression_error(magic: int, codec: int) -> None:
    """A payload cut anywhere (a torn write, a wrong batch length) never decodes and never
    raises anything but DecompressionError."""
    packed = compress(codec, PAYLOADS["mixed_300k"][:70_000], magic)
    valid = _valid_prefixes(codec, packed)
    cuts = sorted(set(range(0, min(len(packed), 64))) | set(range(64, len(packed), 7)))
    for cut in cuts:
        if cut in valid:
            continue
        with pytest.raises(DecompressionError):
            decompress(codec, packed[:cut], magic, BIG)


GARBAGE = {
    "empty": b"",
    "zeros": bytes(200),
    "ones": b"\xff" * 200,
    "random": random.Random(3).randbytes(4096),
    "gzip magic then junk": b"\x1f\x8b\x08\x00" + random.Random(4).randbytes(300),
    "xerial magic then junk": XERIAL_MAGIC + random.Random(5).randbytes(300),
    "xerial header then a block longer than the payload": XERIAL_MAGIC + struct.pack(">iii", 1, 1, 10_000) + b"abc",
    "xerial header then a negative block length": XERIAL_MAGIC + struct.pack(">iii", 1, 1, -5) + b"abc",
    "lz4 magic then junk": LZ4_FRAME_MAGIC + random.Random(6).randbytes(300),
    "lz4 magic, bad version": LZ4_FRAME_MAGIC + b"\x80\x40\x00\x00\x00\x00\x00",
    "lz4 magic, bad block size id": LZ4_FRAME_MAGIC + b"\x60\x00\x00\x00\x00\x00\x00",
    "zstd magic then junk": b"\x28\xb5\x2f\xfd" + random.Random(8).randbytes(300),
}


@pytest.mark.parametrize("name", sorted(GARBAGE))
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", MAGICS)
def test_garbage_raises_decompression_error(magic: int, codec: int, name: str) -> None:
    """Bytes that are not a stream of the batch's codec: DecompressionError, never another error."""
    with pytest.raises(DecompressionError):
        decompress(codec, GARBAGE[name], magic, BIG)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    codec=st.sampled_from(CODECS),
    magic=st.sampled_from(MAGICS),
    data=st.binary(max_size=2000),
    flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=7)), max_size=4),
    cut=st.integers(min_value=0, max_value=2100),
)
def test_damaged_streams_raise_only_decompression_error(codec, magic, data, flips, cut) -> None:
    """Bit flips and cuts in a valid stream either still decode or raise DecompressionError."""
    packed = bytearray(compress(codec, data, magic))
    for index, bit in flips:
        packed[index % len(packed)] ^= 1 << bit
    with contextlib.suppress(DecompressionError):
        decompress(codec, bytes(packed[:cut]), magic, 1 << 20)


@settings(max_examples=300, deadline=None)
@given(codec=st.integers(min_value=1, max_value=4), magic=st.sampled_from(MAGICS), data=st.binary(max_size=600))
def test_arbitrary_bytes_raise_only_decompression_error(codec, magic, data) -> None:
    """Arbitrary bytes behind each codec's magic number: never another exception."""
    prefixes = {GZIP: b"\x1f\x8b\x08", SNAPPY: XERIAL_MAGIC, LZ4: LZ4_FRAME_MAGIC + b"\x60\x40", ZSTD: b"\x28\xb5\x2f\xfd"}
    for candidate in (data, prefixes[codec] + data):
        with contextlib.suppress(DecompressionError):
            decompress(codec, candidate, magic, 1 << 20)


# ---------------------------------------------------------------------------------------------
# Unknown codecs
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec_ids_raise_decompression_error(codec: int) -> None:
    """CompressionType.forId: "Unknown compression type id: N" for ids 5, 6, 7."""
    with pytest.raises(DecompressionError, match=f"Unknown compression type id: {codec}"):
        decompress(codec, compress(GZIP, b"records", 2), 2, BIG)


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_compress_refuses_unknown_codec_ids(codec: int) -> None:
    with pytest.raises(ValueError, match=f"Unknown compression type id: {codec}"):
        compress(codec, b"records", 2)


# ---------------------------------------------------------------------------------------------
# The size cap
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", MAGICS)
def test_output_of_exactly_the_cap_decodes_and_one_byte_more_does_not(magic: int, codec: int) -> None:
    """The cap is inclusive: a payload inflating to max_size bytes is fine, max_size - 1 fails."""
    data = PAYLOADS["mixed_300k"]
    packed = compress(codec, data, magic)
    assert decompress(codec, packed, magic, len(data)) == data
    with pytest.raises(DecompressionError, match="inflates past"):
        decompress(codec, packed, magic, len(data) - 1)


def test_gzip_cap_counts_every_concatenated_member() -> None:
    """The cap bounds the whole batch payload, not each gzip member."""
    member = gzip.compress(bytes(10_000))
    with pytest.raises(DecompressionError, match="inflates past"):
        decompress(GZIP, member * 5, 2, 45_000)
    assert decompress(GZIP, member * 5, 2, 50_000) == bytes(50_000)


def test_xerial_cap_counts_every_block_and_names_the_cap() -> None:
    """The cap bounds the sum of the xerial blocks, and the error names the batch's cap."""
    packed = kc.snappy_encode(bytes(100_000), xerial_blocksize=10_000)
    with pytest.raises(DecompressionError, match="inflates past 99999 bytes"):
        decompress(SNAPPY, packed, 1, 99_999)


BOMB_SCRIPT = textwrap.dedent(
    r'''
    import json, struct, sys, zlib
    import cramjam, lz4.frame, zstandard
    from kafka_audit.record.compression import XERIAL_MAGIC, DecompressionError, decompress, decompress_stream

    SIZE = 500 * 1024 * 1024          # the bomb inflates to 500 MB of zeros
    CAP = 64 * 1024 * 1024            # the cap file_records gives a small batch
    CHUNK = bytes(1 << 20)
    N = SIZE // len(CHUNK)

    def varint(n):
        out = bytearray()
        while n >= 0x80:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        out.append(n)
        return bytes(out)

    def gzip_member():
        # Full flushes make every later 1 MiB chunk compress to the same bytes.
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        first = c.compress(CHUNK) + c.flush(zlib.Z_FULL_FLUSH)
        rest = c.compress(CHUNK) + c.flush(zlib.Z_FULL_FLUSH)
        crc = 0
        for _ in range(N):
            crc = zlib.crc32(CHUNK, crc)
        return first + rest * (N - 1) + b"\x03\x00" + struct.pack("<II", crc, SIZE & 0xFFFFFFFF)

    def gzip_members():
        # 500 concatenated members of 1 MiB each (GZIPInputStream reads them all)
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        return (c.compress(CHUNK) + c.flush()) * N

    def snappy_raw():
        # one literal zero byte, then copies of 64 bytes at offset 1 (tag 0b10, length 64)
        copies, rest = divmod(SIZE - 1, 64)
        body = b"\x00\x00" + b"\xfe\x01\x00" * copies
        if rest:
            body += bytes((((rest - 1) << 2) | 2, 1, 0))
        return varint(SIZE) + body

    def snappy_xerial():
        block = bytes(cramjam.snappy.compress_raw(CHUNK))
        return XERIAL_MAGIC + struct.pack(">ii", 1, 1) + (struct.pack(">i", len(block)) + block) * N

    def lz4_frame(**options):
        c = lz4.frame.LZ4FrameCompressor(**options)
        return b"".join([c.begin()] + [c.compress(CHUNK) for _ in range(N)] + [c.flush()])

    def lz4_kafka():
        return lz4_frame(block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False)

    def lz4_linked():
        return lz4_frame(block_size=lz4.frame.BLOCKSIZE_MAX4MB, block_linked=True, content_checksum=True)

    def zstd():
        c = zstandard.ZstdCompressor(level=1).compressobj()
        return b"".join([c.compress(CHUNK) for _ in range(N)] + [c.flush()])

    name, codec = sys.argv[1], int(sys.argv[2])
    bomb = globals()[name]()
    def peak_rss_kib():
        # VmHWM: this process's own peak. ru_maxrss would start at the parent's peak (Linux keeps
        # it across exec of a vforked child), hiding any growth below what pytest already holds.
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))

    before = peak_rss_kib()
    try:
        if sys.argv[3] == "stream":  # in pieces of the bomb, its output consumed as it comes
            pieces = (bomb[at : at + 65536] for at in range(0, len(bomb), 65536))
            produced = sum(len(piece) for piece in decompress_stream(codec, pieces, 2, CAP))
        else:
            produced = len(decompress(codec, bomb, 2, CAP))
        error = None
    except Exception as exc:
        error = (type(exc).__name__, str(exc))
        produced = None
    after = peak_rss_kib()
    print(json.dumps({"bomb_bytes": len(bomb), "error": error, "produced": produced,
                      "rss_growth_kib": after - before}))
    '''
)

BOMBS = [
    ("gzip_member", GZIP),
    ("gzip_members", GZIP),
    ("snappy_raw", SNAPPY),
    ("snappy_xerial", SNAPPY),
    ("lz4_kafka", LZ4),
    ("lz4_linked", LZ4),
    ("zstd", ZSTD),
]


@pytest.mark.parametrize("mode", ["whole", "stream"])
@pytest.mark.parametrize("name,codec", BOMBS, ids=[b[0] for b in BOMBS])
def test_decompression_bomb_is_refused_without_allocating_its_output(name: str, codec: int, mode: str) -> None:
    """500 MB of zeros in a few hundred KB: DecompressionError (TooLarge), and the process grows by
    far less than the bomb's output (measured as peak RSS in a fresh interpreter), inflated in
    one call or as a stream (decompress_stream)."""
    result = subprocess.run(
        [sys.executable, "-c", BOMB_SCRIPT, name, str(codec), mode],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["bomb_bytes"] < 30 * 1024 * 1024
    assert report["error"] is not None, f"the bomb decoded to {report['produced']} bytes"
    kind, message = report["error"]
    assert kind == "TooLarge"
    assert "inflates past 67108864 bytes" in message
    # The cap is 64 MiB; the whole output would be 500 MB.
    assert report["rss_growth_kib"] < (256 if mode == "whole" else 128) * 1024


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.binary(max_size=3000),
    st.integers(1, 4),
    st.booleans(),
    st.booleans(),
    st.integers(0, 2**32),
    st.sampled_from([64, 4096, 1 << 20, 64 << 20]),
)
def test_zstd_whole_frame_fast_path_gives_what_the_sliced_inflater_gives(
    payload, frames, content_size, checksum, seed, cap
):
    """``_unzstd_whole`` (one call per frame, bounded by the frames' block headers) must return
    exactly the sliced inflater's bytes or stand aside (None) so that it raises its own error:
    checked on streamed and one-shot frames, concatenated frames, and damaged copies."""
    from unittest import mock

    from kafka_audit.record import zstd_frame

    rng = random.Random(seed)
    params = {"write_content_size": content_size, "write_checksum": checksum}
    compressor = zstandard.ZstdCompressor(level=rng.choice([1, 3]), **params)
    parts = []
    for number in range(frames):
        chunk = (payload * (1 + number * 40))[: 200_000]
        if rng.random() < 0.5:
            parts.append(compressor.compress(chunk))
        else:
            out = compressor.compressobj()
            parts.append(out.compress(chunk) + out.flush())
    data = bytearray(b"".join(parts))
    if seed % 3 == 0 and data:
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    if seed % 5 == 0:
        del data[rng.randrange(len(data) + 1) :]
    if seed % 7 == 0:
        data += bytes(rng.randrange(1, 6))
    data = bytes(data)

    def inflate():
        try:
            return zstd_frame.decompress_zstd(data, cap)
        except DecompressionError as exc:
            return f"error: {exc}"

    fast = zstd_frame._unzstd_whole(data, cap)
    with mock.patch.object(zstd_frame, "_unzstd_whole", lambda data, max_size: None):
        expected = inflate()  # the sliced inflater alone
    if fast is not None:
        assert fast == expected
        assert len(fast) <= sum(bound for _, _, bound in zstd_frame._zstd_frames(data))
    try:
        assert decompress(ZSTD, data, 2, cap) == expected
    except DecompressionError as exc:
        assert f"error: {exc}" == expected
