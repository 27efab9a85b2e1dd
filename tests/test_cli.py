"""``kafka-audit scan`` and ``dump`` end to end: SPEC sections 1 and 3 (options, formats, exit codes).

Most tests run the Typer app in this process with the shared SparkSession standing in for the
one ``scan`` would start; a few run the real command in a subprocess, Spark start-up included.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kafka_audit.cli.app import app, main
from kafka_audit.engines import spark_session as spark_session_module
from kafka_audit.rules.catalogue import CHECKS, UNCOMPRESSED_OFFSET_DELTAS
from kafka_audit.rules.findings import FIELD_NAMES
from tests.conftest import FIXTURES, REPO
from tests.support.writer import BatchSpec, Faults, LogDirWriter, Producer, records

FAULTY = FIXTURES / "faulty"
HEALTHY = FIXTURES / "healthy"
PRODUCER_ERRORS = FIXTURES / "producer-errors"


@pytest.fixture
def shared_session(spark, monkeypatch):
    """``scan`` gets the shared session instead of starting one."""

    @contextlib.contextmanager
    def session(master, conf, secret=None):
        yield spark

    monkeypatch.setattr(spark_session_module, "spark_session", session)


@pytest.fixture
def cli(shared_session):
    """Invoke the app in-process (with the shared session)."""
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, [str(a) for a in args])

    return invoke


def run_main(*args: str, capsys) -> tuple[int, str, str]:
    """The console entry point (one-line usage errors), without Spark."""
    with pytest.raises(SystemExit) as stop:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return stop.value.code, out, err


def expected(log_dir: Path) -> dict:
    return json.loads((log_dir / "EXPECTED.json").read_text())


# -- formats ----------------------------------------------------------------------------------


@pytest.mark.spark
def test_json_report_has_every_spec_field_and_the_expected_findings(cli):
    spec = expected(FAULTY)
    result = cli("scan", FAULTY, "--format", "json", "--quiet", *spec["scan_args"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    for key in ("partitions", "segments", "batches", "records", "bytes", "findings_by_check"):
        assert key in report["summary"]
    findings = report["findings"]
    assert all(tuple(f) == FIELD_NAMES for f in findings)
    got = sorted((f["check"], f["topic"], f["partition"], f["offset"], f["record_index"]) for f in findings)
    want = sorted((f["check"], f["topic"], f["partition"], f["offset"], f["record_index"]) for f in spec["findings"])
    assert got == want
    for finding in findings:
        # The catalogue's entry, or its one named variant (an uncompressed v2 batch's deltas).
        entries = [CHECKS[finding["check"]]] + [v for v in (UNCOMPRESSED_OFFSET_DELTAS,) if v.id == finding["check"]]
        answers = {(c.severity, c.error.code if c.error else None) for c in entries}
        assert (finding["severity"], finding["error_code"]) in answers
        assert finding["client_outcome"] in ("retriable", "abortable", "fatal", "none")
    assert report["summary"]["findings_by_check"] == {
        c: sum(1 for f in findings if f["check"] == c) for c in {f["check"] for f in findings}
    }


@pytest.mark.spark
def test_findings_are_ordered_by_topic_partition_offset_check(cli):
    result = cli("scan", FAULTY, "--format", "json", "--quiet", *expected(FAULTY)["scan_args"])
    keys = [
        (f["topic"], f["partition"], -1 if f["offset"] is None else f["offset"], f["check"])
        for f in json.loads(result.stdout)["findings"]
    ]
    assert keys == sorted(keys)


@pytest.mark.spark
def test_ndjson_and_csv_carry_the_same_findings(cli):
    args = ("scan", PRODUCER_ERRORS, "--quiet")
    as_json = json.loads(cli(*args, "--format", "json").stdout)["findings"]
    lines = cli(*args, "--format", "ndjson").stdout.splitlines()
    assert [json.loads(line) for line in lines] == as_json
    rows = list(csv.DictReader(io.StringIO(cli(*args, "--format", "csv").stdout)))
    assert tuple(rows[0]) == FIELD_NAMES
    assert [row["check"] for row in rows] == [f["check"] for f in as_json]
    assert [json.loads(row["details"]) for row in rows] == [f["details"] for f in as_json]
    assert rows[0]["record_index"] == "" and rows[0]["offset"] == "120"


@pytest.mark.spark
def test_table_shows_the_summary_and_one_table_per_group(cli):
    result = cli("scan", PRODUCER_ERRORS, "--quiet")
    assert result.exit_code == 1
    text = result.stdout
    assert "kafka-audit scan" in text and "partitions" in text and "records" in text
    assert "Fenced epochs (1)" in text and "Sequence anomalies (2)" in text
    assert "OUT_OF_ORDER_SEQUENCE_NUMBER (45)" in text
    assert "Culprit records" not in text


@pytest.mark.spark
def test_output_file_gets_the_report_and_stdout_stays_empty(cli, tmp_path):
    target = tmp_path / "report.json"
    result = cli("scan", PRODUCER_ERRORS, "--format", "json", "--output", target, "--quiet")
    assert result.exit_code == 1 and result.stdout == ""
    assert len(json.loads(target.read_text())["findings"]) == 3
    table = tmp_path / "report.txt"
    cli("scan", PRODUCER_ERRORS, "--output", table, "--quiet")
    assert "Sequence anomalies (2)" in table.read_text()


# -- exit codes and options ---------------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.parametrize(
    "fail_on, code", [("error", 1), ("warning", 1), ("info", 1), ("never", 0)]
)
def test_fail_on_sets_the_exit_code(cli, fail_on, code):
    assert cli("scan", PRODUCER_ERRORS, "--quiet", "--fail-on", fail_on).exit_code == code


@pytest.mark.spark
def test_fail_on_warning_passes_a_dir_with_only_info_findings(cli, tmp_path):
    with LogDirWriter(tmp_path) as d:
        w = d.partition("t", 0)
        p = Producer(9, epoch=0)
        p.send(w, records(["a"]))
        p.bump_epoch()
        p.send(w, records(["b"]))  # an epoch bump: info only
    assert cli("scan", tmp_path, "--quiet").exit_code == 0
    assert cli("scan", tmp_path, "--quiet", "--fail-on", "warning").exit_code == 0
    assert cli("scan", tmp_path, "--quiet", "--fail-on", "info").exit_code == 1


@pytest.mark.spark
def test_healthy_fixtures_exit_zero(cli):
    result = cli("scan", HEALTHY, "--quiet", "--format", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["findings"] == []


@pytest.mark.spark
def test_topic_and_partition_filters(cli):
    result = cli(
        "scan", FAULTY, "--format", "json", "--quiet", "--topic", "crc-mismatch", "--partition", "1", "--partition", "2"
    )
    report = json.loads(result.stdout)
    assert report["summary"]["partitions"] == 2
    assert {(f["topic"], f["partition"]) for f in report["findings"]} == {("crc-mismatch", 1), ("crc-mismatch", 2)}


@pytest.mark.spark
def test_rule_options_reach_the_validation(cli):
    """Without the faulty dir's options, its option-dependent culprits are not reported."""
    plain = json.loads(cli("scan", FAULTY, "--format", "json", "--quiet").stdout)["summary"]["findings_by_check"]
    for check in ("record_too_large", "timestamp_out_of_range", "missing_key_compacted"):
        assert check not in plain
    args = ("--max-message-bytes", "1000", "--compacted-topic", "missing-key-compacted")
    given = json.loads(cli("scan", FAULTY, "--format", "json", "--quiet", *args).stdout)["summary"]["findings_by_check"]
    assert given["record_too_large"] == 1 and given["missing_key_compacted"] == 1
    iso = cli(
        "scan", FAULTY, "--format", "json", "--quiet", "--topic", "timestamp-out-of-range",
        "--reference-time", "2023-11-14T23:13:20Z", "--timestamp-before-max-ms", "86400000",
        "--timestamp-after-max-ms", "3600000",
    )
    assert json.loads(iso.stdout)["summary"]["findings_by_check"] == {"timestamp_out_of_range": 2}


@pytest.mark.spark
def test_producer_id_expiration_decides_whether_the_broker_forgot_the_producer(cli):
    args = ("scan", FAULTY, "--format", "json", "--quiet", "--topic", "producer-expired")
    default = json.loads(cli(*args).stdout)["summary"]["findings_by_check"]
    assert default == {"producer_expired": 1}
    longer = json.loads(cli(*args, "--producer-id-expiration-ms", "90000000").stdout)["summary"]["findings_by_check"]
    assert longer == {}


@pytest.mark.spark
def test_compaction_inferred_from_the_cleaner_checkpoint_on_spark(cli):
    # The Spark engine sees the same answer to "is this topic compacted" as the in-process audit.
    from tests.support.audit_run import corpus_dir

    data = corpus_dir("real-broker") / "compacted" / "data"
    result = json.loads(cli("scan", data, "--format", "json", "--quiet", "--fail-on", "never").stdout)
    assert result["summary"]["findings_by_check"] == {"orphan_marker": 2}


@pytest.mark.spark
def test_transaction_timeout_decides_hanging_or_open(cli):
    args = ("scan", FAULTY, "--format", "json", "--quiet", "--topic", "hanging-transaction")
    default = json.loads(cli(*args).stdout)["summary"]["findings_by_check"]
    assert default == {"hanging_transaction": 1}
    relaxed = json.loads(cli(*args, "--transaction-timeout-ms", "2000000").stdout)["summary"]["findings_by_check"]
    assert relaxed == {"open_transaction": 1}


@pytest.mark.spark
def test_one_bad_file_does_not_hide_the_others(cli, tmp_path):
    with LogDirWriter(tmp_path) as d:
        d.partition("good", 0).append(BatchSpec(records=records(["x"])))
        bad = d.partition("bad", 0)
        bad.append(BatchSpec(records=records(["y"])))
        bad.append(BatchSpec(records=records(["z"]), faults=Faults(bad_crc=True)))
    (tmp_path / "good-0" / "notes.txt").write_text("not a segment")
    report = json.loads(cli("scan", tmp_path, "--format", "json", "--quiet").stdout)
    assert report["summary"]["batches"] == 3
    assert [(f["check"], f["segment"]) for f in report["findings"]] == [
        ("crc_mismatch", f"bad-0/{0:020d}.log"),
        ("skipped_file", "good-0/notes.txt"),
    ]
    assert report["summary"]["files_skipped"] == 1


@pytest.mark.spark
@pytest.mark.parametrize("fmt", ["json", "ndjson", "csv", "table"])
def test_unreadable_and_skipped_files_reach_every_format_and_the_exit_code(cli, tmp_path, fmt):
    with LogDirWriter(tmp_path) as d:
        d.partition("good", 0).append(BatchSpec(records=records(["x"])))
    (tmp_path / "good-0" / "notes.txt").write_text("not a segment")
    skipped_only = cli("scan", tmp_path, "--quiet", "--format", fmt)
    assert skipped_only.exit_code == 0 and "good-0/notes.txt" in skipped_only.stdout
    assert "skipped_file" in skipped_only.stdout
    assert cli("scan", tmp_path, "--quiet", "--format", fmt, "--fail-on", "info").exit_code == 1
    os.symlink(tmp_path / "gone", tmp_path / "good-0" / f"{5:020d}.log")
    unreadable = cli("scan", tmp_path, "--quiet", "--format", fmt)
    assert unreadable.exit_code == 1
    assert "unreadable_segment" in unreadable.stdout and "broken symbolic link" in unreadable.stdout


@pytest.mark.spark
def test_the_real_broker_corpus_scans_clean_through_the_cli(cli, corpus):
    result = cli("scan", corpus, "--format", "json", "--quiet")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["summary"]["batches"] == 11366 + 6387 + 98 + 873 + 19
    assert report["summary"]["notes"] == []
    assert [f for f in report["findings"] if f["severity"] != "info"] == []


def test_ctrl_c_is_one_line_and_exit_130(capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("kafka_audit.log.log_dir.discover", interrupted)
    code, _, err = run_main("scan", PRODUCER_ERRORS, capsys=capsys)
    assert code == 130 and err.strip() == "kafka-audit: interrupted"


# -- errors: one line on stderr, exit 2 ---------------------------------------------------------


def test_missing_path_is_exit_2_with_one_line(capsys, tmp_path):
    code, out, err = run_main("scan", tmp_path / "nope", capsys=capsys)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [f"kafka-audit: {tmp_path / 'nope'}: no such file or directory"]


def test_no_segment_under_the_paths_is_exit_2(capsys, tmp_path):
    (tmp_path / "readme.txt").write_text("hello")
    code, _, err = run_main("scan", tmp_path, capsys=capsys)
    assert code == 2 and "no Kafka segment" in err.splitlines()[-1]


def test_broken_symlink_path_is_exit_2(capsys, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "gone")
    code, _, err = run_main("scan", link, capsys=capsys)
    assert code == 2 and err.strip().endswith("broken symbolic link")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_path_is_exit_2(capsys, tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0)
    try:
        code, _, err = run_main("scan", folder, capsys=capsys)
    finally:
        folder.chmod(0o755)
    assert code == 2 and "permission denied" in err


@pytest.mark.parametrize(
    "args, says",
    [
        (["scan", "--format", "xml", "PATH"], "--format"),
        (["scan", "--bogus", "PATH"], "No such option"),
        (["scan"], "Missing argument"),
        (["scan", "--reference-time", "yesterday", "PATH"], "--reference-time"),
        (["scan", "--reference-time", "\u00b2", "PATH"], "--reference-time"),
        (["scan", "--reference-time=--5", "PATH"], "--reference-time"),
        (["scan", "--conf", "novalue", "PATH"], "--conf"),
        (["scan", "--max-message-bytes", "0", "PATH"], "--max-message-bytes"),
        (["scan", "--producer-id-expiration-ms", "-1", "PATH"], "--producer-id-expiration-ms"),
        (["scan", "--output", "/nonexistent-dir/x.json", "PATH"], "--output"),
        (["dump", "PATH"], "is a directory"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(capsys, args, says):
    code, out, err = run_main(*[str(PRODUCER_ERRORS) if a == "PATH" else a for a in args], capsys=capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0]


def test_dump_refuses_a_fifo_instead_of_hanging(capsys, tmp_path):
    fifo = tmp_path / "00000000000000000000.log"
    os.mkfifo(fifo)
    code, _, err = run_main("dump", fifo, capsys=capsys)
    assert code == 2 and err.strip() == f"kafka-audit: {fifo}: not a regular file"


@pytest.mark.spark
@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_file_names_that_are_not_utf8_are_printed_escaped(shared_session, capsys, tmp_path, fmt):
    with LogDirWriter(tmp_path) as d:
        w = d.partition("t", 0)
        w.append(BatchSpec(records=records(["a"])))
        w.append(BatchSpec(records=records(["b"]), faults=Faults(bad_crc=True)))
    os.rename(bytes(tmp_path / "t-0"), bytes(tmp_path) + b"/caf\xe9-0")  # topic "caf\xe9" in Latin-1
    code, out, _ = run_main("scan", tmp_path, "--quiet", "--format", fmt, capsys=capsys)
    assert code == 1
    # JSON carries the shown text "caf\\xe9" as a JSON string (its backslash escaped).
    shown = json.loads(out)["findings"][0]["topic"] if fmt == "json" else out
    assert "caf\\xe9" in shown


def test_no_arguments_prints_help(capsys):
    code, out, _ = run_main(capsys=capsys)
    assert code == 0 and "scan" in out and "dump" in out


def test_spark_that_cannot_start_is_one_line_exit_2(capsys, monkeypatch):
    """The CLI's side; the messages of real failures: tests/test_spark_failures.py."""

    def broken(master, conf, secret=None):
        raise spark_session_module.SparkFailure("Could not parse Master URL: 'nonsense'; Spark's log: /tmp/x/spark.log")

    monkeypatch.setattr(spark_session_module, "spark_session", broken)
    code, _, err = run_main("scan", PRODUCER_ERRORS, "--master", "nonsense", capsys=capsys)
    assert code == 2 and err.strip().splitlines() == [
        "kafka-audit: Spark failed: Could not parse Master URL: 'nonsense'; Spark's log: /tmp/x/spark.log"
    ]


# -- dump -----------------------------------------------------------------------------------------


def test_dump_json_batches_carry_the_spec_fields(capsys):
    segment = PRODUCER_ERRORS / "test-8" / "00000000000000000104.log"
    code, out, _ = run_main("dump", segment, "--format", "json", "--records", capsys=capsys)
    assert code == 0
    batches = [json.loads(line) for line in out.splitlines()]
    for key in (
        "file", "position", "base_offset", "last_offset", "magic", "size", "compression", "crc_valid",
        "record_count", "producer_id", "producer_epoch", "base_sequence", "is_transactional", "is_control",
        "max_timestamp", "records",
    ):
        assert key in batches[0]
    zombie = next(b for b in batches if b["base_offset"] == 120)
    assert (zombie["producer_id"], zombie["producer_epoch"], zombie["base_sequence"]) == (557891, 3, 4)
    assert [r["offset"] for r in zombie["records"]] == [120, 121, 122, 123]
    assert set(zombie["records"][0]) == {"offset", "timestamp", "key_size", "value_size", "headers"}


def test_dump_print_data_gives_utf8_or_base64(capsys, tmp_path):
    with LogDirWriter(tmp_path) as d:
        d.partition("t", 0).append(BatchSpec(records=records([b"\xff\xfe binary", "text"], keys=["k1", None])))
    code, out, _ = run_main(
        "dump", tmp_path / "t-0" / "00000000000000000000.log", "--format", "json", "--print-data", capsys=capsys
    )
    (batch,) = [json.loads(line) for line in out.splitlines()]
    first, second = batch["records"]
    assert first["key"] == "k1" and "value" not in first
    assert first["value_b64"] == "//4gYmluYXJ5"
    assert second["key"] is None and second["value"] == "text"


def test_dump_text_is_kafka_dump_log_like(capsys):
    segment = FIXTURES / "healthy" / "ledger.txn-0" / "00000000000000000018.log"
    code, out, _ = run_main("dump", segment, "--records", capsys=capsys)
    lines = out.splitlines()
    assert code == 0 and lines[0] == f"Dumping {segment}"
    assert lines[1].startswith("baseOffset: 18 lastOffset: ")
    assert any("endTxnMarker: COMMIT coordinatorEpoch: 4" in line for line in lines)


def test_dump_sidecars_and_problems(capsys, tmp_path):
    folder = FIXTURES / "healthy" / "ledger.txn-0"
    code, out, _ = run_main(
        "dump", folder / "00000000000000000000.txnindex", folder / "leader-epoch-checkpoint",
        FIXTURES / "healthy" / "meta.properties", "--format", "json", capsys=capsys,
    )
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows[0]["producer_id"] == 2001 and rows[0]["last_stable_offset"] == 12
    assert {"epoch": 0, "start_offset": 0}.items() <= rows[1].items()
    assert any(r.get("key") == "cluster.id" for r in rows)
    torn = tmp_path / "00000000000000000000.log"
    torn.write_bytes((FIXTURES / "producer-errors" / "test-8" / "00000000000000000000.log").read_bytes()[:-7])
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"junk")
    code, out, _ = run_main("dump", torn, junk, "--format", "json", capsys=capsys)
    problems = [json.loads(line) for line in out.splitlines() if '"problem"' in line]
    # DumpLogSegments' "Found N invalid bytes at the end of" the torn segment, as a problem object.
    assert [p["problem"] for p in problems] == ["truncated_batch", "invalid_bytes", "not_a_segment"]
    cut = problems[0]["position"]  # where the torn batch starts: the valid batches end there
    assert problems[1]["position"] == cut
    assert problems[1]["message"] == f"Found {torn.stat().st_size - cut} invalid bytes at the end of {torn.name}"


# -- the real command, Spark start-up included -------------------------------------------------


@pytest.mark.spark
def test_the_command_in_a_subprocess_keeps_spark_noise_off_stderr(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "kafka_audit", "scan", str(PRODUCER_ERRORS), "--format", "json", "--master", "local[1]"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr == ""
    assert [f["check"] for f in json.loads(done.stdout)["findings"]] == [
        "epoch_bump", "new_epoch_nonzero_sequence", "out_of_order_sequence"
    ]
    assert list(tmp_path.iterdir()) == []  # nothing written to the working directory either


# -- Spark Connect and Parquet output ------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.parametrize("server", ["connect_url", "configured_connect_url"])
def test_scan_on_a_spark_connect_server_equals_the_in_process_audit(request, server, tmp_path):
    """``scan --remote sc://127.0.0.1:PORT`` (the command in a subprocess, a local Connect server
    with Spark's default settings and one with ``spark.default.parallelism`` set) gives the
    findings of the in-process audit, and its executors write the Parquet datasets."""
    connect_url = request.getfixturevalue(server)
    from kafka_audit.engines.local import audit_in_process
    from kafka_audit.log.log_dir import discover
    from tests.test_pipeline import options_of

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = tmp_path / "parquet"
    done = subprocess.run(
        [sys.executable, "-m", "kafka_audit", "scan", str(FAULTY), "--format", "json", "--remote", connect_url,
         "--output-parquet", str(out), *_option_args(FAULTY)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600, check=False,
    )
    assert done.returncode == 1, done.stderr
    reference = audit_in_process(discover([str(FAULTY)]), options_of(FAULTY))
    assert json.loads(done.stdout)["findings"] == [f.to_dict() for f in reference.findings]
    import pyarrow.dataset as ds

    assert ds.dataset(out / "batches", format="parquet").count_rows() == reference.summary["batches"]
    assert ds.dataset(out / "findings", format="parquet").count_rows() == len(reference.findings)


def _option_args(log_dir: Path) -> list[str]:
    given = expected(log_dir)["options"]
    args = []
    for topic in given.get("compacted_topics", ()):
        args += ["--compacted-topic", topic]
    for key in ("max_message_bytes", "timestamp_before_max_ms", "timestamp_after_max_ms", "reference_time",
                "transaction_timeout_ms", "producer_id_expiration_ms"):
        if given.get(key) is not None:
            args += ["--" + key.replace("_", "-"), str(given[key])]
    return args


def test_an_unreachable_connect_server_is_one_line_exit_2(capsys):
    from tests.support.connect_server import free_port

    code, out, err = run_main("scan", FAULTY, "--remote", f"sc://127.0.0.1:{free_port()}", capsys=capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "cannot reach the Spark Connect server at 127.0.0.1" in err


@pytest.mark.spark
def test_output_parquet_writes_the_three_datasets(cli, tmp_path):
    import pandas as pd

    result = cli("scan", PRODUCER_ERRORS, "--format", "json", "--quiet", "--output-parquet", tmp_path / "out")
    report = json.loads(result.stdout)
    findings = pd.read_parquet(tmp_path / "out" / "findings")
    assert sorted(findings["check"]) == sorted(f["check"] for f in report["findings"])
    assert len(pd.read_parquet(tmp_path / "out" / "batches")) == report["summary"]["batches"]
    assert list(pd.read_parquet(tmp_path / "out" / "producers").columns)[:3] == ["topic", "partition", "producer_id"]


def test_version_prints_the_package_version_and_exits_0():
    # SPEC section 1: `kafka-audit --version` and `python -m kafka_audit --version`.
    from importlib.metadata import version

    done = subprocess.run([sys.executable, "-m", "kafka_audit", "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"kafka-audit {version('kafka-audit')}"


def test_the_library_call_and_the_cli_take_the_same_scan_options(capsys):
    """kafka_audit.scan() and ``scan`` build their options in one place (audit.scan_options.scan_options):
    --segment-bytes, which the library call once lacked, gives the same findings both ways."""
    import kafka_audit

    healthy = str(FIXTURES / "healthy")
    code, out, _ = run_main("scan", healthy, "--engine", "local", "--quiet", "--format", "json",
                            "--segment-bytes", "400", "--fail-on", "never", capsys=capsys)
    assert code == 0
    from_cli = json.loads(out)["findings"]
    from_api = kafka_audit.scan(healthy, engine="local", segment_bytes=400).findings
    assert [f for f in from_cli if f["error_name"] == "RECORD_LIST_TOO_LARGE"]
    assert from_api == from_cli
