"""Check ids through the catalogue's enum only (issue 33), and that the enum renders as its value.

Every layer names a check by ``kafka_audit.check_ids.CheckId``; a raw string equal to a check id
anywhere else in the package is a second home for that id and fails here. A member is a ``str``
whose str(), format(), %-formatting, JSON, CSV and Arrow form is its value on every supported
Python (a plain ``(str, Enum)`` member formats as ``CheckId.X`` in f-strings from 3.12 on), so the
reports do not change with the interpreter."""

from __future__ import annotations

import ast
import csv
import io
import json
import pickle
from pathlib import Path

import pyarrow as pa
import pytest

from kafka_audit.check_ids import CheckId, ValueEnum
from kafka_audit.rules.catalogue import CHECKS, ClientOutcome, Group, Severity
from kafka_audit.rules.events import EventKind

PACKAGE = Path(__file__).resolve().parent.parent / "kafka_audit"
DEFINITION = PACKAGE / "check_ids.py"
# Strings equal to a check id that name something else, each with what it names.
NOT_CHECK_IDS = {
    # SPEC section 3's timeline event kinds, two of which share a check's name.
    ("rules/events.py", "epoch_bump"),
    ("rules/events.py", "producer_expired"),
    # A field of the producer-at-time view (``ProducerAtTime.to_dict``), not a finding's check.
    ("rules/rejection/producer_at_time.py", "open_transaction"),
}
ALL_VALUE_ENUMS = [*CheckId, *Severity, *ClientOutcome, *Group, *EventKind]


def _raw_check_ids(source: str, ids: set[str]) -> list[tuple[int, str]]:
    """(line, text) of each string literal in ``source`` equal to one of ``ids`` (f-string parts
    and match patterns included)."""
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in ids
    )


def test_the_scan_finds_a_raw_check_id_in_any_position():
    """The scan below is only as good as what it sees: a call argument, a default, a set member,
    a comparison, an f-string's whole literal part and a match pattern."""
    source = (
        'def f(check="crc_mismatch"):\n'
        '    g("offset_gap")\n'
        '    return check in {"index_mismatch"} or check == "orphan_marker" or f"{check}replica_lag"\n'
        "match x:\n"
        '    case "epoch_bump": pass\n'
    )
    ids = {"crc_mismatch", "offset_gap", "index_mismatch", "orphan_marker", "epoch_bump", "replica_lag"}
    assert _raw_check_ids(source, ids) == [
        (1, "crc_mismatch"),
        (2, "offset_gap"),
        (3, "index_mismatch"),
        (3, "orphan_marker"),
        (3, "replica_lag"),
        (5, "epoch_bump"),
    ]
    assert _raw_check_ids("CheckId.CRC_MISMATCH  # crc_mismatch\n", ids) == []


def test_no_raw_check_id_string_in_the_package():
    ids = {member.value for member in CheckId}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == DEFINITION:
            continue
        where = path.relative_to(PACKAGE).as_posix()
        found += [
            f"kafka_audit/{where}:{line}: {text!r}"
            for line, text in _raw_check_ids(path.read_text(), ids)
            if (where, text) not in NOT_CHECK_IDS
        ]
    assert found == [], "write CheckId.<NAME>, not the raw string:\n" + "\n".join(found)


def test_every_check_id_is_in_the_catalogue_and_named_after_its_value():
    assert set(CHECKS) == {member.value for member in CheckId}
    assert all(member.name == member.value.upper() for member in CheckId)


@pytest.mark.parametrize("member", ALL_VALUE_ENUMS, ids=lambda m: f"{type(m).__name__}.{m.name}")
def test_a_member_renders_as_its_value_everywhere(member: ValueEnum):
    text = "".join(member.value)  # a plain str of the same characters
    assert type(text) is str and text == member
    assert str(member) == text
    assert f"{member}" == text and f"{member:>40}" == f"{text:>40}" and format(member, "") == text
    assert "%s" % member == text  # noqa: UP031 - %-formatting is one of the renderings held here
    assert "{}".format(member) == text  # noqa: UP032 - str.format is one of the renderings held here
    assert json.dumps(member) == json.dumps(text)
    assert json.dumps({member: [member]}, sort_keys=True) == json.dumps({text: [text]})
    out = io.StringIO()
    csv.writer(out).writerow([member])
    assert out.getvalue() == text + "\r\n"
    column = pa.array([member])
    assert column.type == pa.string() and column.to_pylist() == [text]
    assert pickle.loads(pickle.dumps(member)) is member
    assert hash(member) == hash(text) and {text: 1}[member] == 1
