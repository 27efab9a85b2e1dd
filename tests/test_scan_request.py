"""One front door (issue 33): every option of the PATH commands is declared once
(``kafka_audit.api.options.OPTIONS``) and the command line's Typer commands and
``kafka_audit.scan``'s keywords are derived from it; the reports are found by view and format in
one table (``kafka_audit.report.formats.WRITERS``), an unknown combination a usage error."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
import typer

import kafka_audit
from kafka_audit.api.options import OPTIONS, command_options, library_options
from kafka_audit.audit.scan_options import SETTINGS
from kafka_audit.cli.app import app, main
from kafka_audit.report import formats

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as stop:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return stop.value.code, out, err


@pytest.mark.parametrize("command", ["scan", "producers", "timeline", "report"])
def test_each_command_takes_the_options_the_table_declares(command):
    click_command = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    options = [p for p in click_command.params if p.param_type_name == "option"]
    declared = command_options(command)
    assert [p.opts for p in options] == [[o.flag] for o in declared]
    assert [p.name for p in options] == [o.name for o in declared]
    assert [p.default for p in options] == [o.default for o in declared]
    assert [p.help for p in options] == [o.help for o in declared]


def test_the_library_takes_the_options_the_table_declares():
    parameters = inspect.signature(kafka_audit.scan).parameters
    assert list(parameters)[:2] == ["paths", "spark"]
    assert {n: p.default for n, p in parameters.items() if n not in ("paths", "spark")} == {
        o.name: o.library_default for o in library_options()
    }
    # The command line spells the library's options by the same names, with its flags.
    flagged = {o.name for o in OPTIONS if o.flag is not None}
    assert {o.name for o in library_options()} - flagged == {"spark_warnings"}
    with pytest.raises(TypeError, match="segment_byte"):
        kafka_audit.scan(FIXTURES / "healthy", engine="local", segment_byte=1)


def test_the_options_that_shape_the_audit_are_scan_options_settings():
    """What the table names after a ScanOptions or ValidationConfig field goes there by name."""
    shaping = {o.name for o in OPTIONS} & SETTINGS
    assert shaping == {
        "compacted_topics", "max_message_bytes", "segment_bytes", "timestamp_before_max_ms",
        "timestamp_after_max_ms", "reference_time", "transaction_timeout_ms", "producer_id_expiration_ms",
        "baseline",
    }


def test_a_view_in_a_format_it_does_not_write_is_a_usage_error(capsys):
    code, out, err = _run(capsys, "timeline", FIXTURES / "healthy", "--engine", "local", "--format", "junit")
    assert (code, out) == (2, "")
    assert err == "kafka-audit: --format junit is a format of scan; timeline writes table, json, ndjson or csv\n"
    with pytest.raises(formats.UnknownFormat, match="no format; report writes html"):
        formats.writer("report", "yaml")


def test_a_new_format_is_one_writer_and_one_table_line(capsys, monkeypatch):
    """A writer registered for the scan view: ``--format`` takes it and the command writes it,
    with no other edit; the other views still refuse it."""

    def finding_checks(result, rendering, sink) -> None:
        sink.text(" ".join(f.check for f in result.findings))

    monkeypatch.setitem(formats.WRITERS["scan"], "checks", finding_checks)
    path = FIXTURES / "producer-errors"
    code, out, _ = _run(capsys, "scan", path, "--engine", "local", "--quiet", "--format", "checks")
    _, as_json, _ = _run(capsys, "scan", path, "--engine", "local", "--quiet", "--format", "json")
    assert code == 1
    assert out == " ".join(f["check"] for f in json.loads(as_json)["findings"]) + "\n"
    code, _, err = _run(capsys, "producers", path, "--engine", "local", "--format", "checks")
    assert code == 2 and "--format checks is a format of scan; producers writes" in err
    monkeypatch.undo()
    code, _, err = _run(capsys, "scan", path, "--engine", "local", "--format", "checks")
    assert code == 2 and "'checks' is not one of" in err


def test_the_library_and_the_command_line_run_one_request(capsys, tmp_path):
    """Both build a ScanRequest that kafka_audit.api.run runs: the same refusal, worded alike."""
    missing = tmp_path / "missing"
    code, _, err = _run(capsys, "scan", missing, "--engine", "local")
    assert (code, err) == (2, f"kafka-audit: {missing}: no such file or directory\n")
    with pytest.raises(ValueError, match=f"^{missing}: no such file or directory$"):
        kafka_audit.scan(missing)
