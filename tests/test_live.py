"""A running broker's log dir (SPEC section 1 "one consistent view", section 2 incomplete_tail,
segment_changed, missing_segment; issue 30): a real writer process appends to the newest segment
while scans run on both engines, a deleter removes old segments, a file is truncated mid-read.
The 100-scan run is bench/live_scans.py."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from kafka_audit.audit.results import ScanResult
from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.engines.local import audit_in_process
from kafka_audit.io import local_file, page_cache
from kafka_audit.log.log_dir import discover
from tests.support.audit_run import corpus_dir, scan
from tests.support.live_writer import (
    FOLDER,
    LiveWriter,
    build_log_dir,
    copy_at,
    delete_oldest,
    newest_segment,
)
from tests.support.writer import BatchSpec, Faults, LogDirWriter, records

LOCAL_SCANS = 15
SPARK_SCANS = 3


def _key(finding) -> tuple:
    """What a live scan and a scan of the finished copy cut at its listed size must share: the
    check, where, and an incomplete tail's bytes and truncation offset. Its severity and
    ``changed_during_scan`` are what differs (info while the file grows, warning on the copy)."""
    details = finding.details
    return (finding.check, finding.segment, finding.position, finding.offset, details.get("bytes"),
            details.get("truncate_to_offset"))


def _listed_size(result: ScanResult, root: Path) -> int:
    newest = f"{FOLDER}/{newest_segment(root).name}"
    return result.summary["segment_bytes"][newest]["found"]


def _scans_while_writing(root: Path, run, count: int) -> list[tuple[ScanResult, int]]:
    """``count`` scans (``run(discovery)``) of ``root`` while the writer appends; each scan with
    the newest segment's size its listing saw."""
    offset = build_log_dir(root)
    writer = LiveWriter(root, offset).start()
    done = []
    try:
        for _ in range(count):
            result = run(discover([str(root)]))
            done.append((result, _listed_size(result, root)))
            time.sleep(0.01)
    finally:
        assert writer.stop() == 0
    return done


def _agrees_with_finished_copies(root: Path, tmp: Path, done: list[tuple[ScanResult, int]]) -> None:
    sizes = {size for _, size in done}
    assert len(sizes) > 1, "the writer appended while the scans ran"
    for number, (result, size) in enumerate(done):
        assert [f for f in result.findings if f.severity == "error"] == [], [f.message for f in result.findings]
        copy = copy_at(root, tmp / f"copy-{number}" / root.name, size)
        still = audit_in_process(discover([str(copy)]), ScanOptions())
        assert sorted(map(_key, result.findings)) == sorted(map(_key, still.findings)), (size, result.findings)
        for finding in still.findings:
            assert finding.check == "incomplete_tail" and finding.severity == "warning"
        shutil.rmtree(copy.parent)


def test_local_scans_of_a_growing_segment_find_no_corruption(tmp_path: Path) -> None:
    root = tmp_path / "data"
    done = _scans_while_writing(root, lambda found: audit_in_process(found, ScanOptions()), LOCAL_SCANS)
    _agrees_with_finished_copies(root, tmp_path, done)
    # Half-written batches seen by some scan: an incomplete tail, never truncated_batch.
    seen = {f.check for result, _ in done for f in result.findings}
    assert seen <= {"incomplete_tail"}
    assert any(result.summary["files_changed"] for result, _ in done)


@pytest.mark.spark
def test_spark_scans_of_a_growing_segment_find_no_corruption(tmp_path: Path, spark) -> None:
    from kafka_audit.engines.spark_job import run_scan

    root = tmp_path / "data"
    done = _scans_while_writing(root, lambda found: run_scan(spark, found, ScanOptions()), SPARK_SCANS)
    _agrees_with_finished_copies(root, tmp_path, done)


def test_an_incomplete_tail_of_a_file_that_grew_is_info(tmp_path: Path) -> None:
    root = tmp_path / "data"
    build_log_dir(root)
    segment = newest_segment(root)
    whole = segment.read_bytes()
    found = discover([str(root)])
    with open(segment, "ab") as handle:  # the first 40 bytes of a batch, then a listing
        handle.write(whole[:40])
    grown = discover([str(root)])
    with open(segment, "ab") as handle:  # more of it, after the listing: a write in progress
        handle.write(whole[40:80])
    result = audit_in_process(grown, ScanOptions())
    (finding,) = result.findings
    assert (finding.check, finding.severity, finding.details["changed_during_scan"]) == ("incomplete_tail", "info", True)
    assert finding.details["bytes"] == 40 and finding.position == len(whole)
    assert result.summary["files_changed"] == [f"{FOLDER}/{segment.name}"]
    # The listing before the append read the file up to its listed size: nothing incomplete.
    assert audit_in_process(found, ScanOptions()).findings == []


def test_a_torn_batch_in_an_older_segment_stays_an_error(tmp_path: Path) -> None:
    with LogDirWriter(tmp_path) as d:
        w = d.partition("t", 0)
        w.append(BatchSpec(records=records(["a", "b"])))
        torn = w.append(BatchSpec(records=records(["c", "d"]), faults=Faults(truncate=9)))
        w.roll(torn.last_offset + 1)
        w.append(BatchSpec(records=records(["e"])))
    result = scan(tmp_path)
    errors = [(f.check, f.segment, f.position) for f in result.findings if f.severity == "error"]
    assert errors == [("truncated_batch", f"t-0/{0:020d}.log", torn.position)]
    assert "incomplete_tail" not in result.summary["findings_by_check"]


def test_segments_deleted_by_retention_during_the_scan_are_segment_changed(tmp_path: Path) -> None:
    root = tmp_path / "data"
    build_log_dir(root)
    sizes = {p.name: p.stat().st_size for p in (root / FOLDER).glob("*.log")}
    found = discover([str(root)])
    removed = delete_oldest(root)
    result = audit_in_process(found, ScanOptions())
    changed = sorted((f.segment, f.severity, f.details["reason"], f.details["bytes_not_read"])
                     for f in result.findings if f.check == "segment_changed")
    assert changed == [(f"{FOLDER}/{name}", "warning", "vanished", sizes[name]) for name in removed]
    assert [f.check for f in result.findings if f.check != "segment_changed"] == []
    # Counted as not read: the summary never calls those bytes read.
    assert result.summary["bytes_found"] - result.summary["bytes_read"] == sum(sizes[n] for n in removed)
    assert result.summary["files_changed"] == [f"{FOLDER}/{name}" for name in removed]


def test_a_deleter_running_beside_the_scans(tmp_path: Path) -> None:
    root = tmp_path / "data"
    offset = build_log_dir(root, segments=6)
    writer = LiveWriter(root, offset).start()
    try:
        for keep in (5, 4, 3, 2):
            found = discover([str(root)])
            delete_oldest(root, keep)
            result = audit_in_process(found, ScanOptions())
            assert [f for f in result.findings if f.severity == "error"] == []
            assert {f.check for f in result.findings} <= {"segment_changed", "incomplete_tail"}
            assert sum(f.check == "segment_changed" for f in result.findings) == 1
    finally:
        assert writer.stop() == 0


def test_a_segment_swapped_by_the_cleaner_is_segment_changed(tmp_path: Path) -> None:
    root = tmp_path / "data"
    build_log_dir(root)
    oldest = min((root / FOLDER).glob("*.log"))
    found = discover([str(root)])
    swap = oldest.with_name(oldest.name + ".swap")
    shutil.copyfile(oldest, swap)
    os.replace(swap, oldest)  # the cleaner's .swap renamed into place: the same bytes, another file
    result = audit_in_process(found, ScanOptions())
    (finding,) = result.findings
    assert (finding.check, finding.details["reason"]) == ("segment_changed", "swapped")


def test_a_file_truncated_during_the_scan_is_segment_changed_not_a_crash(tmp_path: Path, monkeypatch) -> None:
    """A broker truncating a segment mid-read: a memory map would die of SIGBUS; pread sees the
    file end and the scan says what was not read."""
    with LogDirWriter(tmp_path) as d:
        w = d.partition("big", 0)
        for _ in range(40):  # about 36 MiB: read in several chunks
            w.append(BatchSpec(records=records([os.urandom(450_000).hex()])))
        w.roll()
        w.append(BatchSpec(records=records(["x"])))
    segment = tmp_path / "big-0" / f"{0:020d}.log"
    size = segment.stat().st_size
    found = discover([str(tmp_path)])
    real_read_into = local_file.LocalFile.read_into
    cut = 1 << 20

    def read_then_truncate(self, target, start):
        real_read_into(self, target, start)
        if self.path == str(segment) and start == 0:
            os.truncate(segment, cut)  # the broker truncates the file after the first chunk

    monkeypatch.setattr(local_file.LocalFile, "read_into", read_then_truncate)
    result = audit_in_process(found, ScanOptions(split_bytes=1 << 40))
    (finding,) = result.findings
    assert (finding.check, finding.severity, finding.details["reason"]) == ("segment_changed", "warning", "shrank")
    assert 0 < finding.details["bytes_not_read"] < size
    assert result.summary["segment_bytes"][f"big-0/{0:020d}.log"]["read"] == size - finding.details["bytes_not_read"]


def test_sidecars_without_their_log_are_missing_segment(tmp_path: Path) -> None:
    root = tmp_path / "data"
    build_log_dir(root)
    oldest = min((root / FOLDER).glob("*.log"))
    base = int(oldest.name[:20])
    oldest.unlink()
    snapshot = root / FOLDER / f"{999:020d}.snapshot"  # named after an offset, never a segment
    snapshot.write_bytes(b"")
    result = scan(root)
    (finding,) = [f for f in result.findings if f.check == "missing_segment"]
    assert (finding.severity, finding.offset, finding.details["base_offset"]) == ("warning", base, base)
    assert finding.details["files"] == [f"{base:020d}.index", f"{base:020d}.timeindex"]


def test_a_recovery_point_past_the_log_end_is_missing_segment(tmp_path: Path) -> None:
    root = tmp_path / "data"
    build_log_dir(root)
    newest = newest_segment(root)
    checkpoint = root / "recovery-point-offset-checkpoint"
    checkpoint.write_text(f"0\n1\n{FOLDER.rsplit('-', 1)[0]} 0 999999\n")
    past = newest.stat().st_mtime - 60
    os.utime(checkpoint, (past, past))  # written before the newest segment's last append
    result = scan(root)
    (finding,) = [f for f in result.findings if f.check == "missing_segment"]
    assert finding.severity == "warning" and finding.details["checkpoint"] == "recovery-point-offset-checkpoint"
    assert finding.offset == 999999
    later = newest.stat().st_mtime + 60
    os.utime(checkpoint, (later, later))  # written after it: a copy of a running broker
    (finding,) = [f for f in scan(root).findings if f.check == "missing_segment"]
    assert finding.severity == "info"


@pytest.mark.parametrize("copy", ["copy-after-kill", "copy-while-rolling"])
def test_the_live_broker_copies_are_clean(copy: str) -> None:
    """corpus/real-broker-4-live/README: with the broker's settings, no error and no warning."""
    from kafka_audit.audit.scan_options import scan_options

    options = scan_options(compacted_topics=["compacted"], segment_bytes=1048576)
    result = audit_in_process(discover([str(corpus_dir("real-broker-4-live") / copy)]), options)
    assert [f.message for f in result.findings if f.severity in ("error", "warning")] == []
    assert result.summary["batches"] > 0


def test_a_scan_drops_only_the_pages_it_brought_in(tmp_path: Path) -> None:
    with LogDirWriter(tmp_path) as d:
        w = d.partition("cache", 0)
        for _ in range(16):
            w.append(BatchSpec(records=records([os.urandom(1 << 19).hex()])))
    segment = tmp_path / "cache-0" / f"{0:020d}.log"
    fd = os.open(segment, os.O_RDONLY)
    try:
        os.fsync(fd)
        size = os.fstat(fd).st_size
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        if any(b & 1 for b in page_cache.resident_pages(fd, 0, size) or b"\x01"):
            pytest.skip("this file system keeps the pages (tmpfs) or has no mincore")
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no read-ahead past what is read here
        os.pread(fd, size // 2, 0)  # a consumer's hot first half
        before = page_cache.resident_pages(fd, 0, size)
        assert before is not None
        scan(tmp_path)
        after = page_cache.resident_pages(fd, 0, size)
    finally:
        os.close(fd)
    assert after is not None
    cached = [b & 1 for b in before]
    assert 0 < sum(cached) < len(cached)
    assert [b & 1 for b in after] == cached  # the consumer's pages stay, the scan's own are dropped


def test_the_read_rate_cap_waits_for_its_share(monkeypatch) -> None:
    clock, slept = [100.0], []
    monkeypatch.setattr(local_file.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(local_file.time, "sleep", slept.append)
    cap = local_file.RateCap(2.0)  # MB/s
    for _ in range(4):
        cap.take(1_000_000)
    assert slept == pytest.approx([0.5, 1.0, 1.5, 2.0])
    free = local_file.RateCap(None)
    free.take(10**9)
    assert len(slept) == 4


def test_max_read_rate_is_a_scan_option_that_reaches_the_reader(tmp_path: Path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from kafka_audit.cli.app import app

    build_log_dir(tmp_path / "data")
    caps = []
    real_init = local_file.RateCap.__init__

    def noting(self, mb_per_s):
        caps.append(mb_per_s)
        real_init(self, mb_per_s)

    monkeypatch.setattr(local_file.RateCap, "__init__", noting)
    runner = CliRunner()
    assert "--max-read-rate" in runner.invoke(app, ["scan", "--help"], env={"COLUMNS": "200"}).stdout
    out = runner.invoke(app, ["scan", str(tmp_path / "data"), "--engine", "local", "--quiet", "--max-read-rate", "500"])
    assert out.exit_code == 0, out.stdout
    assert caps and set(caps) == {500.0}


def test_a_folder_left_with_only_the_indexes_of_its_segment(tmp_path: Path) -> None:
    """Issue 30: partitions copied with their .index/.timeindex/.snapshot but not the .log."""
    root = tmp_path / "data"
    build_log_dir(root, segments=1)
    (log,) = (root / FOLDER).glob("*.log")
    log.unlink()
    (root / FOLDER / f"{7:020d}.snapshot").write_bytes(b"")
    result = scan(root)
    (finding,) = [f for f in result.findings if f.check == "missing_segment"]
    assert finding.details["files"] == [f"{0:020d}.index", f"{0:020d}.timeindex"]
