"""zstd payloads as Kafka reads them (``ZstdCompression``: concatenated frames allowed), bounded by the
size cap: a fast path that inflates a payload whose frames say how large they are in one call, and
the streaming inflater fed small slices for the rest.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from functools import partial

import zstandard

from kafka_audit.record.byte_stream import ByteStream
from kafka_audit.record.codec_errors import failed, inflate_piece, too_large
from kafka_audit.record.record_batch import CompressionType

# Compressed bytes fed to the zstd inflater at a time (see decompress_zstd).
_ZSTD_SLICE = 1024

# The library's decompressor, also handed to the compiled payload screen
# (record_screen.screen_payload) so that it inflates with exactly the same one.
ZSTD_DECOMPRESSOR = zstandard.ZstdDecompressor


def decompress_zstd(data: bytes, max_size: int) -> bytes:
    """Inflate zstd frames, feeding the input in small slices: a zstd block inflates to at most
    128 KiB from 4 bytes, so a slice of ``_ZSTD_SLICE`` bytes can pass the cap by at most 32 MiB
    before the check below stops it. :func:`_unzstd_whole` first tries the common case in one call."""
    whole = _unzstd_whole(data, max_size)
    if whole is not None:
        return whole
    out = bytearray()
    pos = 0
    inflater = zstandard.ZstdDecompressor().decompressobj()
    try:
        while pos < len(data):
            piece = data[pos : pos + _ZSTD_SLICE]
            out += inflater.decompress(piece)
            # The last slice may be short: ``pos`` must be where the input really ends, or the
            # start of the next concatenated frame is computed wrong below.
            pos += len(piece)
            if len(out) > max_size:
                raise too_large(CompressionType.ZSTD, max_size)
            if inflater.eof:
                # Concatenated frames: go on with the bytes after this one.
                rest = inflater.unused_data
                pos -= len(rest)
                inflater = zstandard.ZstdDecompressor().decompressobj()
                if not rest and pos >= len(data):
                    return bytes(out)
    except zstandard.ZstdError as exc:
        raise failed(CompressionType.ZSTD, exc) from None
    if not inflater.eof:
        raise failed(CompressionType.ZSTD, "the zstd frame ends early")
    return bytes(out)


# Output gathered before it is handed on (many small outputs joined into one piece).
_STREAM_PIECE = 256 * 1024


def decompress_zstd_stream(stream: ByteStream, max_size: int) -> Iterator[bytes]:
    """:func:`decompress_zstd` in pieces (``ZstdCompression``'s ``ZstdInputStream``): the input fed
    in the same slices of :data:`_ZSTD_SLICE` bytes as the one-buffer inflater (so a damaged
    payload gets the library's same sentence), at most 32 MiB out per slice, handed on as it
    comes."""
    produced = 0
    inflater = None  # None between frames
    pending = True  # the payload holds at least one frame
    held: list[bytes] = []
    held_size = 0
    while True:
        window, pos = stream.window(_ZSTD_SLICE)
        chunk = bytes(window[pos : pos + _ZSTD_SLICE])
        if not chunk:
            break
        if inflater is None:
            inflater, pending = zstandard.ZstdDecompressor().decompressobj(), True
        call = partial(inflater.decompress, chunk)
        out = inflate_piece(CompressionType.ZSTD, call, zstandard.ZstdError, produced, max_size)
        produced += len(out)
        if out:
            held.append(out)
            held_size += len(out)
            if held_size >= _STREAM_PIECE:
                yield b"".join(held)
                held, held_size = [], 0
        if inflater.eof:
            # Concatenated frames: the next starts after this one's last byte.
            stream.advance(pos + len(chunk) - len(inflater.unused_data))
            inflater, pending = None, False
        else:
            stream.advance(pos + len(chunk))
    if pending:
        raise failed(CompressionType.ZSTD, "the zstd frame ends early")
    if held:
        yield b"".join(held)


_ZSTD_FRAME_MAGIC = b"\x28\xb5\x2f\xfd"


# Block_Maximum_Size: no zstd block inflates to more than 128 KiB.
_ZSTD_BLOCK_MAX = 128 * 1024
# RFC 8878 section 3.1.1.2.2: Block_Type 2, Compressed_Block (0 raw, 1 RLE).
_COMPRESSED_BLOCK = 2


_ZSTD_DICT_ID_BYTES = (0, 1, 2, 4)


_ZSTD_CONTENT_SIZE_BYTES = (0, 2, 4, 8)


_zstd_local = threading.local()


def _zstd_frames(data: bytes) -> list[tuple[int, int, int]] | None:
    """Walk the zstd frames of ``data`` by their block headers (RFC 8878 section 3.1.1) without
    inflating anything: ``(start, end, most bytes it can inflate to)`` per frame, or None when
    the bytes are not plain zstd frames back to back (skippable frames, reserved bits, a frame
    that runs past the end), which the sliced inflater then deals with and reports."""
    frames = []
    pos = 0
    end = len(data)
    while pos < end:
        start = pos
        if data[pos : pos + 4] != _ZSTD_FRAME_MAGIC or pos + 5 > end:
            return None
        descriptor = data[pos + 4]
        if descriptor & 0x08:  # reserved bit
            return None
        single_segment = descriptor & 0x20
        content_size_bytes = _ZSTD_CONTENT_SIZE_BYTES[descriptor >> 6] or (1 if single_segment else 0)
        pos += 5 + (0 if single_segment else 1) + _ZSTD_DICT_ID_BYTES[descriptor & 0x03] + content_size_bytes
        bound = 0
        while True:
            if pos + 3 > end:
                return None
            header = data[pos] | (data[pos + 1] << 8) | (data[pos + 2] << 16)
            block_type = (header >> 1) & 0x03
            block_size = header >> 3
            pos += 3
            if block_type == 0:  # raw: stored as is
                bound += block_size
                pos += block_size
            elif block_type == 1:  # RLE: one byte repeated block_size times
                bound += block_size
                pos += 1
            elif block_type == _COMPRESSED_BLOCK:
                bound += _ZSTD_BLOCK_MAX
                pos += block_size
            else:
                return None
            if header & 0x01:  # last block
                break
        if descriptor & 0x04:  # content checksum
            pos += 4
        if pos > end:
            return None
        frames.append((start, pos, bound))
    return frames or None


def _unzstd_whole(data: bytes, max_size: int) -> bytes | None:
    """The zstd fast path: each frame inflated in one call, or None to leave it to the slices.

    The sliced inflater of :func:`decompress_zstd` pays a Python round trip per KiB of input and a new
    decompression context per call (about 8 us each); for a typical batch (one frame, a few
    KiB) that is most of the cost. Here the frames' block headers bound what they can inflate
    to before anything is inflated; only when that bound is within ``max_size`` is each frame
    inflated whole, with a decompression context kept per thread. Any surprise (a bound past
    the cap, a zstd error, a frame that does not end where its blocks say) returns None, and
    the sliced inflater runs from the start and raises its own error: the result, or the
    error, is always the sliced inflater's.
    """
    frames = _zstd_frames(data)
    if frames is None or sum(bound for _, _, bound in frames) > max_size:
        return None
    decompressor = getattr(_zstd_local, "decompressor", None)
    if decompressor is None:
        decompressor = _zstd_local.decompressor = ZSTD_DECOMPRESSOR()
    parts = []
    try:
        for start, end, _ in frames:
            inflater = decompressor.decompressobj()
            parts.append(inflater.decompress(data[start:end]))
            if not inflater.eof or inflater.unused_data:
                return None
    except zstandard.ZstdError:
        return None
    out = parts[0] if len(parts) == 1 else b"".join(parts)
    return out if len(out) <= max_size else None
