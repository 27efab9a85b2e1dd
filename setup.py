"""The one thing pyproject.toml cannot say without experimental settings: the C builds of the
record screen (kafka_audit/record/_record_screen.c: the audit's fast path, which only ever decides
"nothing to report"; without it every batch is validated in full, slower, with the same findings)
and of dump's record lines (kafka_audit/record/_record_text.c: dump formats records in Python
without it). Both are optional: where one cannot be built (no C compiler, no Python headers), one
line says so and the package installs without it. Both read records through
kafka_audit/record/_record_grammar.h, with the grammar's widths (varint lengths, the header bound)
taken from kafka_audit/record/default_record.py, their one home.

From Python 3.11 both are built against the stable ABI (Py_LIMITED_API 3.11: the buffer protocol
they read segments through joined the limited API in 3.11), so one abi3 wheel serves every later
Python; a 3.10 build is specific to 3.10."""

import ast
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

_GRAMMAR = Path(__file__).resolve().parent / "kafka_audit" / "record" / "default_record.py"
_GRAMMAR_H = "kafka_audit/record/_record_grammar.h"  # read_varint and skip_bytes, for both C files
_SCREEN_H = "kafka_audit/record/_screen_records.h"  # the record screen, for _record_screen.c and _batch_walk.c
_SHARED = ("MAX_VARINT_BYTES", "MAX_VARLONG_BYTES", "MIN_HEADER_BYTES")


def _grammar_macros() -> list[tuple[str, str]]:
    """``NAME = <int>`` assignments of default_record.py for the names in _SHARED, as C macros."""
    found = {
        target.id: node.value.value
        for node in ast.parse(_GRAMMAR.read_text()).body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name) and target.id in _SHARED
    }
    missing = [name for name in _SHARED if not isinstance(found.get(name), int)]
    if missing:
        raise SystemExit(f"setup.py: {_GRAMMAR} no longer defines {', '.join(missing)} as integers")
    return [(name, str(found[name])) for name in _SHARED]


# The stable ABI version the extensions are built for, from Python 3.11 (None: a 3.10 build).
_LIMITED_API = (3, 11) if sys.version_info >= (3, 11) else None
# What a build failure costs, in the one line that reports it.
_WITHOUT = {
    "kafka_audit.record._record_screen": "the audit will validate every batch in full (slower, the same findings)",
    "kafka_audit.record._record_text": "dump will format records in Python (slower, the same lines)",
    "kafka_audit.record._batch_walk": "the audit will walk batches in Python (slower, the same findings)",
}


class _BuildExt(build_ext):
    """A C build that fails (no compiler, no headers) is one line on stderr; the install goes on."""

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:  # CompileError, LinkError, a missing compiler: any failure
            reason = " ".join(str(exc).split())[:200]
            print(f"kafka-audit: building {ext.name} failed ({reason}): installing without it; "
                  f"{_WITHOUT[ext.name]}", file=sys.stderr)


def _extension(name: str, source: str, depends: list[str]) -> Extension:
    macros = _grammar_macros()
    if _LIMITED_API is not None:
        macros.append(("Py_LIMITED_API", f"0x{_LIMITED_API[0]:02X}{_LIMITED_API[1]:02X}0000"))
    return Extension(
        name, sources=[source], depends=depends, define_macros=macros,
        py_limited_api=_LIMITED_API is not None, optional=True,
    )


setup(
    cmdclass={"build_ext": _BuildExt},
    ext_modules=[
        _extension("kafka_audit.record._record_screen", "kafka_audit/record/_record_screen.c",
                   [_GRAMMAR_H, _SCREEN_H, "kafka_audit/record/_payload_inflate.h"]),
        _extension("kafka_audit.record._batch_walk", "kafka_audit/record/_batch_walk.c",
                   [_GRAMMAR_H, _SCREEN_H, "kafka_audit/record/_payload_inflate.h"]),
        _extension("kafka_audit.record._record_text", "kafka_audit/record/_record_text.c", [_GRAMMAR_H]),
    ],
    # One abi3 wheel for Python 3.11 and later (bdist_wheel's tag); none asked for on 3.10.
    options={"bdist_wheel": {"py_limited_api": "cp311"}} if _LIMITED_API is not None else {},
)
