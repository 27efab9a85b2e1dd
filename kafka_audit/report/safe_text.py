"""Data shown so that it cannot act (SPEC section 1): everything a log holds (keys, values,
headers, folder names, transactional and client ids, broker log lines) is untrusted.

- :func:`escape_text`: a data string for a terminal or a text output. Control characters (Unicode
  category Cc: C0, DEL, C1) and the bidi controls are written as ``\\x1b`` / ``\\u202e``, a
  literal backslash is doubled, a path byte that is not UTF-8 (a surrogate escape of
  ``os.fsdecode``) is ``\\xNN``; a ``:`` before ``:`` and a ``#`` before ``#[`` get a backslash
  after them (``::`` is ``:\\:``, ``##[`` is ``#\\#[``), so no line of a CI log starts a GitHub
  runner command (``::cmd``, or the older ``##[cmd]``) from data.
- :func:`json_text`: a serialized JSON document made safe without changing a value: raw C1, DEL
  and bidi controls and the ``#`` of ``##[`` written as JSON escapes, surrogate escapes as ``\\xNN``.
- :func:`xml_text`: the same for an XML document (character references).
- :func:`csv_cell`: a CSV cell: text escaped as for a terminal and neutralised as OWASP's
  CSV-injection guidance says (a cell that begins ``=``, ``+``, ``-``, ``@``, tab or CR gets a
  leading ``'``); numbers stay numbers; booleans as JSON writes them.
- :func:`uri_path`: a path for a URI, its bytes percent-encoded (``%FF`` for a byte not UTF-8).
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from typing import Any
from urllib.parse import quote

# The bidi controls (Unicode's Bidi_Control property): ALM, LRM, RLM, LRE..RLO, LRI..PDI.
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Lone surrogates: os.fsdecode's escapes of bytes that are not UTF-8 (U+DC80..U+DCFF), or worse.
_SURROGATES = "\ud800-\udfff"
_BIDI = "".join(sorted(BIDI_CONTROLS))
# What escape_text rewrites: a backslash, a Cc character, a bidi control, a surrogate, and the
# GitHub runner's command prefixes.
_UNSAFE_TEXT = re.compile(f"[\\\\\x00-\x1f\x7f-\x9f{_BIDI}{_SURROGATES}]|:(?=:)|#(?=#\\[)")
# In JSON and XML documents the structure is ASCII and C0 controls are already escaped by the
# serializer; what remains raw is DEL, C1, the bidi controls, surrogates, and ``##[``.
_UNSAFE_DOCUMENT = re.compile(f"[\x7f-\x9f{_BIDI}{_SURROGATES}]|##\\[")
# An XML text node or attribute may hold a newline: a following ``::`` (after blanks) would start a line.
_XML_LINE_COMMAND = re.compile(r"^([ \t]*):(?=:)", re.MULTILINE)
# A cell a spreadsheet would read as a formula (OWASP, "CSV Injection").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# Python's surrogateescape reads an undecodable byte 0xNN (0x80-0xFF) as U+DC00 + 0xNN.
_ESCAPED_BYTE_FIRST, _ESCAPED_BYTE_LAST = 0xDC80, 0xDCFF
# The surrogate block: no XML character.
_SURROGATE_FIRST, _SURROGATE_LAST = 0xD800, 0xDFFF
# Code points shown as \xNN rather than \uNNNN.
_TWO_DIGITS_BELOW = 0x100


def _code(char: str) -> str:
    """``\\xNN`` for a code point below 256 or a surrogate escape of a byte, else ``\\uNNNN``."""
    point = ord(char)
    if _ESCAPED_BYTE_FIRST <= point <= _ESCAPED_BYTE_LAST:
        return f"\\x{point - 0xDC00:02x}"
    return f"\\x{point:02x}" if point < _TWO_DIGITS_BELOW else f"\\u{point:04x}"


def _text_escape(match: re.Match[str]) -> str:
    found = match.group()
    if found == "\\":
        return "\\\\"
    if found in ":#":  # before ":" or "#[": a backslash breaks a runner command's prefix
        return found + "\\"
    return _code(found)


def escape_text(text: str) -> str:
    """``text`` as a terminal or text output shows data: nothing in it can act."""
    return _UNSAFE_TEXT.sub(_text_escape, text)


_CONTROLS = re.compile(f"[\\\\\x00-\x1f\x7f-\x9f{_BIDI}{_SURROGATES}]")
_CONTROLS_BUT_BREAKS = re.compile(f"[\\\\\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f{_BIDI}{_SURROGATES}]")


def escape_controls(text: str, line_breaks: bool = False) -> str:
    """:func:`escape_text` but for the runner's command prefixes: for ``--format github``, whose
    own escaping keeps data inside its commands (and encodes CR and LF itself: ``line_breaks``
    keeps them for it)."""
    return (_CONTROLS_BUT_BREAKS if line_breaks else _CONTROLS).sub(_text_escape, text)


# HTML gives a backslash no meaning: it is not doubled there.
_HTML_CONTROLS = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}{_SURROGATES}]")


def html_text(text: str) -> str:
    """Data for HTML, or for a chart library that renders HTML in its labels (Plotly): control
    characters shown escaped (``\\x1b``, ``\\x0a``: no line of the file starts with data), then
    ``&``, ``<``, ``>`` and quotes as entities, so that no data string makes an element or a
    link, and the ``#`` of ``##[`` as ``&#35;``."""
    return html.escape(_HTML_CONTROLS.sub(lambda m: _code(m.group()), text)).replace("##[", "#&#35;[")


_LONE_SURROGATE = re.compile(f"[{_SURROGATES}]")


def surrogates_shown(text: str) -> str:
    """``text`` with each surrogate escape of a path byte as ``\\xNN`` (other lone surrogates
    as ``\\uNNNN``): a document that can be written as UTF-8."""
    return _LONE_SURROGATE.sub(lambda m: _code(m.group()), text)


def is_unsafe_char(char: str) -> bool:
    """Whether :func:`escape_text` writes ``char`` escaped (category Cc, a bidi control, a surrogate)."""
    return unicodedata.category(char) in ("Cc", "Cs") or char in BIDI_CONTROLS


def _json_escape(match: re.Match[str]) -> str:
    found = match.group()
    if found == "##[":
        return "#\\u0023["
    point = ord(found)
    if _ESCAPED_BYTE_FIRST <= point <= _ESCAPED_BYTE_LAST:  # the value shows the byte as \xNN, as every format does
        return f"\\\\x{point - 0xDC00:02x}"
    return f"\\u{point:04x}"


def json_text(document: str) -> str:
    """A JSON document (from ``json.dumps``) whose values cannot act; each value reads back the
    same, but for a surrogate escape of a path byte, which reads back as ``\\xNN``."""
    if "\\ud" in document:  # ensure_ascii: the serializer wrote surrogates as \\udcNN escapes
        document = _escaped_surrogates(document)
    # What json.dumps writes by default is ASCII: then only DEL and ``##[`` could need escaping,
    # and a document without them is returned as it is (three scans in C, not the pattern's).
    if document.isascii() and "\x7f" not in document and "##[" not in document:
        return document
    return _UNSAFE_DOCUMENT.sub(_json_escape, document)


# ``\udcNN`` written by json.dumps(ensure_ascii=True) for a surrogate escape of a byte: preceded
# by an even number of backslashes (an odd one would be a literal backslash followed by "udc"),
# and not the low half of a pair (``\ud872\udc80``: one character beyond U+FFFF).
_JSON_SURROGATE = re.compile(r"(?<!\\)((?:\\\\)*)(?<!\\ud[89ab][0-9a-f]{2})\\udc([89a-f][0-9a-f])")


def _escaped_surrogates(document: str) -> str:
    return _JSON_SURROGATE.sub(lambda m: f"{m.group(1)}\\\\x{m.group(2)}", document)


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps`` of data, made safe by :func:`json_text`."""
    return json_text(json.dumps(value, **options))


def _xml_escape(match: re.Match[str]) -> str:
    found = match.group()
    if found == "##[":
        return "#&#35;["
    point = ord(found)
    if _SURROGATE_FIRST <= point <= _SURROGATE_LAST:  # XML holds no surrogate: shown as escape_text shows it
        return _code(found)
    return f"&#{point};"


def xml_text(document: str) -> str:
    """An XML document whose text and attributes cannot act in a CI log: raw DEL, C1 and bidi
    controls as character references, no line starting ``::``, no ``##[``."""
    return _XML_LINE_COMMAND.sub(r"\1&#58;", _UNSAFE_DOCUMENT.sub(_xml_escape, document))


def csv_cell(value: Any) -> Any:
    """One CSV cell: None empty, booleans ``true``/``false``, numbers as they are, lists and dicts
    as JSON, text escaped (:func:`escape_text`) and kept from being read as a formula."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, (dict, list, tuple)):
        return dumps(value, sort_keys=True)
    return neutralise_formula(escape_text(str(value)))


def neutralise_formula(text: str) -> str:
    """A text cell that begins like a formula, behind a single quote (OWASP)."""
    return "'" + text if text.startswith(_FORMULA_START) else text


def uri_path(path: str) -> str:
    """A path as a URI reference: its bytes (surrogate escapes undone) percent-encoded."""
    return quote(path.encode("utf-8", "surrogateescape"), safe="/:@")
