"""Compression codecs of Kafka's record formats: ``org.apache.kafka.common.record.CompressionType``.

Reading is bounded: every codec stops once the output would pass ``max_size`` (a decompression
bomb is a :class:`DecompressionError`, not an allocation of gigabytes).

- gzip (``GzipCompression``): RFC 1952 members, concatenated members allowed as
  ``java.util.zip.GZIPInputStream`` allows them.
- snappy (``SnappyCompression``): the Java client writes xerial's ``SnappyOutputStream`` framing
  (a 16-byte header ``\\x82SNAPPY\\x00``, version, compatible version, then blocks of
  ``length i32, raw snappy``); librdkafka writes raw snappy in magic v2, which xerial's
  ``SnappyInputStream`` also reads. We read both, whatever the magic. We write the framing in
  v0/v1 and raw snappy in v2 (SPEC section 4).
- lz4 (``Lz4Compression``, ``Lz4BlockInputStream``): the LZ4 frame format. Magic v0 frames carry
  Kafka's old, broken header checksum (xxhash32 over the frame magic as well as the descriptor,
  KAFKA-3160). As ``Lz4BlockInputStream(ignoreFlagDescriptorChecksum = magic == v0)`` does, the
  header checksum is skipped in magic v0 and must be the correct one from v1 on; the broken one is
  written for v0. Blocks are inflated one at a time once the frame could pass the size cap.
- zstd (``ZstdCompression``): zstd frames, concatenated frames allowed. Kafka has no zstd before
  magic v2, but the bytes are still decodable, so the reader does not refuse them.
"""

from __future__ import annotations

import gzip
import struct
import zlib

import cramjam
import zstandard

from kafka_audit.record.codec_errors import DecompressionError, failed, too_large
from kafka_audit.record.lz4_frame import compress_lz4, decompress_lz4
from kafka_audit.record.record_batch import MAGIC_VALUE_V0, MAGIC_VALUE_V2, CompressionType
from kafka_audit.record.zstd_frame import decompress_zstd

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_XERIAL_BLOCK_LENGTH = struct.Struct(">i")
# xerial's SnappyOutputStream default block size.
_XERIAL_BLOCK_SIZE = 32 * 1024


# gzip level of Kafka's GzipCompression default (Deflater.DEFAULT_COMPRESSION).
_GZIP_LEVEL = 6
_ZSTD_LEVEL = 3


def decompress(codec: int, data, magic: int, max_size: int) -> bytes:
    """Decompress one batch payload (v2 records, or a v0/v1 wrapper's inner message set).

    Raises :class:`DecompressionError` with a sentence in Kafka's spirit
    ("Unknown compression type id: 6") when the codec is unknown, the bytes are not a valid
    stream of that codec, or they would inflate to more than ``max_size`` bytes.
    """
    data = bytes(data)
    if codec == CompressionType.GZIP:
        return _gunzip(data, max_size)
    if codec == CompressionType.SNAPPY:
        return _unsnappy(data, max_size)
    if codec == CompressionType.LZ4:
        return decompress_lz4(data, max_size, magic)
    if codec == CompressionType.ZSTD:
        return decompress_zstd(data, max_size)
    raise DecompressionError(f"Unknown compression type id: {codec}")


def compress(codec: int, data: bytes, magic: int) -> bytes:
    """Compress a payload the way a Kafka client of that message format would."""
    if codec == CompressionType.NONE:
        return data
    if codec == CompressionType.GZIP:
        # mtime 0: a fixture written twice is the same bytes.
        return gzip.compress(data, compresslevel=_GZIP_LEVEL, mtime=0)
    if codec == CompressionType.SNAPPY:
        if magic >= MAGIC_VALUE_V2:
            return bytes(cramjam.snappy.compress_raw(data))
        return _xerial_frame(data)
    if codec == CompressionType.LZ4:
        return compress_lz4(data, broken_header_checksum=magic == MAGIC_VALUE_V0)
    if codec == CompressionType.ZSTD:
        return zstandard.ZstdCompressor(level=_ZSTD_LEVEL).compress(data)
    raise ValueError(f"Unknown compression type id: {codec}")


# -- gzip ---------------------------------------------------------------------------------------


def _gunzip(data: bytes, max_size: int) -> bytes:
    out = bytearray()
    rest = data
    while True:
        inflater = zlib.decompressobj(wbits=31)
        try:
            out += inflater.decompress(rest, max_size + 1 - len(out))
        except zlib.error as exc:
            raise failed(CompressionType.GZIP, exc) from None
        if len(out) > max_size:
            raise too_large(CompressionType.GZIP, max_size)
        if not inflater.eof:
            raise failed(CompressionType.GZIP, "the gzip stream ends early")
        rest = inflater.unused_data
        if not rest:
            return bytes(out)


# -- snappy -------------------------------------------------------------------------------------


def _unsnappy(data: bytes, max_size: int) -> bytes:
    if data.startswith(XERIAL_MAGIC):
        return _unxerial(data, max_size)
    return _unsnappy_raw(data, max_size)


def _unsnappy_raw(block: bytes, max_size: int, produced: int = 0) -> bytes:
    """One raw snappy block; ``produced`` bytes were already inflated from earlier blocks."""
    try:
        size = cramjam.snappy.decompress_raw_len(block)
    except Exception as exc:  # cramjam raises its own error types for a bad length header
        raise failed(CompressionType.SNAPPY, exc) from None
    if produced + size > max_size:
        raise too_large(CompressionType.SNAPPY, max_size)
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except Exception as exc:
        raise failed(CompressionType.SNAPPY, exc) from None


def _unxerial(data: bytes, max_size: int) -> bytes:
    """xerial SnappyInputStream: a header, then ``length i32, raw snappy block`` repeated."""
    if len(data) < _XERIAL_HEADER.size:
        raise failed(CompressionType.SNAPPY, "the xerial snappy header is truncated")
    out = bytearray()
    pos = _XERIAL_HEADER.size
    while pos < len(data):
        if pos + 4 > len(data):
            raise failed(CompressionType.SNAPPY, f"xerial block length truncated at byte {pos}")
        (length,) = _XERIAL_BLOCK_LENGTH.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > len(data):
            raise failed(CompressionType.SNAPPY, f"xerial block length {length} at byte {pos - 4} runs past the end")
        out += _unsnappy_raw(data[pos : pos + length], max_size, len(out))
        pos += length
    return bytes(out)


def _xerial_frame(data: bytes) -> bytes:
    parts = [_XERIAL_HEADER.pack(XERIAL_MAGIC, 1, 1)]
    for start in range(0, len(data), _XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + _XERIAL_BLOCK_SIZE]))
        parts.append(_XERIAL_BLOCK_LENGTH.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


