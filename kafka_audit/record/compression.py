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
from collections.abc import Iterable, Iterator
from functools import partial

import cramjam
import zstandard

from kafka_audit.record.byte_stream import PIECE_BYTES, Buffer, ByteStream, StreamEnded
from kafka_audit.record.codec_errors import DecompressionError, TooLarge, failed, inflate_piece, too_large
from kafka_audit.record.lz4_frame import compress_lz4, decompress_lz4, decompress_lz4_stream
from kafka_audit.record.record_batch import MAGIC_VALUE_V0, MAGIC_VALUE_V2, CompressionType
from kafka_audit.record.zstd_frame import decompress_zstd, decompress_zstd_stream

__all__ = ["DecompressionError", "TooLarge", "compress", "decompress", "decompress_stream"]

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_XERIAL_BLOCK_LENGTH = struct.Struct(">i")
# xerial's SnappyOutputStream default block size.
_XERIAL_BLOCK_SIZE = 32 * 1024


# gzip level of Kafka's GzipCompression default (Deflater.DEFAULT_COMPRESSION).
_GZIP_LEVEL = 6
_ZSTD_LEVEL = 3


def decompress(codec: int, data: Buffer, magic: int, max_size: int) -> bytes:
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


def decompress_stream(codec: int, pieces: Iterable[bytes | memoryview], magic: int, max_size: int) -> Iterator[bytes]:
    """:func:`decompress` as a stream: the payload given in pieces, the output yielded in bounded
    pieces (``DefaultRecordBatch.compressedIterator`` reads through the codec's ``InputStream``
    the same way): gzip :data:`PIECE_BYTES` per call, an lz4 block (4 MiB at most), zstd 32 MiB
    per slice of input at most, a snappy block (:data:`SNAPPY_BLOCK_MAX`). The same errors,
    raised when the stream meets them."""
    if codec == CompressionType.NONE:
        return (bytes(piece) for piece in pieces)
    if codec == CompressionType.GZIP:
        return _gunzip_stream(pieces, max_size)
    if codec == CompressionType.SNAPPY:
        return _unsnappy_stream(ByteStream(pieces), max_size)
    if codec == CompressionType.LZ4:
        return decompress_lz4_stream(ByteStream(pieces), max_size, magic)
    if codec == CompressionType.ZSTD:
        return decompress_zstd_stream(ByteStream(pieces), max_size)
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


def _gunzip_stream(pieces: Iterable[bytes | memoryview], max_size: int) -> Iterator[bytes]:
    """:func:`_gunzip` in pieces: each call of the inflater gives at most :data:`PIECE_BYTES`."""
    produced = 0
    inflater = None  # None between members
    pending = True  # GZIPInputStream: a stream holds at least one member
    for piece in pieces:
        data = bytes(piece)
        while data:
            if inflater is None:
                inflater, pending = zlib.decompressobj(wbits=31), True
            while True:
                call = partial(inflater.decompress, data, PIECE_BYTES)
                out = inflate_piece(CompressionType.GZIP, call, zlib.error, produced, max_size)
                produced += len(out)
                if out:
                    yield out
                data = inflater.unconsumed_tail
                # A full piece out with no input left may leave output pending: call again.
                if inflater.eof or (not data and len(out) < PIECE_BYTES):
                    break
            if inflater.eof:
                data, inflater, pending = inflater.unused_data, None, False
    if pending:
        raise failed(CompressionType.GZIP, "the gzip stream ends early")


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


# The largest snappy block inflated (in one call, as xerial's SnappyInputStream inflates a block):
# a raw snappy payload is one block, and snappy cannot inflate a block in pieces.
SNAPPY_BLOCK_MAX = 128 * 1024 * 1024


def _unsnappy_stream(stream: ByteStream, max_size: int) -> Iterator[bytes]:
    """:func:`_unsnappy` in pieces: xerial blocks one at a time; a raw payload (one block) whole,
    up to :data:`SNAPPY_BLOCK_MAX`."""
    head = stream.window(len(XERIAL_MAGIC))
    if bytes(head[0][head[1] : head[1] + len(XERIAL_MAGIC)]) != XERIAL_MAGIC:
        block = _snappy_block(stream, 1 << 62)
        yield _unsnappy_raw(_at_most_block_max(block, max_size), max_size)
        return
    try:
        stream.read(_XERIAL_HEADER.size)
    except StreamEnded:
        raise failed(CompressionType.SNAPPY, "the xerial snappy header is truncated") from None
    produced = 0
    while not stream.at_end():
        at = stream.position
        try:
            (length,) = _XERIAL_BLOCK_LENGTH.unpack(stream.read(4))
        except StreamEnded:
            raise failed(CompressionType.SNAPPY, f"xerial block length truncated at byte {at}") from None
        if length < 0:
            raise failed(CompressionType.SNAPPY, f"xerial block length {length} at byte {at} runs past the end")
        block = _snappy_block(stream, length, at)
        out = _unsnappy_raw(_at_most_block_max(block, max_size - produced), max_size, produced)
        produced += len(out)
        for start in range(0, len(out), PIECE_BYTES):
            yield out[start : start + PIECE_BYTES]


def _at_most_block_max(block: bytes, room: int) -> bytes:
    """The block, when it inflates to at most :data:`SNAPPY_BLOCK_MAX` (its header says); one
    past ``room`` (what is left of the cap) is left to :func:`_unsnappy_raw` to call too large."""
    try:
        size = cramjam.snappy.decompress_raw_len(block)
    except Exception as exc:  # cramjam's own error types for a bad length header
        raise failed(CompressionType.SNAPPY, exc) from None
    if SNAPPY_BLOCK_MAX < size <= room:
        raise failed(
            CompressionType.SNAPPY,
            f"a snappy block that inflates to {size} bytes, more than the {SNAPPY_BLOCK_MAX} inflated at once",
        )
    return block


def _snappy_block(stream: ByteStream, length: int, at: int | None = None) -> bytes:
    """One snappy block of ``length`` bytes (all that is left for a raw payload), refused past
    :data:`SNAPPY_BLOCK_MAX` before it is gathered; its inflated size is checked by
    :func:`_unsnappy_raw` against its header before it is inflated."""
    parts = []
    size = 0
    while size < length and not stream.at_end():
        buf, pos = stream.window(1)
        step = min(length - size, len(buf) - pos)
        if size + step > SNAPPY_BLOCK_MAX:
            raise failed(CompressionType.SNAPPY, f"a snappy block larger than {SNAPPY_BLOCK_MAX} bytes")
        parts.append(bytes(buf[pos : pos + step]))
        stream.advance(pos + step)
        size += step
    if at is not None and size < length:
        raise failed(CompressionType.SNAPPY, f"xerial block length {length} at byte {at} runs past the end")
    return b"".join(parts)


def _xerial_frame(data: bytes) -> bytes:
    parts = [_XERIAL_HEADER.pack(XERIAL_MAGIC, 1, 1)]
    for start in range(0, len(data), _XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + _XERIAL_BLOCK_SIZE]))
        parts.append(_XERIAL_BLOCK_LENGTH.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


