"""Test-only writer of Aiven tiered-storage-for-apache-kafka objects, from the plugin's source.

``KafkaRemoteStorageManager.copyLogSegmentData``: the segment cut into ``chunk_size`` chunks
(``BaseTransformChunkEnumeration``), each zstd-compressed with its content size
(``CompressionChunkEnumeration``) when ``compression``, then AES-256-GCM-encrypted
(``EncryptionChunkEnumeration``: random 12-byte IV + ciphertext + 16-byte tag, the AAD from
``AesEncryptionProvider.createDataKeyAndAAD``) when a public key is given. The chunk index is
fixed when every transformed chunk has a known size (no compression), variable otherwise
(``TransformFinisher.chunkIndexBuilder``), its sizes encoded by ``ChunkSizesBinaryCodec`` and
zstd + base64 (``TransformedChunksSerializer``). The indexes go one after the other into the
``.indexes`` object, each encrypted alone (``transformIndex``). The data key is wrapped with
RSA-OAEP, SHA3-512 and MGF1-SHA3-512 (``RsaEncryptionProvider``), as ``"<key id>:<base64>"``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
from dataclasses import dataclass, field

import zstandard

INDEX_ORDER = ("offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction")


def encode_chunk_sizes(values: list[int]) -> bytes:
    """``ChunkSizesBinaryCodec.encode``."""
    if not values:
        return struct.pack(">i", 0)
    if len(values) == 1:
        return struct.pack(">ii", 1, values[0])
    head = values[:-1]
    base = min(head)
    width = max(1 if v - base <= 0xFF else 2 if v - base <= 0xFFFF else 3 if v - base <= 0xFFFFFF else 4 for v in head)
    body = b"".join((v - base).to_bytes(4, "big")[4 - width :] for v in head)
    return struct.pack(">iib", len(values), base, width) + body + struct.pack(">i", values[-1])


def zstd_frame(data: bytes) -> bytes:
    """A zstd frame with its content size (``setContentSize(true)``)."""
    return zstandard.ZstdCompressor(write_content_size=True).compress(data)


def _mgf1(seed: bytes, length: int) -> bytes:
    out, counter = b"", 0
    while len(out) < length:
        out += hashlib.sha3_512(seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    return out[:length]


def wrap_data_key(public_numbers, data_key: bytes) -> bytes:
    """RSA-OAEP encryption with SHA3-512 and MGF1-SHA3-512, empty label (RFC 8017 7.1.1)."""
    n, e = public_numbers.n, public_numbers.e
    k, h = (n.bit_length() + 7) // 8, 64
    db = hashlib.sha3_512(b"").digest() + b"\x00" * (k - len(data_key) - 2 * h - 2) + b"\x01" + data_key
    seed = os.urandom(h)
    masked_db = bytes(a ^ b for a, b in zip(db, _mgf1(seed, k - h - 1)))
    masked_seed = bytes(a ^ b for a, b in zip(seed, _mgf1(masked_db, h)))
    em = b"\x00" + masked_seed + masked_db
    return pow(int.from_bytes(em, "big"), e, n).to_bytes(k, "big")


@dataclass
class RsmSegment:
    """One segment's three objects, keyed by their keys under the writer's prefix."""

    objects: dict[str, bytes] = field(default_factory=dict)
    stem: str = ""


def object_stem(prefix: str, topic: str, topic_id: str, partition: int, start_offset: int, segment_id: str) -> str:
    """``ObjectKeyFactory.mainPath`` under ``prefix``."""
    return f"{prefix}{topic}-{topic_id}/{partition}/{start_offset:020d}-{segment_id}"


def write_segment(
    stem: str,
    log: bytes,
    indexes: dict[str, bytes | None],
    chunk_size: int,
    compression: bool = False,
    public_key=None,
    key_id: str = "key1",
) -> RsmSegment:
    """The ``.log``, ``.indexes`` and ``.rsm-manifest`` objects of one segment (``indexes``:
    index type -> bytes; ``transaction`` None: no transaction index)."""
    cipher = aad = data_key = None
    if public_key is not None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        data_key, aad = os.urandom(32), os.urandom(32)
        cipher = AESGCM(data_key)

    def encrypt(chunk: bytes) -> bytes:
        if cipher is None:
            return chunk
        iv = os.urandom(12)
        return iv + cipher.encrypt(iv, chunk, aad)

    originals = [log[i : i + chunk_size] for i in range(0, len(log), chunk_size)]
    transformed = [encrypt(zstd_frame(c) if compression else c) for c in originals]
    sizes = [len(t) for t in transformed]
    if compression:
        encoded = base64.b64encode(zstd_frame(encode_chunk_sizes(sizes))).decode()
        chunk_index = {"type": "variable", "originalChunkSize": chunk_size, "originalFileSize": len(log), "transformedChunks": encoded}
    else:
        chunk_index = {
            "type": "fixed", "originalChunkSize": chunk_size, "originalFileSize": len(log),
            "transformedChunkSize": len(encrypt(b"\x00" * chunk_size)), "finalTransformedChunkSize": sizes[-1] if sizes else 0,
        }
    blobs, positions, at = [], {}, 0
    for name in INDEX_ORDER:
        data = indexes.get(name)
        if data is None and name == "transaction":
            positions[name] = None
            continue
        blob = encrypt(data) if data else b""
        positions[name] = {"position": at, "size": len(blob)}
        blobs.append(blob)
        at += len(blob)
    manifest: dict = {"version": "1", "chunkIndex": chunk_index, "segmentIndexes": positions, "compression": compression}
    if public_key is not None:
        wrapped = wrap_data_key(public_key.public_numbers(), data_key)
        manifest["encryption"] = {"dataKey": f"{key_id}:{base64.b64encode(wrapped).decode()}", "aad": base64.b64encode(aad).decode()}
    return RsmSegment(
        {stem + ".log": b"".join(transformed), stem + ".indexes": b"".join(blobs), stem + ".rsm-manifest": json.dumps(manifest).encode()},
        stem,
    )


def segment_id_for(base_offset: int) -> str:
    """A stable 22-character (Uuid-like) segment id for a test segment."""
    return base64.urlsafe_b64encode(hashlib.sha256(str(base_offset).encode()).digest()[:16]).rstrip(b"=").decode()


# __remote_log_metadata records (RemoteLogMetadataSerde: frame version 1, api key, version, flexible body).

def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _uuid(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "==")


def _string(text: str) -> bytes:
    data = text.encode()
    return _uvarint(len(data) + 1) + data


def _tags(tags: dict[int, bytes]) -> bytes:
    return _uvarint(len(tags)) + b"".join(_uvarint(t) + _uvarint(len(v)) + v for t, v in sorted(tags.items()))


STATES = {"COPY_SEGMENT_STARTED": 0, "COPY_SEGMENT_FINISHED": 1, "DELETE_SEGMENT_STARTED": 2, "DELETE_SEGMENT_FINISHED": 3}


def _segment_id_entry(topic: str, topic_id: str, partition: int, segment_id: str) -> bytes:
    tip = _string(topic) + _uuid(topic_id) + struct.pack(">i", partition) + _tags({})
    return tip + _uuid(segment_id) + _tags({})


def segment_metadata_record(topic: str, topic_id: str, partition: int, segment_id: str, start: int, end: int,
                            size: int, state: str = "COPY_SEGMENT_STARTED", *, txn_index_empty: bool | None = None,
                            event_ms: int = 1_700_000_000_000, version: int = 0) -> bytes:
    """A ``RemoteLogSegmentMetadataRecord`` value (api key 0)."""
    body = _segment_id_entry(topic, topic_id, partition, segment_id)
    body += struct.pack(">qqiqq", start, end, 1, event_ms, event_ms)
    body += _uvarint(2) + struct.pack(">iq", 0, start) + _tags({})  # one leader epoch entry
    body += struct.pack(">i", size) + _uvarint(0) + struct.pack(">b", STATES[state])
    body += _tags({} if txn_index_empty is None else {0: bytes([txn_index_empty])})
    return _uvarint(1) + _uvarint(0) + _uvarint(version) + body


def segment_update_record(topic: str, topic_id: str, partition: int, segment_id: str, state: str,
                          event_ms: int = 1_700_000_000_001) -> bytes:
    """A ``RemoteLogSegmentMetadataUpdateRecord`` value (api key 1, version 0)."""
    body = _segment_id_entry(topic, topic_id, partition, segment_id)
    body += struct.pack(">iq", 1, event_ms) + _uvarint(0) + struct.pack(">b", STATES[state]) + _tags({})
    return _uvarint(1) + _uvarint(1) + _uvarint(0) + body
