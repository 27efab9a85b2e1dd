"""Bytes read front to back through a small window: what a batch too large for one buffer is read
through, as Kafka reads a compressed batch through an ``InputStream``
(``DefaultRecordBatch.compressedIterator``) and skips what it need not keep
(``skipKeyValueIterator``, ``ByteUtils.skipBytes``).

:data:`STREAM_BOUND` is where one buffer ends and the stream begins: a batch larger than it on
disk, or whose payload inflates past it, is CRC-checked, inflated and walked in pieces of at most
:data:`PIECE_BYTES`, so that a process's memory does not grow with what a length field claims.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable, Iterable, Iterator

from kafka_audit.errors import KafkaAuditError

# The buffers a batch is read from: a segment's map or bytes, a slice of them.
Buffer = bytes | bytearray | memoryview | mmap.mmap
# ``read_range(start, stop)``: ``[start, stop)`` of a file by one ranged read.
ReadRange = Callable[[int, int], bytes]

# A batch (on disk or inflated) up to this size is read in one buffer; beyond it, as a stream.
STREAM_BOUND = 8 * 1024 * 1024
# The most bytes one piece of a stream holds (a ranged read, an inflater's output).
PIECE_BYTES = 1024 * 1024
# The most records of a batch decoded into one list; a batch that counts more is walked as a stream.
MAX_LISTED_RECORDS = 100_000


def ranged_pieces(read_range: ReadRange, start: int, stop: int) -> Iterator[bytes]:
    """``[start, stop)`` of a file by ranged reads of at most :data:`PIECE_BYTES`; a read that
    comes back short (the file shrank) ends the pieces early, and the reader meets the end."""
    at = start
    while at < stop:
        piece = read_range(at, min(stop, at + PIECE_BYTES))
        if not piece:
            return
        yield piece
        at += len(piece)


def buffer_pieces(buf: Buffer, start: int, stop: int) -> Iterator[memoryview]:
    """``buf[start:stop]`` of a buffer already in memory, as views of at most :data:`PIECE_BYTES`."""
    view = memoryview(buf)
    for at in range(start, stop, PIECE_BYTES):
        yield view[at : min(stop, at + PIECE_BYTES)]


class StreamEnded(KafkaAuditError):
    """Internal signal: the stream ended before a field did; never leaves this package."""


class ByteStream:
    """Reads bytes from an iterator of pieces. ``position`` counts the bytes consumed; a field is
    read (:meth:`read`, :meth:`varint_window`) from a window of the pieces left, and long runs of
    bytes are skipped or hashed (:meth:`skip`) without ever being joined into one buffer."""

    def __init__(self, pieces: Iterable[bytes | memoryview]) -> None:
        self._pieces = iter(pieces)
        self._buf: bytes | memoryview = b""
        self._pos = 0
        self._before = 0  # bytes consumed before ``_buf[0]``

    @property
    def position(self) -> int:
        return self._before + self._pos

    def _more(self) -> bool:
        """Append the next non-empty piece to the window; False at the end of the pieces."""
        for piece in self._pieces:
            if len(piece):
                rest = self._buf[self._pos :]
                self._before += self._pos
                self._buf = bytes(rest) + bytes(piece) if len(rest) else piece
                self._pos = 0
                return True
        return False

    def available(self, n: int) -> int:
        """Make at least ``n`` bytes readable where the stream holds them; how many are (<= n)."""
        while len(self._buf) - self._pos < n and self._more():
            pass
        return min(n, len(self._buf) - self._pos)

    def at_end(self) -> bool:
        return self.available(1) == 0

    def window(self, n: int) -> tuple[bytes | memoryview, int]:
        """The window and the position in it of the next byte, with up to ``n`` bytes readable:
        for a parser that reads a few bytes in place and then calls :meth:`advance`."""
        self.available(n)
        return self._buf, self._pos

    def advance(self, to: int) -> None:
        """The parser of :meth:`window` read up to ``to`` in the window."""
        self._pos = to

    def read(self, n: int) -> bytes:
        """The next ``n`` bytes (a small field); raises :class:`StreamEnded` when fewer are left,
        having consumed them."""
        got = self.available(n)
        data = bytes(self._buf[self._pos : self._pos + got])
        self._pos += got
        if got < n:
            raise StreamEnded
        return data

    def skip(self, n: int, update: Callable[[bytes | memoryview], object] | None = None) -> int:
        """Consume up to ``n`` bytes (each run handed to ``update``, a checksum's, when given);
        returns how many there were."""
        done = 0
        while done < n:
            left = len(self._buf) - self._pos
            if left == 0:
                if not self._more():
                    break
                continue
            step = min(n - done, left)
            if update is not None:
                update(self._buf[self._pos : self._pos + step])
            self._pos += step
            done += step
        return done

    def take(self, n: int, keep: int, update: Callable[[bytes | memoryview], object] | None = None) -> bytes:
        """Consume ``n`` bytes and return the first ``keep`` of them (a bounded prefix of a key or
        value); raises :class:`StreamEnded` when fewer than ``n`` are left."""
        head = min(n, keep)
        got = self.available(head)
        prefix = bytes(self._buf[self._pos : self._pos + got])
        if update is not None and got:
            update(prefix)
        self._pos += got
        if got < head or self.skip(n - head, update) < n - head:
            raise StreamEnded
        return prefix

    def rest(self) -> int:
        """Consume what is left; how many bytes that was."""
        return self.skip(1 << 62)


def stream_checksum(
    read_range: Callable[[int, int], bytes], start: int, stop: int, update: Callable[[bytes, int], int]
) -> int:
    """A checksum (``update(data, value)``: ``crc32c.crc32c``, ``zlib.crc32``) of ``[start, stop)``
    of a file, by ranged reads: DefaultRecordBatch.ensureValid of a batch too large for one buffer."""
    value = 0
    for piece in ranged_pieces(read_range, start, stop):
        value = update(piece, value)
    return value
