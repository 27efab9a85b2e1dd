"""``kafka-audit producers`` and ``timeline``, the report filters and the coordinator join (SPEC
sections 1-3). Expected values come from the real-broker READMEs (kafka-dump-log's view of each
partition, the transactional ids they name) and producer-actions.json, or from fixtures built here
with known contents, never from the code under test.

These run the commands on the local engine (``test_views_spark.py`` holds the two engines to the
same rows and events)."""

from __future__ import annotations

import csv
import io
import json
import re
import struct
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kafka_audit.cli.app import app
from kafka_audit.record.record_batch import ControlRecordType
from kafka_audit.report.view_reports import EVENT_FIELDS, PRODUCER_FIELDS
from tests.conftest import FIXTURES
from tests.support.audit_run import BUNDLED
from tests.support.writer import TS_BASE, BatchSpec, ControlSpec, LogDirWriter, records

REAL_BROKER = BUNDLED / "real-broker"


@pytest.fixture
def cli():
    """The commands on the local engine."""
    runner = CliRunner()

    def invoke(command, *args):
        return runner.invoke(app, [command, "--engine", "local", *(str(a) for a in args)])

    return invoke


def _json(cli, *args) -> dict:
    result = cli(*args, "--format", "json", "--quiet", "--fail-on", "never")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# -- what kafka-dump-log saw, from the READMEs --------------------------------------------------

_PRODUCER = re.compile(r"(\d+)/(\d+): (\d+)-(\d+) @ (\d+)-(\d+)")
_MARKER = re.compile(r"(COMMIT|ABORT) pid (\d+)/e(\d+) @(\d+)")


def readme_view(name: str) -> tuple[dict[tuple[str, int], dict], dict[int, str], dict[str, int]]:
    """Expected ``producers`` rows per (partition folder, pid) from the README's "Kafka's own
    view" table, the transactional ids it names ("tx-A (PID 0"), and each partition's batches."""
    text = (REAL_BROKER / name / "README.md").read_text()
    table = text.split("Kafka's own view", 1)[1]
    expected: dict[tuple[str, int], dict] = {}
    batches: dict[str, int] = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 7 or not cells[2].isdigit():
            continue
        partition, producers, markers = cells[0], cells[5], cells[6]
        batches[partition] = int(cells[2])
        moments: dict[int, list[tuple[int, int]]] = {}
        for pid, epoch, seq_first, seq_last, off_first, off_last in (map(int, m) for m in _PRODUCER.findall(producers)):
            row = expected.setdefault((partition, pid), _empty_row())
            row["sequences"][str(epoch)] = [seq_first, seq_last]
            row["records"] += seq_last - seq_first + 1
            moments.setdefault(pid, []).extend([(off_first, epoch), (off_last, epoch)])
        for kind, pid, epoch, offset in ((k, int(p), int(e), int(o)) for k, p, e, o in _MARKER.findall(markers)):
            row = expected.setdefault((partition, pid), _empty_row())
            row["transactions"]["committed" if kind == "COMMIT" else "aborted"] += 1
            moments.setdefault(pid, []).append((offset, epoch))
        for pid, points in moments.items():
            row = expected[(partition, pid)]
            points.sort()
            row["first_offset"], row["last_offset"] = points[0][0], points[-1][0]
            row["epochs"] = list(dict.fromkeys(epoch for _, epoch in points))
    names = {int(pid): tid for tid, pid in re.findall(r"(tx-[\w-]+) \(PID (\d+)", text)}
    return expected, names, batches


def _empty_row() -> dict:
    return {"sequences": {}, "records": 0, "transactions": {"committed": 0, "aborted": 0, "open": 0}}


@pytest.mark.parametrize(
    "name", ["transactions", "hanging-txn-timeout-aborted", "idempotent-compressed", "retention-producer-expiry", "compacted"]
)
def test_producers_rows_are_kafka_dump_logs_view(cli, name):
    expected, names, batches = readme_view(name)
    report = _json(cli, "producers", REAL_BROKER / name / "data")
    rows = {(f"{r['topic']}-{r['partition']}", r["producer_id"]): r for r in report["producers"]}
    assert set(rows) == set(expected)
    # Kafka's view lists end markers; a transaction is completed by a marker that closed an open
    # one (ProducerStateManager's CompletedTxn). A marker whose data the cleaner removed closes
    # none: each such marker is an orphan_marker finding instead, so every marker is accounted for.
    scan = _json(cli, "scan", REAL_BROKER / name / "data")
    for f in scan["findings"]:
        if f["check"] == "orphan_marker":
            want = expected[(f"{f['topic']}-{f['partition']}", f["producer_id"])]["transactions"]
            want["committed" if f["details"]["marker"] == "COMMIT" else "aborted"] -= 1
    for key, want in expected.items():
        row = rows[key]
        assert row["epochs"] == want["epochs"], key
        assert row["sequences"] == want["sequences"], key
        assert (row["first_offset"], row["last_offset"]) == (want["first_offset"], want["last_offset"]), key
        assert row["transactions"] == want["transactions"], key
        if name != "compacted":  # the cleaner removed records inside the sequence ranges
            assert row["records"] == want["records"], key
        assert row["transactional_id"] == names.get(key[1]), key
        assert row["first_timestamp"] <= row["last_timestamp"]
    # Every batch of a partition is a producer's data batch or one of its markers (no batch
    # here lacks a producer id): a marker completes a transaction or is an orphan_marker.
    orphans = Counter(f"{f['topic']}-{f['partition']}" for f in scan["findings"] if f["check"] == "orphan_marker")
    for partition, total in batches.items():
        mine = [r for (p, _), r in rows.items() if p == partition]
        ended = sum(r["batches"] + r["transactions"]["committed"] + r["transactions"]["aborted"] for r in mine)
        assert ended + orphans[partition] == total


def test_producer_totals_match_what_the_producers_did(cli):
    """producer-actions.json of the transactions dir: tx-A wrote 60+80+60+80+80+60+30+50+25 records
    over both partitions in 9 transactions (5 committed), tx-B 40*3+10 in 4 (3 committed), the
    idempotent producer 100."""
    report = _json(cli, "producers", REAL_BROKER / "transactions" / "data")
    per_pid: dict[str, list[int]] = {}
    for row in report["producers"]:
        who = row["transactional_id"] or "idempotent"
        totals = per_pid.setdefault(who, [0, 0, 0])
        totals[0] += row["records"]
        totals[1] += row["transactions"]["committed"]
        totals[2] += row["transactions"]["aborted"]
    # Each transaction spans both partitions, so each marker count is twice the transaction count.
    assert per_pid == {"tx-A": [525, 10, 8], "tx-B": [130, 6, 2], "idempotent": [100, 0, 0]}


# -- timeline -----------------------------------------------------------------------------------


def test_timeline_tells_tx_hangs_story_in_time_order(cli):
    report = _json(cli, "timeline", REAL_BROKER / "hanging-txn-timeout-aborted" / "data", "--producer-id", "1")
    events = report["events"]
    assert {e["producer_id"] for e in events} == {1}
    assert {e["transactional_id"] for e in events} == {"tx-hang"}
    # README: tx-hang began at offset 51 (epoch 0); the coordinator's ABORT marker at offset 382
    # carries the bumped epoch 1.
    story = [(e["kind"], e["offset"], e["producer_epoch"]) for e in events]
    assert ("transaction_begin", 51, 0) in story
    assert ("transaction_abort", 382, 1) in story
    assert story.index(("transaction_begin", 51, 0)) < story.index(("transaction_abort", 382, 1))
    # The epoch_bump finding is the replay's epoch_bump event, not a second row.
    found = [(e["kind"], e["check"], e["offset"]) for e in events if e["check"]]
    assert found == [("epoch_bump", "epoch_bump", 382)]
    times = [e["timestamp"] for e in events]
    assert times == sorted(times)
    assert all(e["time"].endswith("Z") and e["time"].startswith("2026-11-23T") for e in events)
    assert list(events[0]) == list(EVENT_FIELDS)


def test_timeline_orders_every_partition_by_time_then_offset(cli):
    events = _json(cli, "timeline", REAL_BROKER / "transactions" / "data")["events"]
    timed = [(e["timestamp"], e["offset"]) for e in events if e["timestamp"] is not None]
    assert timed == sorted(timed)
    # Events without a time (snapshots) come last.
    assert [e["timestamp"] is None for e in events] == sorted(e["timestamp"] is None for e in events)
    # README: 8 COMMIT and 5 ABORT markers per partition of txn, 2 partitions.
    kinds = [e["kind"] for e in events]
    assert kinds.count("transaction_commit") == 16 and kinds.count("transaction_abort") == 10
    # The four epoch_bump infos, each the row of its epoch_bump event.
    assert [(e["kind"], e["check"]) for e in events if e["check"]] == [("epoch_bump", "epoch_bump")] * 4


# -- filters ------------------------------------------------------------------------------------


def _open_txn_dir(root: Path) -> Path:
    """hang-0: producer 7 (tx-late) opens a transaction at TS_BASE and never ends it; producer 9
    (idempotent) writes 20 minutes later; producer 5 (tx-done) commits one. __transaction_state-0
    holds the coordinator's records, encoded here from TransactionLogKey/Value v0."""
    with LogDirWriter(root) as log_dir:
        hang = log_dir.partition("hang", 0)
        hang.append(BatchSpec(records=records(["a", "b"]), producer_id=5, producer_epoch=0, base_sequence=0,
                              transactional=True, base_timestamp=TS_BASE))
        hang.append(BatchSpec(control=ControlSpec(ControlRecordType.COMMIT), producer_id=5, producer_epoch=0,
                              transactional=True, base_timestamp=TS_BASE + 10))
        hang.append(BatchSpec(records=records(["x"] * 3), producer_id=7, producer_epoch=2, base_sequence=0,
                              transactional=True, base_timestamp=TS_BASE + 1000))
        hang.append(BatchSpec(records=records(["y"]), producer_id=9, producer_epoch=0, base_sequence=0,
                              base_timestamp=TS_BASE + 20 * 60_000))
        state = log_dir.partition("__transaction_state", 0)
        for key, value, at in (
            (_txn_key("tx-done"), _txn_value(5, 0, 60_000, 4, [], TS_BASE + 10), TS_BASE + 11),
            (_txn_key("tx-late"), _txn_value(7, 2, 900_000, 0, [], TS_BASE), TS_BASE),
            (_txn_key("tx-late"), _txn_value(7, 2, 900_000, 1, [("hang", [0])], TS_BASE + 999), TS_BASE + 999),
        ):
            state.append(BatchSpec(records=records([value], keys=[key]), base_timestamp=at))
    return root


def _txn_key(transactional_id: str) -> bytes:
    raw = transactional_id.encode()
    return struct.pack(">hh", 0, len(raw)) + raw


def _txn_value(pid: int, epoch: int, timeout: int, state: int, partitions, updated: int) -> bytes:
    out = struct.pack(">hqhib", 0, pid, epoch, timeout, state) + struct.pack(">i", len(partitions))
    for topic, ids in partitions:
        out += struct.pack(">h", len(topic)) + topic.encode() + struct.pack(">i", len(ids)) + b"".join(struct.pack(">i", i) for i in ids)
    return out + struct.pack(">qq", updated, updated)


def test_hanging_transaction_carries_the_coordinators_view(cli, tmp_path):
    report = _json(cli, "scan", _open_txn_dir(tmp_path / "d"))
    hanging = [f for f in report["findings"] if f["check"] == "hanging_transaction"]
    assert len(hanging) == 1
    finding = hanging[0]
    assert (finding["producer_id"], finding["transactional_id"]) == (7, "tx-late")
    state = finding["details"]["coordinator_state"]
    assert state["state"] == "Ongoing" and state["partitions"] == ["hang-0"]
    assert state["transaction_timeout_ms"] == 900_000 and state["producer_epoch"] == 2
    assert state["transaction_log_offset"] == 2
    assert finding["time"] == "2023-11-14T22:13:21.002Z"  # TS_BASE + 1000 + 2 (the batch's last record)


def test_producer_id_filter_keeps_only_those_producers(cli, tmp_path):
    log_dir = _open_txn_dir(tmp_path / "d")
    rows = _json(cli, "producers", log_dir, "--producer-id", "5", "--producer-id", "9")["producers"]
    assert [(r["topic"], r["producer_id"], r["transactional_id"]) for r in rows] == [("hang", 5, "tx-done"), ("hang", 9, None)]
    assert rows[0]["transactions"] == {"committed": 1, "aborted": 0, "open": 0}
    scan = _json(cli, "scan", log_dir, "--producer-id", "5")
    assert scan["findings"] == [] and scan["summary"]["filter"]["producer_ids"] == [5]
    events = _json(cli, "timeline", log_dir, "--producer-id", "7")["events"]
    assert [(e["kind"], e["check"]) for e in events] == [("transaction_begin", None), ("finding", "hanging_transaction")]


def test_since_until_keep_what_happened_in_the_window(cli, tmp_path):
    log_dir = _open_txn_dir(tmp_path / "d")
    late = _json(cli, "producers", log_dir, "--since", str(TS_BASE + 60_000))["producers"]
    assert [r["producer_id"] for r in late if r["topic"] == "hang"] == [9]
    early = _json(cli, "timeline", log_dir, "--until", "2023-11-14T22:13:20.500Z")["events"]
    assert [(e["producer_id"], e["kind"]) for e in early] == [(5, "transaction_begin"), (5, "transaction_commit")]
    windowed = _json(cli, "scan", log_dir, "--since", str(TS_BASE + 500), "--until", str(TS_BASE + 2000))
    assert [f["check"] for f in windowed["findings"]] == ["hanging_transaction"]


@pytest.mark.parametrize("args, says", [
    (["--since", "yesterday"], "--since 'yesterday' is neither epoch milliseconds nor an ISO-8601 time"),
    (["--since", "2000", "--until", "1000"], "--since '2000' is after --until '1000'"),
])
def test_bad_time_window_is_exit_2_with_one_line(cli, args, says):
    result = cli("timeline", FIXTURES / "healthy", *args)
    assert result.exit_code == 2
    assert says in result.output


# -- formats ------------------------------------------------------------------------------------


def test_producers_and_timeline_in_every_format(cli, tmp_path):
    log_dir = _open_txn_dir(tmp_path / "d")
    for view, key, fields in (("producers", "producers", PRODUCER_FIELDS), ("timeline", "events", EVENT_FIELDS)):
        rows = _json(cli, view, log_dir)[key]
        assert rows and all(list(r) == list(fields) for r in rows)
        ndjson = cli(view, log_dir, "--format", "ndjson", "--quiet", "--fail-on", "never").stdout
        assert [json.loads(line) for line in ndjson.splitlines()] == rows
        table = list(csv.DictReader(io.StringIO(cli(view, log_dir, "--format", "csv", "--quiet", "--fail-on", "never").stdout)))
        assert [r["producer_id"] for r in table] == ["" if r["producer_id"] is None else str(r["producer_id"]) for r in rows]
        assert list(table[0]) == list(fields)
        out = tmp_path / f"{view}.txt"
        result = cli(view, log_dir, "--quiet", "--fail-on", "never", "--output", out)
        assert result.exit_code == 0 and result.stdout == ""
        text = out.read_text()
        assert f"kafka-audit {view}" in text and "tx-late" in text


def test_producers_table_shows_each_epoch_and_its_sequences(cli, tmp_path):
    result = cli("producers", _open_txn_dir(tmp_path / "d"), "--quiet", "--fail-on", "never")
    assert "hang-0" in result.stdout and "2: 0-2" in result.stdout and "1 commit" in result.stdout


def test_scan_table_shows_each_findings_time_and_transactional_id(cli, tmp_path):
    result = cli("scan", _open_txn_dir(tmp_path / "d"), "--quiet", "--fail-on", "never")
    assert "2023-11-14 22:13:21.002 UTC" in result.stdout and "tx-late" in result.stdout


def test_the_exit_code_follows_the_reported_findings(cli, tmp_path):
    log_dir = _open_txn_dir(tmp_path / "d")
    assert cli("scan", log_dir, "--quiet", "--format", "json").exit_code == 1  # hanging: error
    assert cli("scan", log_dir, "--quiet", "--format", "json", "--producer-id", "5").exit_code == 0
    assert cli("producers", log_dir, "--quiet", "--format", "json").exit_code == 1


def test_a_finding_without_a_batch_carries_the_time_of_the_batch_before_it(cli, tmp_path):
    """Bytes that hold no batch (here a torn write: 20 bytes of a batch header) were written after
    the last batch read before them: the finding carries that batch's max timestamp."""
    with LogDirWriter(tmp_path / "d") as log_dir:
        part = log_dir.partition("torn", 0)
        part.append(BatchSpec(records=records(["a", "b", "c"]), producer_id=3, producer_epoch=0, base_sequence=0,
                              base_timestamp=TS_BASE + 5000))
    segment = tmp_path / "d" / "torn-0" / "00000000000000000000.log"
    with open(segment, "ab") as handle:
        handle.write(struct.pack(">qi", 3, 200) + b"\x00" * 8)
    findings = _json(cli, "scan", tmp_path / "d")["findings"]
    torn = [f for f in findings if f["check"] == "incomplete_tail"]  # the newest segment's (SPEC)
    assert len(torn) == 1 and torn[0]["batch_base_offset"] is None
    assert torn[0]["timestamp"] == TS_BASE + 5002 and torn[0]["time"] == "2023-11-14T22:13:25.002Z"


def test_the_parquet_producers_dataset_carries_the_completed_rows(cli, tmp_path):
    """The rows are completed (transactional ids, finding counts) before any report or dataset."""
    import pyarrow.parquet as pq

    target = tmp_path / "out"
    result = cli("scan", _open_txn_dir(tmp_path / "d"), "--quiet", "--format", "json", "--fail-on", "never",
                 "--output-parquet", target)
    assert result.exit_code == 0, result.output
    rows = {r["producer_id"]: r for r in pq.read_table(target / "producers").to_pylist() if r["topic"] == "hang"}
    assert rows[7]["transactional_id"] == "tx-late" and rows[7]["findings"]["error"] == 1
    assert rows[5]["transactional_id"] == "tx-done" and rows[9]["transactional_id"] is None


def test_a_broker_rejection_is_one_timeline_row_with_its_explanation(cli):
    # fixtures/broker-logs/producer-errors.server.log holds one refused batch of producer 557891
    # (fixtures/README.md); the timeline tells it once, as the broker log's row with its check.
    log = FIXTURES / "broker-logs" / "producer-errors.server.log"
    events = _json(cli, "timeline", FIXTURES / "producer-errors", "--broker-log", log)["events"]
    rejections = [e for e in events if e["check"] == "broker_rejection"]
    assert [(e["kind"], e["producer_id"]) for e in rejections] == [("broker_log", 557891)]
    assert "557891" in rejections[0]["message"]
