"""The incident in words (``report/story.py``): the consequence classes and the end of ``scan``'s
table output. The browser test (tests/test_html_report.py) checks the same account in the HTML."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kafka_audit.cli.app import app
from kafka_audit.report.story import consequence, headlines, tell
from kafka_audit.rules.findings import make_finding
from tests.conftest import FIXTURES

FAULTY = FIXTURES / "faulty"


def test_consequence_classes_rank_data_then_blocked_consumers_then_producers():
    corrupt = make_finding("crc_mismatch", "corrupt", topic="t", partition=0, offset=9)
    hanging = make_finding("hanging_transaction", "hanging", topic="t", partition=0, offset=3,
                           details={"first_offset": 3, "last_stable_offset": 3, "log_end_offset": 11, "records_blocked": 8})
    fenced = make_finding("transaction_state_violation", "violation", topic="t", partition=1, offset=2)
    gap = make_finding("offset_gap", "gap", topic="t", partition=2, offset=15)
    info = make_finding("orphan_marker", "orphan", topic="t", partition=3, offset=1)
    assert [consequence(f) for f in (corrupt, hanging, fenced, gap, info)] == [1, 2, 3, 4, 5]
    ranked = headlines([info, gap, fenced, hanging, corrupt])
    assert [h.finding.check for h in ranked] == [
        "crc_mismatch", "hanging_transaction", "transaction_state_violation", "offset_gap", "orphan_marker"]
    story = tell([hanging], {"partitions": 1, "batches": 5, "records": 11})
    assert ("Every read_committed consumer of t-0 is blocked behind the open transaction since offset 3: "
            "it pins the last stable offset at 3 while the log ends at 11 (8 offsets held back).") in story.sentences


def test_scan_table_ends_with_the_story():
    args = json.loads((FAULTY / "EXPECTED.json").read_text())["scan_args"]
    done = CliRunner().invoke(app, ["scan", str(FAULTY), "--engine", "local", "--quiet", "--fail-on", "never", *args],
                              env={"COLUMNS": "400"})
    assert done.exit_code == 0, done.output
    tail = done.stdout[done.stdout.rindex("What happened"):]
    assert "Every read_committed consumer of hanging-transaction-0 is blocked behind the open transaction of producer 8801" in tail
    assert "1. error crc_mismatch (data lost or unreadable, 3 findings) in crc-mismatch-0 and 2 more partitions" in tail
    assert "error hanging_transaction (consumers blocked) in hanging-transaction-0" in tail
