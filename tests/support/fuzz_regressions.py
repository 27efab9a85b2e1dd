"""Inputs of bench/fuzz_atheris.py that once made the sanitized extensions fail, in the harness's
format (first byte: the target). Every fuzzing run replays them first (they are seeds of its
corpus), and tests/test_fuzz_atheris.py runs them alone under ASan/UBSan."""

from __future__ import annotations

TEXT_TARGET = 4


def _varint(value: int) -> bytes:
    """A zig-zag varint (DefaultRecord's grammar), written here, not by the code under test."""
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def _header_key_record(key: bytes) -> bytes:
    """One v2 record: offset and timestamp delta 0, null key and value, one header with ``key``."""
    body = (b"\x00" + _varint(0) + _varint(0) + _varint(-1) + _varint(-1) + _varint(1)
            + _varint(len(key)) + key + _varint(-1))
    return _varint(len(body)) + body


def _text_input(records: bytes, record_count: int, print_data: bool) -> bytes:
    """The text target's input: base offset 0, base timestamp 0, base sequence -1, then the count,
    the flags (print_data) and the records."""
    fields = bytes(16) + (-1).to_bytes(4, "big", signed=True) + (record_count + 2).to_bytes(2, "big")
    return bytes((TEXT_TARGET,)) + fields + bytes((int(print_data),)) + records


def regression_inputs() -> dict[str, bytes]:
    """Each regression input by a name that says what it once did."""
    return {
        # _record_text.c wrote "] key: " past its line buffer when a header key's escaped text
        # (1002 control bytes, 4 output bytes each) ended exactly at the buffer's 4096 bytes.
        "text-header-key-fills-the-line-buffer": _text_input(_header_key_record(b"\x01" * 1002), 1, True),
    }
