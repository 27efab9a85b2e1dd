"""Reading the objects of Aiven's tiered-storage-for-apache-kafka plugin (SPEC section 5).

Keys (``ObjectKeyFactory.mainPath``): ``<prefix><topic>-<topic id>/<partition>/<20-digit start
offset>-<segment id>.{log,indexes,rsm-manifest}``. The ``.log`` object is the segment cut into
chunks, each transformed on upload (``KafkaRemoteStorageManager.transformation``): zstd-compressed
(``CompressionChunkEnumeration``, a frame with its content size) when the manifest says
``compression``, then AES-GCM-encrypted (``EncryptionChunkEnumeration``: a 12-byte IV, the
ciphertext, a 16-byte tag; the manifest's AAD) when it has ``encryption``. The ``.indexes`` object
is the segment's indexes one after the other, each encrypted alone, never compressed
(``transformIndex``); the manifest says where each lies.

:class:`SegmentObject` reconstructs the segment's bytes with ranged reads of just the chunks a
read needs, and checks each chunk's size against the manifest (so the whole against
``originalFileSize``). The data key is RSA-wrapped (``RsaEncryptionProvider``:
``RSA/NONE/OAEPWithSHA3-512AndMGF1Padding`` under BouncyCastle, whose MGF1 digest is the OAEP
digest); it is unwrapped with the ``--rsm-key-file`` private key (:class:`RsmKey`, installed by
the request's storage settings), whose bytes are never printed, logged or put in an error message. The
``cryptography`` package (``pip install 'kafka-audit[tiered]'``) reads the key and runs AES-GCM;
OAEP with SHA3-512 is decoded here (RFC 8017 7.1.2), as that package refuses SHA3 for OAEP.
"""

from __future__ import annotations

import errno
import hashlib
import re

import zstandard

from kafka_audit.errors import KafkaAuditError
from kafka_audit.io.rsm_manifest import IV_SIZE, Chunk, Manifest, ManifestError, parse_manifest
from kafka_audit.io.storage_context import StorageContext

_KEY = re.compile(
    r"(?:^|/)(?P<topic>[^/]+)-(?P<topic_id>[A-Za-z0-9_-]{22})/(?P<partition>\d{1,10})/"
    r"(?P<offset>\d{20})-(?P<segment_id>[A-Za-z0-9_-]{22})\.(?P<suffix>log|indexes|rsm-manifest)$"
)
LOG, INDEXES, MANIFEST = ".log", ".indexes", ".rsm-manifest"
# A segment's index inside its ``.indexes`` object, as a sidecar path: ``<stem>.indexes#offset``.
INDEX_REF = re.compile(r"^(?P<stem>.+)\.indexes#(?P<kind>offset|timestamp|transaction|producerSnapshot|leaderEpoch)$")
ENCRYPTED = "encrypted"
_CACHED_MANIFESTS = 256
# A manifest is a few hundred bytes (a variable chunk index: a few bytes per chunk); anything far
# larger is not one.
MAX_MANIFEST_BYTES = 16 * 1024 * 1024


class EncryptedSegment(KafkaAuditError, OSError):
    """An encrypted object that cannot be decrypted here; ``reason`` says why (``encrypted``
    when no key was given)."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.EACCES, reason)
        self.reason = reason


class RsmKey:
    """The ``--rsm-key-file`` private key (PEM). Its bytes never print: not in ``repr``/``str``,
    not in any exception raised here."""

    __slots__ = ("_pem", "_numbers", "_unwrapped")

    def __init__(self, pem: bytes) -> None:
        self._pem = pem
        self._numbers: tuple[int, ...] | None = None
        self._unwrapped: dict[bytes, bytes] = {}  # wrapped data key -> data key, for this key only

    def __repr__(self) -> str:
        return "RsmKey(<not shown>)"

    __str__ = __repr__

    def __reduce__(self):  # pickled with the tasks; the parsed numbers are not
        return (RsmKey, (self._pem,))

    def check(self) -> None:
        """Raise ValueError (naming no key material) when the file holds no RSA private key."""
        self._private_numbers()

    def _private_numbers(self) -> tuple[int, ...]:
        """``(n, p, q, d mod p-1, d mod q-1, q^-1 mod p)``: the key's CRT form."""
        if self._numbers is None:
            try:
                from cryptography.hazmat.primitives.asymmetric import rsa
                from cryptography.hazmat.primitives.serialization import load_pem_private_key
            except ImportError:
                raise EncryptedSegment(
                    f"{ENCRYPTED}: the cryptography package is not installed (pip install 'kafka-audit[tiered]')"
                ) from None
            try:
                key = load_pem_private_key(self._pem, password=None)
            except (ValueError, TypeError):
                raise ValueError("the --rsm-key-file file does not hold an unencrypted PEM private key") from None
            if not isinstance(key, rsa.RSAPrivateKey):
                raise ValueError("the --rsm-key-file key is not an RSA private key")
            k = key.private_numbers()
            self._numbers = (k.public_numbers.n, k.p, k.q, k.dmp1, k.dmq1, k.iqmp)
        return self._numbers

    def unwrap(self, wrapped: bytes) -> bytes:
        """The AES data key inside ``wrapped`` (RSA-OAEP, SHA3-512 and MGF1-SHA3-512, empty label)."""
        known = self._unwrapped.get(wrapped)
        if known is not None:
            return known
        n, p, q, dp, dq, q_inv = self._private_numbers()
        size = (n.bit_length() + 7) // 8
        c = int.from_bytes(wrapped, "big")
        if len(wrapped) != size or c >= n:  # wrapped for another key (one answer for every mismatch)
            raise EncryptedSegment(f"{ENCRYPTED}: the --rsm-key-file key does not unwrap the data key")
        m1, m2 = pow(c, dp, p), pow(c, dq, q)  # RSADP with the CRT (RFC 8017 5.1.2)
        message = _oaep_decode((m2 + (q_inv * (m1 - m2) % p) * q).to_bytes(size, "big"))
        if message is None:
            raise EncryptedSegment(f"{ENCRYPTED}: the --rsm-key-file key does not unwrap the data key")
        self._unwrapped[wrapped] = message
        return message


def _mgf1(seed: bytes, length: int) -> bytes:
    out = b""
    counter = 0
    while len(out) < length:
        out += hashlib.sha3_512(seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    return out[:length]


def _oaep_decode(em: bytes) -> bytes | None:
    """EME-OAEP decoding (RFC 8017 7.1.2 step 3) with SHA3-512; None when it does not decode."""
    h = 64
    if len(em) < 2 * h + 2 or em[0] != 0:
        return None
    masked_seed, masked_db = em[1 : 1 + h], em[1 + h :]
    seed = bytes(a ^ b for a, b in zip(masked_seed, _mgf1(masked_db, h)))
    db = bytes(a ^ b for a, b in zip(masked_db, _mgf1(seed, len(masked_db))))
    if db[:h] != hashlib.sha3_512(b"").digest():
        return None
    rest = db[h:].lstrip(b"\x00")
    return rest[1:] if rest[:1] == b"\x01" else None


def stem_of(path: str) -> str | None:
    """The object key without its suffix when ``path`` names an object of the plugin's layout."""
    match = _KEY.search(path)
    return path[: match.start("suffix") - 1] if match else None


def place_of(path: str) -> tuple[str, str, int, int, str] | None:
    """``(topic, topic id, partition, start offset, segment id)`` of an object of the plugin's layout."""
    match = _KEY.search(path)
    if not match:
        return None
    return match["topic"], match["topic_id"], int(match["partition"]), int(match["offset"]), match["segment_id"]


def is_segment_log(path: str) -> bool:
    """Whether ``path`` is a ``.log`` object of the plugin's layout (chunked, with a manifest)."""
    return path.endswith(LOG) and stem_of(path) is not None


def load_manifest(stem: str, storage: StorageContext) -> Manifest:
    """The manifest of the segment at ``stem``; OSError when it cannot be read. A request's
    segment and index reads share those it read (its storage context holds the last
    :data:`_CACHED_MANIFESTS`)."""
    with storage.manifests_lock:
        cached = storage.manifests.get(stem)
    if cached is not None:
        return cached
    path = stem + MANIFEST
    try:
        data = storage.read_bytes(path, MAX_MANIFEST_BYTES + 1)
        if len(data) > MAX_MANIFEST_BYTES:
            raise ManifestError(f"larger than {MAX_MANIFEST_BYTES:,} bytes")
        manifest = parse_manifest(data)
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, f"its manifest {path.rsplit('/', 1)[-1]} is missing") from None
    except ManifestError as exc:
        raise OSError(errno.EINVAL, f"its manifest cannot be read: {exc}") from None
    with storage.manifests_lock:
        storage.manifests[stem] = manifest
        while len(storage.manifests) > _CACHED_MANIFESTS:
            storage.manifests.popitem(last=False)
    return manifest


def _data_key(manifest: Manifest, storage: StorageContext) -> bytes:
    """The segment's AES data key, unwrapped with the installed ``--rsm-key-file`` key."""
    assert manifest.encryption is not None
    key = storage.rsm_key
    if key is None:
        raise EncryptedSegment(ENCRYPTED)
    try:
        return key.unwrap(manifest.encryption.wrapped_key)
    except ValueError as exc:  # the key file itself is unusable
        raise EncryptedSegment(f"{ENCRYPTED}: {exc}") from None


def _aes_gcm(data_key: bytes):
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:
        raise EncryptedSegment(
            f"{ENCRYPTED}: the cryptography package is not installed (pip install 'kafka-audit[tiered]')"
        ) from None
    return AESGCM(data_key)


def _decrypt(cipher, aad: bytes, data: bytes, what: str) -> bytes:
    """``DecryptionChunkEnumeration``: IV first, then ciphertext and tag."""
    from cryptography.exceptions import InvalidTag

    try:
        return cipher.decrypt(data[:IV_SIZE], data[IV_SIZE:], aad)
    except (InvalidTag, ValueError):
        raise OSError(errno.EIO, f"{what} does not decrypt with its data key (AES-GCM tag mismatch)") from None


class SegmentObject:
    """The original bytes of a chunked ``.log`` object: ``size`` and ``read(start, stop)``, the
    :class:`~kafka_audit.record.range_buffer.Ranges` a segment walk reads."""

    def __init__(self, path: str, storage: StorageContext) -> None:
        stem = stem_of(path)
        if stem is None:
            raise OSError(errno.EINVAL, "not an object of the tiered-storage plugin's layout")
        self.manifest = load_manifest(stem, storage)
        self.size = self.manifest.original_size
        index = self.manifest.chunk_index
        self._object = storage.open_ranges(path)
        if self._object.size != index.transformed_size:
            raise OSError(
                errno.EIO,
                f"the .log object holds {self._object.size:,} bytes, its manifest's chunks {index.transformed_size:,}",
            )
        encryption = self.manifest.encryption
        self._cipher = _aes_gcm(_data_key(self.manifest, storage)) if encryption is not None else None
        self._aad = encryption.aad if encryption is not None else b""
        self._last: tuple[int, bytes] | None = None  # the chunk decoded last (reads overlap at chunk edges)

    def read(self, start: int, stop: int) -> bytes:
        """Original bytes ``[start, stop)``: one ranged read of the chunks that hold them."""
        chunks = self.manifest.chunk_index.chunks_for_range(start, stop)
        if not chunks:
            return b""
        last = self._last
        reuse = last is not None and last[0] == chunks[0].id
        needed = chunks[1:] if reuse else chunks
        pieces: list[bytes] = [last[1]] if reuse and last is not None else []
        if needed:
            first_at = needed[0].transformed_position
            raw = self._object.read(first_at, needed[-1].transformed_position + needed[-1].transformed_size)
            for chunk in needed:
                at = chunk.transformed_position - first_at
                pieces.append(self._detransform(chunk, raw[at : at + chunk.transformed_size]))
            self._last = (needed[-1].id, pieces[-1])
        data = b"".join(pieces)
        at = start - chunks[0].original_position
        return data[at : at + min(stop, self.size) - start]

    def _detransform(self, chunk: Chunk, data: bytes) -> bytes:
        """``DetransformChunkEnumeration``: decrypt, then decompress; the size is the manifest's."""
        what = f"chunk {chunk.id}"
        if len(data) != chunk.transformed_size:
            raise OSError(errno.EIO, f"the .log object ended inside {what}")
        if self._cipher is not None:
            data = _decrypt(self._cipher, self._aad, data, what)
        if self.manifest.compression:
            try:
                data = zstandard.ZstdDecompressor().decompress(data, max_output_size=chunk.original_size)
            except zstandard.ZstdError as exc:
                raise OSError(errno.EIO, f"{what} does not decompress ({exc})") from None
        if len(data) != chunk.original_size:
            raise OSError(errno.EIO, f"{what} holds {len(data):,} bytes, its manifest says {chunk.original_size:,}")
        return data


def index_ref(stem: str, kind: str) -> str:
    """The sidecar path of one index inside the segment's ``.indexes`` object."""
    return f"{stem}{INDEXES}#{kind}"


def read_index(ref: str, storage: StorageContext) -> bytes:
    """The bytes of one index inside a ``.indexes`` object (decrypted when the segment is)."""
    match = INDEX_REF.match(ref)
    if match is None:
        raise OSError(errno.EINVAL, "not an index of a .indexes object")
    stem, kind = match["stem"], match["kind"]
    manifest = load_manifest(stem, storage)
    where = manifest.indexes.get(kind)
    if where is None or where[1] == 0:
        return b""
    position, size = where
    data = storage.open_ranges(stem + INDEXES).read(position, position + size)
    if len(data) != size:
        raise OSError(errno.EIO, f"the .indexes object ends inside its {kind} index")
    if manifest.encryption is None:
        return data
    cipher = _aes_gcm(_data_key(manifest, storage))
    return _decrypt(cipher, manifest.encryption.aad, data, f"the {kind} index")
