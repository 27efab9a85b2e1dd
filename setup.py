"""The one thing pyproject.toml cannot say without experimental settings: the C builds of the
record screen (kafka_audit/record/_record_screen.c, required: the audit's fast path has no other
implementation; a build that fails stops the install and says why) and of dump's record lines
(kafka_audit/record/_record_text.c, optional: dump formats records in Python without it). Both read records through kafka_audit/record/_record_grammar.h, with
the grammar's widths (varint lengths, the header bound) taken from
kafka_audit/record/default_record.py, their one home."""

import ast
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

_GRAMMAR = Path(__file__).resolve().parent / "kafka_audit" / "record" / "default_record.py"
_GRAMMAR_H = "kafka_audit/record/_record_grammar.h"  # read_varint and skip_bytes, for both C files
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


class _BuildExt(build_ext):
    """A failed build of the required record screen ends with one line saying what to do."""

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            if getattr(ext, "optional", False):
                raise
            raise SystemExit(
                f"kafka-audit: building {ext.name} failed ({exc}). The compiled record screen is required: "
                "install a C compiler and the Python headers (Debian: apt-get install gcc python3-dev), then retry."
            ) from exc


setup(
    cmdclass={"build_ext": _BuildExt},
    ext_modules=[
        Extension(
            "kafka_audit.record._record_screen",
            sources=["kafka_audit/record/_record_screen.c"],
            depends=[_GRAMMAR_H, "kafka_audit/record/_payload_inflate.h"],
            define_macros=_grammar_macros(),
        ),
        Extension(
            "kafka_audit.record._record_text",
            sources=["kafka_audit/record/_record_text.c"],
            depends=[_GRAMMAR_H],
            define_macros=_grammar_macros(),
            optional=True,
        ),
    ]
)
