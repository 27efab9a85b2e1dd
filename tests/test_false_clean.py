"""Never a false clean: every byte found is read or reported (SPEC sections 1-3, issue 12).

Root reads any file whatever its mode, so unreadable files are made honestly: a dangling link, a
folder or FIFO named like a segment, a file removed or cut between discovery and reading, and
``open`` failing in-process (tests/test_robustness.py covers the last)."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest

from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.cli.app import main
from kafka_audit.engines.local import audit_in_process
from kafka_audit.log.log_dir import discover
from kafka_audit.report import scan_report as report
from tests.support.writer import LogDirWriter, Producer, records


def seg(base: int) -> str:
    return f"{base:020d}.log"


def write_three_segments(root: Path) -> Path:
    """One idempotent producer over three segments of ``orders-0`` (sequences go on across them)."""
    with LogDirWriter(root) as d:
        w = d.partition("orders", 0, segment_bytes=400)
        producer = Producer(7)
        for i in range(12):
            producer.send(w, records([f"order-{i}" * 4]))
    return root / "orders-0"


def scan(*paths, **filters):
    return audit_in_process(discover([str(p) for p in paths], **filters), ScanOptions())


def test_a_dangling_link_named_like_a_segment_is_an_error_in_every_format(tmp_path: Path) -> None:
    folder = write_three_segments(tmp_path)
    os.symlink(tmp_path / "gone", folder / seg(99_999))
    result = scan(tmp_path)
    (finding,) = [f for f in result.findings if f.check == "unreadable_segment"]
    assert (finding.severity, finding.topic, finding.partition, finding.segment) == ("error", "orders", 0, f"orders-0/{seg(99_999)}")
    assert finding.details["reason"] == "broken symbolic link (No such file or directory)"
    assert result.summary["segments_unreadable"] == 1
    as_json = json.loads(report.to_json(result))
    assert as_json["summary"]["segments_unreadable"] == 1
    assert [f["check"] for f in as_json["findings"]] == ["unreadable_segment"]
    assert [json.loads(line)["check"] for line in report.to_ndjson(result).splitlines()] == ["unreadable_segment"]
    rows = list(csv.DictReader(io.StringIO(report.to_csv(result))))
    assert [(r["check"], json.loads(r["details"])["reason"]) for r in rows] == [
        ("unreadable_segment", "broken symbolic link (No such file or directory)")
    ]


def test_the_table_states_bytes_found_and_read(tmp_path: Path) -> None:
    from rich.console import Console

    folder = write_three_segments(tmp_path)
    os.symlink(tmp_path / "gone", folder / seg(99_999))
    result = scan(tmp_path)
    console = Console(file=io.StringIO(), width=200)
    report.render_table(result, console)
    text = console.file.getvalue()
    found = sum(p.stat().st_size for p in folder.glob("*.log") if p.exists())
    assert f"{found:,} read of {found:,} found" in text
    assert "1 segment not read in full" in text and "unreadable_segment" in text


def test_a_segment_removed_between_discovery_and_reading(tmp_path: Path) -> None:
    # SPEC segment_changed: deleted after the listing (retention), counted as not read.
    folder = write_three_segments(tmp_path)
    found = discover([str(tmp_path)])
    first = folder / seg(0)
    size = first.stat().st_size
    first.unlink()
    result = audit_in_process(found, ScanOptions())
    (finding,) = [f for f in result.findings if f.check in ("unreadable_segment", "segment_changed")]
    assert (finding.check, finding.severity, finding.segment) == ("segment_changed", "warning", f"orders-0/{seg(0)}")
    finding.details.pop("remedy", None)  # the remedies' own tests hold its content
    assert finding.details == {"reason": "vanished", "bytes_not_read": size}
    assert result.summary["segment_bytes"][f"orders-0/{seg(0)}"] == {"found": size, "read": 0}
    assert result.summary["bytes_found"] - result.summary["bytes_read"] == size
    assert (result.summary["segments"], result.summary["segments_unreadable"]) == (found.segment_count - 1, 0)
    assert result.summary["files_changed"] == [f"orders-0/{seg(0)}"]


def test_a_segment_cut_short_between_discovery_and_reading(tmp_path: Path) -> None:
    folder = write_three_segments(tmp_path)
    found = discover([str(tmp_path)])
    first = folder / seg(0)
    size = first.stat().st_size
    os.truncate(first, 0)
    result = audit_in_process(found, ScanOptions())
    (finding,) = [f for f in result.findings if f.check in ("unreadable_segment", "segment_changed")]
    finding.details.pop("remedy", None)  # the remedies' own tests hold its content
    assert finding.check == "segment_changed" and finding.details == {"reason": "shrank", "bytes_not_read": size}
    assert result.summary["segment_bytes"][f"orders-0/{seg(0)}"] == {"found": size, "read": 0}


def test_a_text_file_named_like_a_segment_is_one_finding_at_position_zero(tmp_path: Path) -> None:
    folder = tmp_path / "notes-0"
    folder.mkdir()
    (folder / seg(0)).write_text("This is not a Kafka log, just some text someone saved here.\n" * 20)
    result = scan(tmp_path)
    (finding,) = result.findings
    assert finding.position == 0 and finding.offset is None and finding.batch_base_offset is None
    assert finding.message.startswith("Not a Kafka segment: the file does not start with a record batch")
    assert finding.details["not_a_segment"] is True and finding.severity == "error"


def test_a_segment_whose_first_batch_is_cut_keeps_its_offset(tmp_path: Path) -> None:
    """A real segment cut inside its first batch is a truncated batch at a plausible offset, not
    "not a segment"."""
    folder = write_three_segments(tmp_path)
    second = sorted(folder.glob("*.log"))[1]
    base = int(second.name[:20])
    os.truncate(second, 30)
    result = scan(second)
    (finding,) = [f for f in result.findings if f.check == "truncated_batch"]
    assert finding.offset == base and finding.position == 0
    assert "not_a_segment" not in finding.details


def test_one_segment_of_a_folder_does_not_claim_retention(tmp_path: Path) -> None:
    """Scanning the last .log file alone: the earlier segments are in the folder, not deleted."""
    folder = write_three_segments(tmp_path)
    names = sorted(p.name for p in folder.glob("*.log"))
    assert len(names) >= 3
    whole = scan(folder)
    assert [f.check for f in whole.findings] == []
    result = scan(folder / names[-1])
    checks = [f.check for f in result.findings]
    assert "retention_gap" not in checks
    (finding,) = result.findings
    assert finding.check == "unknown_producer_id"  # the folder's log starts at 0: no checkpoint moved it
    assert finding.details["unscanned_segments"] == names[:-1]
    assert f"the folder's {len(names) - 1} earlier segment(s)" in finding.message
    assert "were not scanned" in finding.message and "deleted (" not in finding.message
    assert finding.details["log_start_offset"] == 0


def test_a_folder_not_named_topic_partition_gets_a_clear_label(tmp_path: Path) -> None:
    folder = write_three_segments(tmp_path)
    loose = tmp_path / "loose"
    loose.mkdir()
    second = sorted(folder.glob("*.log"))[1]
    os.rename(second, loose / second.name)  # its producer's sequences do not start at 0 there
    result = scan(loose)
    from rich.console import Console

    console = Console(file=io.StringIO(), width=200)
    report.render_table(result, console)
    (finding,) = result.findings
    assert (finding.check, finding.topic, finding.partition) == ("retention_gap", "loose", -1)
    assert "in partition loose (folder not named <topic>-<partition>)" in finding.message
    assert "loose (folder not named <topic>-<partition>)" in console.file.getvalue()
    assert "loose--1" not in console.file.getvalue() + finding.message


def test_relative_paths_are_opened_absolute_and_shown_as_given(tmp_path: Path, monkeypatch) -> None:
    write_three_segments(tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    found = discover(["data", f"data/orders-0/{seg(0)}"])
    (partition,) = found.partitions
    assert all(os.path.isabs(s.path) for s in partition.segments)
    assert all(os.path.isabs(p) for s in partition.segments for p in (s.index, s.time_index) if p)
    assert partition.segments[0].display_path == f"orders-0/{seg(0)}"
    assert found.paths == ["data", f"data/orders-0/{seg(0)}"]


def run_main(*args, capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as stop:
        main([str(a) for a in args])
    return stop.value.code, capsys.readouterr().err


def test_a_topic_filter_that_matches_nothing_says_so(tmp_path: Path, capsys) -> None:
    write_three_segments(tmp_path)
    count = len(list((tmp_path / "orders-0").glob("*.log")))
    code, err = run_main("scan", tmp_path, "--topic", "nosuch", capsys=capsys)
    assert code == 2
    assert err == f"kafka-audit: --topic nosuch matched no segment under {tmp_path} ({count} segments found, in topics: orders)\n"
    code, err = run_main("scan", tmp_path, "--partition", "3", capsys=capsys)
    assert code == 2 and err.startswith("kafka-audit: --partition 3 matched no segment")


def test_paths_without_segments_still_say_so(tmp_path: Path, capsys) -> None:
    (tmp_path / "README.txt").write_text("hello")
    code, err = run_main("scan", tmp_path, capsys=capsys)
    assert (code, err) == (2, f"kafka-audit: no Kafka segment (.log file) found under {tmp_path}\n")
