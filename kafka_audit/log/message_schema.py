"""Kafka's message schemas as data, read the way the generated ``*Data.read`` methods read them.

A schema is the field list of one of Kafka's ``*.json`` message definitions, written compactly:
``Name:type`` fields separated by spaces, where

- ``Name(3+)`` / ``Name(1)`` / ``Name(0-2)``: the field exists in those versions only ("versions");
- ``Name@N``: tagged field N (read from the struct's tagged fields, flexible versions only);
- types: ``int8 int16 int32 int64 uint16 uint32 float64 bool uuid string bytes``, ``[T]`` an
  array of T, ``{...}`` a struct, or the name of a struct defined earlier in the same schema by
  ``&Name={...}`` (a "commonStruct");
- a trailing ``?`` marks a nullable field ("nullableVersions").

Reading follows ``ByteBufferAccessor`` and the generated readers: non-flexible versions use int16
string lengths and int32 bytes/array lengths; flexible versions (KIP-482) use compact lengths
(unsigned varint, length + 1, 0 = null) and end every struct with its tagged fields. A nullable
struct is preceded by a presence marker. A null where the schema does not allow one, a
tagged field whose bytes do not hold exactly its value, or bytes left over are errors
(:class:`MalformedMessage`); an unknown tag is kept as hex under ``tag_<n>``, as Kafka keeps it
among the unknown tagged fields. Field names come out in snake_case.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from typing import Any

from kafka_audit.record.message_reader import MalformedMessage, MessageReader

_PRIMITIVES = frozenset(
    ("int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "bool", "uuid", "string", "bytes")
)
_FIELD = re.compile(r"(&?)(\w+)(?:\((\d+)(\+|-\d+)?\))?(?:@(\d+))?[:=]")
_TYPE_NAME = re.compile(r"\w+")
_SNAKE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


@dataclass(frozen=True)
class Field:
    """One field: its snake_case name, versions, tag, type (``kind`` a primitive or ``struct``)."""

    name: str
    low: int
    high: int | None
    tag: int | None
    kind: str
    array: bool
    nullable: bool
    fields: tuple[Field, ...] = ()

    def present(self, version: int) -> bool:
        return self.low <= version and (self.high is None or version <= self.high)


@dataclass(frozen=True)
class Schema:
    """A message: name, valid versions and the first flexible version (None: never flexible)."""

    name: str
    low: int
    high: int
    flexible_from: int | None
    fields: tuple[Field, ...]

    def knows(self, version: int) -> bool:
        return self.low <= version <= self.high

    def read(self, data: bytes, version: int, pos: int = 0, to_end: bool = True) -> dict[str, Any]:
        """The message at ``pos`` of ``data`` at ``version``; with ``to_end``, to the last byte."""
        flexible = self.flexible_from is not None and version >= self.flexible_from
        reader = MessageReader(data, pos, flexible)
        out = _read_struct(reader, self.fields, version)
        if to_end:
            reader.expect_end()
        return out


def versions(text: str) -> tuple[int, int | None]:
    """``"0-4"`` -> (0, 4), ``"4+"`` -> (4, None), ``"3"`` -> (3, 3)."""
    if text.endswith("+"):
        return int(text[:-1]), None
    low, _, high = text.partition("-")
    return int(low), int(high or low)


def schema(name: str, valid: str, flexible: str, fields: str) -> Schema:
    low, high = versions(valid)
    parsed, end = _parse_fields(fields, 0, {})
    if end != len(fields):
        raise ValueError(f"{name}: schema text ends early at {end}")
    return Schema(name, low, high if high is not None else low, None if flexible == "none" else versions(flexible)[0], parsed)


def _parse_fields(text: str, pos: int, structs: dict[str, tuple[Field, ...]]) -> tuple[tuple[Field, ...], int]:
    fields: list[Field] = []
    while pos < len(text) and text[pos] != "}":
        if text[pos] == " ":
            pos += 1
            continue
        match = _FIELD.match(text, pos)
        if match is None:
            raise ValueError(f"bad schema text at {pos}: {text[pos:pos + 30]!r}")
        define, name, low, high, tag = match.groups()
        kind, array, sub, pos = _parse_type(text, match.end(), structs)
        nullable = pos < len(text) and text[pos] == "?"
        pos += nullable
        if define:
            structs[name] = sub
            continue
        low_v, high_v = versions(low + (high or "")) if low else (0, None)
        fields.append(Field(_SNAKE.sub("_", name).lower(), low_v, high_v, None if tag is None else int(tag),
                            kind, array, nullable, sub))
    return tuple(fields), pos


def _parse_type(text: str, pos: int, structs: dict[str, tuple[Field, ...]]) -> tuple[str, bool, tuple[Field, ...], int]:
    array = text[pos] == "["
    pos += array
    if text[pos] == "{":
        sub, pos = _parse_fields(text, pos + 1, structs)
        kind, pos = "struct", pos + 1
    else:
        match = _TYPE_NAME.match(text, pos)
        if match is None:
            raise ValueError(f"bad type at {pos}")
        kind, pos = match.group(), match.end()
        sub = ()
        if kind in structs:
            kind, sub = "struct", structs[kind]
        elif kind not in _PRIMITIVES:
            raise ValueError(f"unknown type {kind}")
    if array:
        pos += 1  # "]"
    return kind, array, sub, pos


def _read_struct(reader: MessageReader, fields: tuple[Field, ...], version: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in fields:
        if field.tag is None and field.present(version):
            out[field.name] = _read_field(reader, field, version)
    if reader.flexible:
        out.update(_read_tagged(reader, fields, version))
    return out


def _read_tagged(reader: MessageReader, fields: tuple[Field, ...], version: int) -> dict[str, Any]:
    """The tagged fields: count, then (tag, size, value) each, tags ascending and unique."""
    known = {f.tag: f for f in fields if f.tag is not None and f.present(version)}
    out: dict[str, Any] = {}
    previous = -1
    for _ in range(reader.unsigned_varint()):
        tag, size = reader.unsigned_varint(), reader.unsigned_varint()
        if tag <= previous:
            raise MalformedMessage(f"tagged field {tag} after tagged field {previous}")
        previous = tag
        body = reader.raw(size)
        field = known.get(tag)
        if field is None:
            out[f"tag_{tag}"] = body.hex()
            continue
        inner = MessageReader(body, 0, True)
        out[field.name] = _read_field(inner, field, version, tagged=True)
        if inner.pos != len(body):
            raise MalformedMessage(f"tagged field {field.name} holds {len(body) - inner.pos} bytes more than its value")
    return out


def _read_field(reader: MessageReader, field: Field, version: int, tagged: bool = False) -> Any:
    """A field's value; a nullable struct's presence is a byte (-1 null), or in a tagged field an
    unsigned varint (0 null), as ``MessageDataGenerator.generateStructReader`` reads it."""
    if field.array:
        length = reader.unsigned_varint() - 1 if reader.flexible else reader.int32()
        if length < 0:
            return _null(field, field.nullable)
        if length > len(reader.data) - reader.pos:  # every element takes at least one byte
            raise MalformedMessage(f"{field.name}: an array of {length} elements at {reader.pos} cannot fit")
        return [_read_value(reader, field, version, False) for _ in range(length)]
    if field.kind == "struct" and field.nullable and (reader.unsigned_varint() <= 0 if tagged else reader.int8() < 0):
        return None
    return _read_value(reader, field, version, field.nullable)


def _read_value(reader: MessageReader, field: Field, version: int, nullable: bool) -> Any:
    """One value of ``field``'s type (an array's element when ``field.array``)."""
    kind = field.kind
    if kind == "struct":
        return _read_struct(reader, field.fields, version)
    if kind in ("string", "bytes"):
        length = reader.unsigned_varint() - 1 if reader.flexible else reader.int16() if kind == "string" else reader.int32()
        if length < 0:
            return _null(field, nullable)
        raw = reader.raw(length)
        return raw.decode("utf-8", errors="backslashreplace") if kind == "string" else base64.b64encode(raw).decode("ascii")
    if kind == "uint32":
        return reader.int32() & 0xFFFFFFFF
    if kind == "bool":
        return reader.boolean()
    return getattr(reader, kind)()


def _null(field: Field, nullable: bool) -> None:
    if not nullable:
        raise MalformedMessage(f"non-nullable field {field.name} was serialized as null")
