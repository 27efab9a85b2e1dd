"""Kafka's message serialisation (``org.apache.kafka.common.protocol.ByteBufferAccessor`` and the
generated ``*Data.read`` methods), as far as the internal topics' records need it.

Non-flexible versions use int16-length strings and int32-length arrays; flexible versions
(KIP-482) use unsigned-varint "compact" lengths stored as length + 1 (0 is null) and end every
struct with tagged fields: a count, then (tag, size, bytes) each. Bad bytes raise
:class:`MalformedMessage`, which the decoders of this package catch and report; it never leaves
the package.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from typing import Any

from kafka_audit.errors import KafkaAuditError

_I8, _I16, _U16, _I32, _I64, _F64 = (struct.Struct(f) for f in (">b", ">h", ">H", ">i", ">q", ">d"))
# ByteUtils.readUnsignedVarint reads at most 5 bytes.
_MAX_UNSIGNED_VARINT_BYTES = 5


class MalformedMessage(KafkaAuditError):
    """The bytes do not hold the message their version says."""


def framed_message(value: bytes | None) -> tuple[MessageReader, int]:
    """A record value that AbstractApiMessageSerde framed (the metadata log's MetadataRecordSerde,
    RemoteLogMetadataSerde): a reader of its flexible fields, after the frame version it reads
    (an unsigned varint). A null value is malformed."""
    if value is None:
        raise MalformedMessage("null value")
    reader = MessageReader(value, flexible=True)
    return reader, reader.unsigned_varint()


class MessageReader:
    """A cursor over one serialised message; ``flexible`` selects the compact forms."""

    __slots__ = ("data", "pos", "flexible")

    def __init__(self, data: bytes, pos: int = 0, flexible: bool = False) -> None:
        self.data = data
        self.pos = pos
        self.flexible = flexible

    def _fixed(self, layout: struct.Struct) -> int:
        """An integer field (:meth:`float64` reads the one float layout)."""
        if self.pos + layout.size > len(self.data):
            raise MalformedMessage(f"ends at byte {len(self.data)} inside a {layout.size}-byte field at {self.pos}")
        value: int
        (value,) = layout.unpack_from(self.data, self.pos)
        self.pos += layout.size
        return value

    def int8(self) -> int:
        return self._fixed(_I8)

    def int16(self) -> int:
        return self._fixed(_I16)

    def uint16(self) -> int:
        return self._fixed(_U16)

    def int32(self) -> int:
        return self._fixed(_I32)

    def int64(self) -> int:
        return self._fixed(_I64)

    def float64(self) -> float:
        if self.pos + _F64.size > len(self.data):
            raise MalformedMessage(f"ends at byte {len(self.data)} inside a {_F64.size}-byte field at {self.pos}")
        value: float
        (value,) = _F64.unpack_from(self.data, self.pos)
        self.pos += _F64.size
        return value

    def boolean(self) -> bool:
        return self.int8() != 0

    def uuid(self) -> str:
        """A Uuid as ``Uuid.toString`` prints it: URL-safe base64 of its 16 bytes, no padding."""
        return base64.urlsafe_b64encode(self.raw(16)).rstrip(b"=").decode("ascii")

    def unsigned_varint(self) -> int:
        value = shift = 0
        for _ in range(_MAX_UNSIGNED_VARINT_BYTES):
            if self.pos >= len(self.data):
                raise MalformedMessage(f"ends inside a varint at {self.pos}")
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
        raise MalformedMessage(f"varint longer than {_MAX_UNSIGNED_VARINT_BYTES} bytes at {self.pos}")

    def raw(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise MalformedMessage(f"a field of {size} bytes at {self.pos} passes the end ({len(self.data)})")
        value = self.data[self.pos : self.pos + size]
        self.pos += size
        return bytes(value)

    def _length(self, wide: bool) -> int:
        """A string/bytes/array length; -1 for null."""
        if self.flexible:
            return self.unsigned_varint() - 1
        return self.int32() if wide else self.int16()

    def string(self) -> str | None:
        length = self._length(wide=False)
        if length < 0:
            return None
        return self.raw(length).decode("utf-8", errors="backslashreplace")

    def bytes_(self) -> bytes | None:
        length = self._length(wide=True)
        return None if length < 0 else self.raw(length)

    def array(self, element: Callable[[MessageReader], Any]) -> list[Any] | None:
        length = self._length(wide=True)
        if length < 0:
            return None
        if length > len(self.data) - self.pos:  # every element takes at least one byte
            raise MalformedMessage(f"an array of {length} elements at {self.pos} cannot fit")
        return [element(self) for _ in range(length)]

    def tagged_fields(self, known: dict[int, tuple[str, Callable[[MessageReader], Any]]] | None = None) -> dict[str, Any]:
        """A flexible struct's tagged fields: the known ones decoded by name, unknown ones as hex
        under ``tag_<n>`` (Kafka keeps them as unknown tagged fields)."""
        if not self.flexible:
            return {}
        found: dict[str, Any] = {}
        for _ in range(self.unsigned_varint()):
            tag = self.unsigned_varint()
            size = self.unsigned_varint()
            body = self.raw(size)
            if known and tag in known:
                name, read = known[tag]
                inner = MessageReader(body, 0, self.flexible)
                found[name] = read(inner)
            else:
                found[f"tag_{tag}"] = body.hex()
        return found

    def expect_end(self) -> None:
        if self.pos != len(self.data):
            raise MalformedMessage(f"{len(self.data) - self.pos} bytes left after the message")


def int32_array(reader: MessageReader) -> list[int] | None:
    return reader.array(MessageReader.int32)
