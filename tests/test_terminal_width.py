"""The terminal at 80 and 120 columns (issue 31 item 5): paths shortened from the left with the
file name kept, the message given the width, every option name whole in ``--help``, a closing
line after long outputs, plurals and units right."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from kafka_audit.cli.app import app
from kafka_audit.report.wording import findings_line, plural, rate, shorten_left, wall_time
from tests.support.writer import BatchSpec, Faults, LogDirWriter, RecordSpec

REPO = Path(__file__).resolve().parent.parent
WIDTHS = (80, 120)
# Kafka's longest topic name is 249 characters; this one makes the segment's path pass 80.
LONG_TOPIC = "orders.eu-west.payments-reconciliation.settlement-batches.v2"


def _run(width: int, *args: str):
    """The command as a user at a terminal ``width`` columns wide runs it (Rich reads COLUMNS)."""
    return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": str(width)})


def _lines_fit(text: str, width: int) -> None:
    too_wide = [line for line in text.splitlines() if len(line.rstrip()) > width]
    assert not too_wide, too_wide[:3]


def test_plurals_units_and_paths():
    assert plural(1, "segment") == "1 segment" and plural(0, "segment") == "0 segments"
    assert plural(1, "batch", "batches") == "1 batch" and plural(1200, "batch", "batches") == "1,200 batches"
    assert rate(117_058, 24.0) == "4.9 KB/s"
    assert rate(52_212, 1.1) == "47.5 KB/s"
    assert rate(3_500_000_000, 10.0) == "350 MB/s"
    assert rate(500, 2.0) == "250 B/s"
    assert rate(117_058, 0.4) is None  # start-up time, not a rate
    assert wall_time({"wall_time_s": 0.4, "bytes_read": 1000}) == "0.4 s"
    assert wall_time({"wall_time_s": 24.0, "bytes_read": 117_058}) == "24.0 s (4.9 KB/s)"
    path = "very-long-folder/orders-0/00000000000000000000.log"
    assert shorten_left(path, 80) == path
    assert shorten_left(path, 40) == "…/orders-0/00000000000000000000.log"
    assert shorten_left(path, 30) == "…/00000000000000000000.log"
    assert shorten_left(path, 10) == "…00000.log"
    assert findings_line({"error": 2, "warning": 1, "info": 2}, 1) == "5 findings: 2 errors, 1 warning, 2 info — exit code 1"
    assert findings_line({"info": 1}, 0) == "1 finding: 1 info — exit code 0"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", ["scan", "producers", "timeline", "report", "dump"])
def test_help_shows_every_option_name_whole(command, width):
    result = _run(width, command, "--help")
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    click_command = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    names = [opt for param in click_command.params for opt in param.opts if opt.startswith("--")]
    assert len(names) > 1
    for name in names:
        assert re.search(re.escape(name) + r"(?![\w-])", result.stdout), name
    _lines_fit(result.stdout, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_scan_table_fits_and_closes_with_the_counts(width):
    faulty = REPO / "fixtures" / "faulty"
    import json

    args = json.loads((faulty / "EXPECTED.json").read_text())["scan_args"]
    result = _run(width, "scan", faulty, "--engine", "local", "--quiet", *args)
    assert result.exit_code == 1, result.output
    _lines_fit(result.stdout, width)
    last = result.stdout.rstrip().splitlines()[-1]
    assert re.fullmatch(r"\d+ findings: \d+ errors, \d+ warnings, \d+ info — exit code 1", last), last
    assert "1 segment not read in full" in result.stdout and "1 file not part of a Kafka log" in result.stdout
    assert "(0.0 " not in result.stdout


@pytest.mark.parametrize("width", WIDTHS)
def test_a_long_segment_path_keeps_its_file_name(tmp_path, width):
    with LogDirWriter(tmp_path / "d") as writer:
        writer.partition(LONG_TOPIC, 0).append(
            BatchSpec(records=(RecordSpec(key=None, value=b"x" * 20),), faults=Faults(bad_crc=True))
        )
    result = _run(width, "scan", tmp_path / "d", "--engine", "local", "--quiet")
    assert result.exit_code == 1, result.output
    _lines_fit(result.stdout, width)
    path_line = next(line.strip() for line in result.stdout.splitlines() if "00000000000000000000.log pos" in line)
    if width == 80:  # the stacked layout: the path shortened from the left to the console's width
        assert path_line == "…/00000000000000000000.log pos 0", path_line
    assert path_line.endswith("00000000000000000000.log pos 0"), path_line
    # The message is one line: it has the width (not squeezed beside a wide finding column).
    assert re.search(r"Record is corrupt \(stored crc = \d+, computed crc = \d+\)", result.stdout)
    assert result.stdout.rstrip().splitlines()[-1] == "1 finding: 1 error — exit code 1"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("view", ["producers", "timeline"])
def test_the_views_fit(view, width):
    result = _run(width, view, REPO / "fixtures" / "healthy", "--engine", "local", "--quiet")
    assert result.exit_code == 0, result.output
    _lines_fit(result.stdout, width)
    assert "1 batches" not in result.stdout and "1 records" not in result.stdout
    if view == "producers":
        assert "__consumer_offsets-7" in result.stdout  # the partition's name whole
    else:  # more events than the table shows: a closing count
        assert re.fullmatch(r"\d+ events in all", result.stdout.rstrip().splitlines()[-1])
