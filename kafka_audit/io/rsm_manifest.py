"""The segment manifest of Aiven's tiered-storage-for-apache-kafka plugin (``.rsm-manifest``).

One JSON object per remote segment (``SegmentManifestV1``, written by
``KafkaRemoteStorageManager.uploadManifest``): ``chunkIndex`` (``ChunkIndex``: ``"type"``
``fixed`` or ``variable``), ``segmentIndexes`` (``SegmentIndexesV1``: where each index lies in the
``.indexes`` object), ``compression`` (every chunk a zstd frame) and, when encrypted,
``encryption`` (``SegmentEncryptionMetadataV1``: ``dataKey`` = ``"<key id>:<base64 of the
RSA-wrapped AES key>"``, ``aad`` base64). Nothing here reads storage or decrypts.

Chunks (``AbstractChunkIndex.materializeChunks``): the original file is cut every
``originalChunkSize`` bytes, the last chunk holding the rest; a fixed index gives every
transformed chunk ``transformedChunkSize`` bytes but the last (``finalTransformedChunkSize``), a
variable one lists them (``transformedChunks``: base64 of a zstd frame of
``ChunkSizesBinaryCodec``'s encoding). An empty file has one empty chunk.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from dataclasses import dataclass
from typing import Any

import zstandard

from kafka_audit.errors import KafkaAuditError

# TransformedChunksDeserializer.MAX_DECOMPRESSED_SIZE
MAX_ENCODED_CHUNK_SIZES = 10 * 1024 * 1024
# SegmentEncryptionMetadataV1.IV_SIZE; AesEncryptionProvider.GCM_TAG_LENGTH (bits) / 8.
IV_SIZE = 12
GCM_TAG_SIZE = 16
# SegmentIndexesV1's fields (RemoteStorageManager.IndexType), in the order they were uploaded.
INDEX_TYPES = ("offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction")


class ManifestError(KafkaAuditError, ValueError):
    """The manifest is not a ``SegmentManifestV1`` this reader understands (one line)."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """``io.aiven.kafka.tieredstorage.Chunk``: where a chunk lies in the original file and in the object."""

    id: int
    original_position: int
    original_size: int
    transformed_position: int
    transformed_size: int


@dataclass(frozen=True, slots=True)
class ChunkIndex:
    """A fixed or variable chunk index; ``transformed`` holds every chunk's size in the object."""

    kind: str
    original_chunk_size: int
    original_file_size: int
    transformed: tuple[int, ...]

    @property
    def chunks(self) -> list[Chunk]:
        """``materializeChunks``: the chunks in order (an empty file: one empty chunk)."""
        if not self.transformed:
            return [Chunk(0, 0, 0, 0, 0)]
        chunks, original, transformed = [], 0, 0
        last = len(self.transformed) - 1
        for i, size in enumerate(self.transformed):
            length = self.original_file_size - last * self.original_chunk_size if i == last else self.original_chunk_size
            chunks.append(Chunk(i, original, length, transformed, size))
            original += length
            transformed += size
        return chunks

    @property
    def transformed_size(self) -> int:
        """The ``.log`` object's size this index describes."""
        return sum(self.transformed)

    def chunks_for_range(self, start: int, stop: int) -> list[Chunk]:
        """The chunks holding original bytes ``[start, stop)`` (``chunksForRange``)."""
        if stop <= start or start >= self.original_file_size:
            return []
        first = start // self.original_chunk_size
        last = (min(stop, self.original_file_size) - 1) // self.original_chunk_size
        return self.chunks[first : last + 1]


@dataclass(frozen=True, slots=True)
class Encryption:
    """``SegmentEncryptionMetadataV1`` as stored: the wrapped data key and the AAD."""

    key_id: str
    wrapped_key: bytes
    aad: bytes

    def __repr__(self) -> str:
        return f"Encryption(key_id={self.key_id!r})"


@dataclass(frozen=True, slots=True)
class Manifest:
    """A parsed ``.rsm-manifest``. ``indexes``: index type -> (position, size) in the
    ``.indexes`` object, None for an absent transaction index."""

    chunk_index: ChunkIndex
    indexes: dict[str, tuple[int, int] | None]
    compression: bool
    encryption: Encryption | None
    # The RemoteLogSegmentMetadata the plugin writes beside (read-only in its serde), if any.
    segment_metadata: dict[str, Any] | None = None

    @property
    def original_size(self) -> int:
        return self.chunk_index.original_file_size


# ChunkSizesBinaryCodec: a value's width above the base is 1 to 4 bytes; the header (count i32,
# base i32, width i8) is 9 bytes, the last value a full i32.
_MAX_WIDTH = 4
_HEADER_SIZE = 9
_LAST_SIZE = 4


def decode_chunk_sizes(encoded: bytes) -> list[int]:
    """``ChunkSizesBinaryCodec.decode``: count i32; one value: that i32; more: base i32, bytes
    per value i8, ``count - 1`` big-endian values of that width above the base, the last value
    as a full i32."""
    try:
        (count,) = struct.unpack_from(">i", encoded, 0)
        if count == 0:
            return []
        if count == 1:
            return [struct.unpack_from(">i", encoded, 4)[0]]
        base, width = struct.unpack_from(">ib", encoded, 4)
        if count < 0 or not 1 <= width <= _MAX_WIDTH or len(encoded) != _HEADER_SIZE + (count - 1) * width + _LAST_SIZE:
            raise ManifestError(f"transformedChunks: {len(encoded)} bytes cannot hold {count} sizes of {width} bytes")
        pos = _HEADER_SIZE
        values = []
        for _ in range(count - 1):
            values.append(base + int.from_bytes(encoded[pos : pos + width], "big"))
            pos += width
        values.append(struct.unpack_from(">i", encoded, pos)[0])
        return values
    except struct.error:
        raise ManifestError(f"transformedChunks: {len(encoded)} bytes are too few") from None


def _transformed_chunks(text: Any) -> list[int]:
    """``TransformedChunksDeserializer``: base64 of a zstd frame (with its content size)."""
    if not isinstance(text, str):
        raise ManifestError("transformedChunks is not a string")
    try:
        compressed = base64.b64decode(text, validate=True)
        params = zstandard.get_frame_parameters(compressed)
        if not 0 <= params.content_size <= MAX_ENCODED_CHUNK_SIZES:
            raise ManifestError(f"transformedChunks: invalid decompressed size {params.content_size}")
        encoded = zstandard.ZstdDecompressor().decompress(compressed, max_output_size=params.content_size)
    except (binascii.Error, ValueError, zstandard.ZstdError) as exc:
        if isinstance(exc, ManifestError):
            raise
        raise ManifestError(f"transformedChunks cannot be decoded ({exc})") from None
    return decode_chunk_sizes(encoded)


def _int(obj: dict, name: str, where: str) -> int:
    value = obj.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ManifestError(f"{where}.{name} is missing or not a non-negative integer")
    return value


def parse_chunk_index(obj: Any) -> ChunkIndex:
    """``FixedSizeChunkIndex`` / ``VariableSizeChunkIndex`` by ``"type"``, checked as their constructors check."""
    if not isinstance(obj, dict):
        raise ManifestError("chunkIndex is missing")
    kind = obj.get("type")
    chunk_size = _int(obj, "originalChunkSize", "chunkIndex")
    file_size = _int(obj, "originalFileSize", "chunkIndex")
    if chunk_size == 0:
        raise ManifestError("chunkIndex.originalChunkSize must be positive")
    count = -(-file_size // chunk_size)
    if kind == "fixed":
        size, final = _int(obj, "transformedChunkSize", "chunkIndex"), _int(obj, "finalTransformedChunkSize", "chunkIndex")
        transformed = tuple([size] * (count - 1) + [final]) if count else ()
    elif kind == "variable":
        transformed = tuple(_transformed_chunks(obj.get("transformedChunks")))
        if len(transformed) != count and not (count == 0 and len(transformed) == 1 and transformed[0] == 0):
            raise ManifestError(f"chunkIndex lists {len(transformed)} chunks for {file_size} bytes in chunks of {chunk_size}")
        if any(size < 0 for size in transformed):
            raise ManifestError("chunkIndex lists a negative chunk size")
        transformed = transformed if count else ()
    else:
        raise ManifestError(f"chunkIndex.type {kind!r} is neither fixed nor variable")
    return ChunkIndex(kind, chunk_size, file_size, transformed)


def _encryption(obj: Any) -> Encryption | None:
    if obj is None:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("dataKey"), str) or not isinstance(obj.get("aad"), str):
        raise ManifestError("encryption needs a dataKey and an aad")
    key_id, colon, wrapped = obj["dataKey"].partition(":")
    if not colon or ":" in wrapped or not key_id.strip():
        raise ManifestError("encryption.dataKey is not <key id>:<base64>")  # EncryptedDataKey.parse
    try:
        return Encryption(key_id, base64.b64decode(wrapped, validate=True), base64.b64decode(obj["aad"], validate=True))
    except binascii.Error:
        raise ManifestError("encryption.dataKey or aad is not base64") from None


def _indexes(obj: Any) -> dict[str, tuple[int, int] | None]:
    if not isinstance(obj, dict):
        raise ManifestError("segmentIndexes is missing")
    found: dict[str, tuple[int, int] | None] = {}
    for name in INDEX_TYPES:
        entry = obj.get(name)
        if entry is None and name == "transaction":  # SegmentIndexesV1: the one optional index
            found[name] = None
            continue
        if not isinstance(entry, dict):
            raise ManifestError(f"segmentIndexes.{name} is missing")
        found[name] = (_int(entry, "position", f"segmentIndexes.{name}"), _int(entry, "size", f"segmentIndexes.{name}"))
    return found


def parse_manifest(data: bytes) -> Manifest:
    """A ``.rsm-manifest`` object's bytes as a :class:`Manifest` (``version`` "1")."""
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ManifestError(f"not JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise ManifestError("not a JSON object")
    if str(obj.get("version", "1")) != "1":
        raise ManifestError(f"manifest version {obj.get('version')!r} is not 1")
    compression = obj.get("compression")
    if not isinstance(compression, bool):
        raise ManifestError("compression is missing or not a boolean")
    metadata = obj.get("remoteLogSegmentMetadata")
    return Manifest(
        parse_chunk_index(obj.get("chunkIndex")),
        _indexes(obj.get("segmentIndexes")),
        compression,
        _encryption(obj.get("encryption")),
        metadata if isinstance(metadata, dict) else None,
    )
