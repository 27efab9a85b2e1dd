"""Baselines end to end (SPEC sections 1-3): ``--write-baseline`` on a captured log with one
accepted anomaly, ``--baseline`` marks it known in every format and the gate passes; after a new
fault appears in the log, the new finding fails the gate and only it. A baseline that cannot be
read or parsed is exit 2 with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml

from kafka_audit.cli.app import main
from kafka_audit.report.baseline import BASELINE_VERSION, parse_baseline
from tests.support.writer import Faults, LogDirWriter, Producer, records


def capture(root: Path, *, new_fault: bool) -> Path:
    """A captured log: producer 7 on orders-0 skips sequences once (an out_of_order_sequence the
    team accepted); orders-1 is healthy until, with ``new_fault``, a batch with a broken CRC is
    appended to it."""
    with LogDirWriter(root) as log_dir:
        orders_0, orders_1 = log_dir.partition("orders", 0), log_dir.partition("orders", 1)
        accepted = Producer(7, epoch=0)
        accepted.send(orders_0, records(["a", "b"]))
        accepted.send(orders_0, records(["c"]), sequence=5)
        healthy = Producer(8, epoch=0)
        healthy.send(orders_1, records(["x", "y"]))
        healthy.send(orders_1, records(["z"]))
        if new_fault:
            healthy.send(orders_1, records(["torn"]), faults=Faults(bad_crc=True))
    return root


def scan(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as stop:
        main(["scan", *(str(a) for a in args), "--engine", "local", "--quiet"])
    out, err = capsys.readouterr()
    return stop.value.code, out, err


def test_baseline_loop_before_and_after_a_new_fault(tmp_path, capsys):
    before = capture(tmp_path / "ci-run-1" / "captured", new_fault=False)
    after = capture(tmp_path / "elsewhere" / "ci-run-2" / "captured", new_fault=True)
    baseline = tmp_path / "kafka-audit-baseline.json"

    # Today's log fails the gate; --write-baseline records it while reporting as usual.
    code, out, _ = scan(capsys, before, "--format", "json", "--write-baseline", baseline)
    assert code == 1
    today = json.loads(out)["findings"]
    assert [f["check"] for f in today] == ["out_of_order_sequence"]
    document = json.loads(baseline.read_text())
    assert document["kafka_audit_baseline"] == BASELINE_VERSION
    assert parse_baseline(baseline.read_text()) == {today[0]["fingerprint"]}

    # With the baseline the same log passes, its finding shown and marked.
    code, out, _ = scan(capsys, before, "--format", "json", "--baseline", baseline)
    assert code == 0
    report = json.loads(out)
    assert [(f["check"], f["baseline"]) for f in report["findings"]] == [("out_of_order_sequence", True)]
    assert report["summary"]["findings_baseline"] == 1

    # A new fault appears: it fails the gate, the known finding does not.
    code, out, _ = scan(capsys, after, "--format", "json", "--baseline", baseline)
    assert code == 1
    marked = sorted((f["check"], f["baseline"]) for f in json.loads(out)["findings"])
    assert marked == [("crc_mismatch", False), ("out_of_order_sequence", True)]
    assert scan(capsys, after, "--baseline", baseline, "--fail-on", "never")[0] == 0


def test_every_format_marks_known_findings(tmp_path, capsys):
    before = capture(tmp_path / "before", new_fault=False)
    after = capture(tmp_path / "after", new_fault=True)
    baseline = tmp_path / "baseline.json"
    scan(capsys, before, "--write-baseline", baseline, "--format", "json")

    def report(format: str) -> str:
        code, out, _ = scan(capsys, after, "--format", format, "--baseline", baseline)
        assert code == 1, format
        return out

    table = report("table")
    assert "1 known from the baseline" in table and table.count("(baseline)") == 1
    rows = {row.split(",")[0]: row for row in report("csv").splitlines()[1:]}
    assert rows["out_of_order_sequence"].split(",")[-1] == "true"  # JSON-style booleans (issue 31)
    assert rows["crc_mismatch"].split(",")[-1] == "false"
    ndjson = [json.loads(line) for line in report("ndjson").splitlines()]
    assert {f["check"]: f["baseline"] for f in ndjson} == {"out_of_order_sequence": True, "crc_mismatch": False}
    states = {r["ruleId"]: r["baselineState"] for r in json.loads(report("sarif"))["runs"][0]["results"]}
    assert states == {"out_of_order_sequence": "unchanged", "crc_mismatch": "new"}
    cases = {case.name: case for suite in JUnitXml.fromstring(report("junit")) for case in suite}
    failures = [r for r in cases["orders-0"].result if isinstance(r, Failure)]
    assert not failures and "out_of_order_sequence (baseline: known)" in cases["orders-0"].system_out
    assert "crc_mismatch" in next(r for r in cases["orders-1"].result if isinstance(r, Failure)).text
    lines = report("github").splitlines()
    assert any(line.startswith("::notice ") and "out_of_order_sequence" in line and "(baseline)" in line for line in lines)
    assert any(line.startswith("::error ") and "crc_mismatch" in line for line in lines)
    gitlab = {i["check_name"]: i for i in json.loads(report("gitlab"))}
    assert "(baseline)" in gitlab["out_of_order_sequence"]["description"]
    assert "(baseline)" not in gitlab["crc_mismatch"]["description"]
    # A known finding is GitLab's info; JUnit names the file as GitLab (and SARIF, GitHub) do.
    assert gitlab["out_of_order_sequence"]["severity"] == "info" and gitlab["crc_mismatch"]["severity"] != "info"
    assert f' in {gitlab["out_of_order_sequence"]["location"]["path"]} ' in cases["orders-0"].system_out


@pytest.mark.parametrize(
    "content, cause",
    [
        (None, "No such file or directory"),
        ("{not json", "not JSON"),
        ('{"findings": []}', "not a kafka-audit baseline"),
        ('{"kafka_audit_baseline": 99, "fingerprint": "kafkaAudit/v1", "findings": []}', "baseline version 99"),
        ('{"kafka_audit_baseline": 1, "fingerprint": "kafkaAudit/v0", "findings": []}', "recipe"),
        ('{"kafka_audit_baseline": 1, "fingerprint": "kafkaAudit/v1", "findings": [{"check": "x"}]}', "findings[0]"),
    ],
)
def test_a_baseline_that_cannot_be_read_is_exit_2_with_one_line(tmp_path, capsys, content, cause):
    log_dir = capture(tmp_path / "log", new_fault=False)
    baseline = tmp_path / "baseline.json"
    if content is not None:
        baseline.write_text(content)
    code, out, err = scan(capsys, log_dir, "--baseline", baseline)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"kafka-audit: --baseline {baseline}: ") and cause in err


def test_write_baseline_to_a_missing_folder_fails_before_the_audit(tmp_path, capsys):
    log_dir = capture(tmp_path / "log", new_fault=False)
    code, out, err = scan(capsys, log_dir, "--write-baseline", tmp_path / "no" / "such" / "b.json")
    assert code == 2 and out == "" and err.count("\n") == 1 and "--write-baseline" in err


def test_parquet_findings_carry_fingerprint_and_baseline(tmp_path, capsys):
    import pyarrow.parquet as pq

    before = capture(tmp_path / "before", new_fault=False)
    after = capture(tmp_path / "after", new_fault=True)
    baseline = tmp_path / "baseline.json"
    scan(capsys, before, "--write-baseline", baseline, "--format", "json")
    code, out, _ = scan(capsys, after, "--format", "json", "--baseline", baseline, "--output-parquet", tmp_path / "pq")
    assert code == 1
    expected = sorted((f["fingerprint"], f["baseline"]) for f in json.loads(out)["findings"])
    table = pq.read_table(tmp_path / "pq" / "findings")
    assert sorted(zip(table.column("fingerprint").to_pylist(), table.column("baseline").to_pylist())) == expected
    assert sorted(b for _, b in expected) == [False, True]


def test_the_python_api_takes_a_baseline(tmp_path, capsys):
    import kafka_audit

    before = capture(tmp_path / "before", new_fault=False)
    after = capture(tmp_path / "after", new_fault=True)
    baseline = tmp_path / "baseline.json"
    scan(capsys, before, "--write-baseline", baseline, "--format", "json")
    findings = kafka_audit.scan(after, engine="local", baseline=baseline).findings
    assert sorted((f["check"], f["baseline"]) for f in findings) == [("crc_mismatch", False), ("out_of_order_sequence", True)]
    (tmp_path / "broken.json").write_text("[]")
    with pytest.raises(ValueError, match="not a kafka-audit baseline"):
        kafka_audit.scan(after, engine="local", baseline=tmp_path / "broken.json")
