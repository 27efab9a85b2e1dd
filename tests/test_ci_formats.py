"""``scan --format sarif|junit|github|gitlab`` (SPEC section 3): each validated by its consumer's
schema or library: SARIF 2.1.0 by the OASIS JSON schema (tests/support/schemas), JUnit read back
by junitparser, GitLab Code Quality by the schema written from GitLab's documentation, GitHub
workflow commands parsed as the runner parses them. The same findings and exit codes as JSON."""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path
from urllib.parse import unquote

import jsonschema
import pytest
from junitparser import Failure, JUnitXml

from kafka_audit.cli.app import main
from kafka_audit.report.ci_formats import github, sarif
from kafka_audit.report.ci_formats.locations import Locator
from kafka_audit.rules.catalogue import CHECKS
from kafka_audit.rules.findings import make_finding
from tests.conftest import FIXTURES
from tests.test_cli import cli, shared_session  # noqa: F401  (the shared-session CLI fixture)

SCHEMAS = Path(__file__).parent / "support" / "schemas"
FAULTY = FIXTURES / "faulty"
PRODUCER_ERRORS = FIXTURES / "producer-errors"
BROKER_LOG = FIXTURES / "broker-logs" / "producer-errors.server.log"
FAULTY_ARGS = json.loads((FAULTY / "EXPECTED.json").read_text())["scan_args"]


def run(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as stop:
        main(["scan", *(str(a) for a in args), "--engine", "local", "--quiet"])
    out, err = capsys.readouterr()
    return stop.value.code, out, err


def json_findings(capsys, *args) -> list[dict]:
    code, out, _ = run(capsys, *args, "--format", "json")
    return json.loads(out)["findings"]


def validate_sarif(document: dict) -> None:
    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text())
    jsonschema.validators.validator_for(schema)(schema, format_checker=jsonschema.FormatChecker()).validate(document)


def validate_gitlab(document: list) -> None:
    schema = json.loads((SCHEMAS / "gitlab-codequality.json").read_text())
    jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker()).validate(document)


# -- SARIF ------------------------------------------------------------------------------------


def test_sarif_is_valid_and_holds_every_finding_with_its_batch(capsys):
    findings = json_findings(capsys, FAULTY, *FAULTY_ARGS)
    code, out, _ = run(capsys, FAULTY, *FAULTY_ARGS, "--format", "sarif")
    assert code == 1
    document = json.loads(out)
    validate_sarif(document)
    assert document["version"] == "2.1.0"
    (run_,) = document["runs"]
    rules = run_["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(CHECKS)
    levels = {"error": "error", "warning": "warning", "info": "note"}
    for rule in rules:
        check = CHECKS[rule["id"]]
        assert rule["defaultConfiguration"]["level"] == levels[check.severity]
        if rule["id"] != "broker_rejection":  # its error and outcome are the log line's
            assert f"Client outcome: {check.client_outcome}" in rule["help"]["text"]
        if check.error:
            assert check.error.name in rule["help"]["text"]
    results = run_["results"]
    assert len(results) == len(findings)
    for result, finding in zip(results, findings):
        assert result["ruleId"] == finding["check"] and rules[result["ruleIndex"]]["id"] == finding["check"]
        assert result["level"] == levels[finding["severity"]]
        assert result["message"]["text"] == finding["message"]
        assert result["partialFingerprints"] == {
            "kafkaAudit/v1": finding["fingerprint"], "primaryLocationLineHash": finding["fingerprint"]
        }
        assert "baselineState" not in result
        if finding["segment"] is None:
            continue
        physical = result["locations"][0]["physicalLocation"]
        # The segment under the PATH that found it, as the job's folder sees it (CI tools resolve
        # paths against the project).
        assert Path(unquote(physical["artifactLocation"]["uri"])).absolute() == FAULTY / finding["segment"]
        if finding["position"] is not None:
            assert physical["region"]["byteOffset"] == finding["position"]


def test_sarif_region_is_the_batch_a_dump_shows(capsys):
    code, out, _ = run(capsys, PRODUCER_ERRORS, "--format", "sarif")
    results = json.loads(out)["runs"][0]["results"]
    region = results[0]["locations"][0]["physicalLocation"]["region"]
    segment = Path(unquote(results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]))
    with pytest.raises(SystemExit) as stop:
        main(["dump", str(segment), "--format", "json"])
    main_code = stop.value.code
    batches = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert main_code in (0, None)
    (batch,) = [b for b in batches if b["position"] == region["byteOffset"]]
    assert region["byteLength"] == batch["size"]


def test_sarif_past_githubs_result_limit_is_cut_with_a_note(monkeypatch, capsys):
    """Over the results GitHub keeps per run, the most severe stay and runs[].properties says
    how many were left out; the file stays valid."""
    monkeypatch.setattr(sarif, "MAX_RESULTS", 5)
    findings = json_findings(capsys, FAULTY, *FAULTY_ARGS)
    code, out, _ = run(capsys, FAULTY, *FAULTY_ARGS, "--format", "sarif")
    document = json.loads(out)
    validate_sarif(document)
    run_ = document["runs"][0]
    assert len(run_["results"]) == 5
    assert all(r["level"] == "error" for r in run_["results"])
    assert run_["properties"]["truncated"]["results_total"] == len(findings)
    assert run_["properties"]["truncated"]["results_written"] == 5
    assert len(gzip.compress(out.encode())) < 10_000_000


# -- JUnit ------------------------------------------------------------------------------------


def test_junit_has_a_suite_per_topic_a_case_per_partition_and_failures_at_fail_on(capsys, tmp_path):
    findings = json_findings(capsys, FAULTY, *FAULTY_ARGS)
    target = tmp_path / "report.xml"
    code, _, _ = run(capsys, FAULTY, *FAULTY_ARGS, "--format", "junit", "--fail-on", "warning", "--output", target)
    assert code == 1
    document = JUnitXml.fromfile(str(target))
    suites = {suite.name: suite for suite in document}
    topics = {f["topic"] for f in findings if f["topic"] is not None}
    assert topics <= set(suites)
    failing = {(f["topic"], f["partition"]) for f in findings if f["severity"] in ("error", "warning") and f["topic"]}
    seen_failing = set()
    for suite in document:
        for case in suite:
            failures = [r for r in case.result if isinstance(r, Failure)]
            listed = failures[0].text.count("[fingerprint ") if failures else 0
            key = next(((f["topic"], f["partition"]) for f in findings if f["topic"] == suite.name
                        and case.name == f"{f['topic']}-{f['partition']}"), None)
            expected = [f for f in findings if key and (f["topic"], f["partition"]) == key
                        and f["severity"] in ("error", "warning")]
            assert listed == len(expected), case.name
            if failures:
                seen_failing.add(key)
                assert all(f["fingerprint"] in failures[0].text for f in expected)
    assert seen_failing == failing


def test_junit_lists_every_partition_scanned_even_without_findings(capsys):
    code, out, _ = run(capsys, FIXTURES / "healthy", "--format", "junit")
    assert code == 0
    document = JUnitXml.fromstring(out)
    cases = [case for suite in document for case in suite]
    assert cases and all(case.is_passed for case in cases)
    assert document.tests == len(cases) and document.failures == 0


# -- GitHub -----------------------------------------------------------------------------------

_COMMAND = re.compile(r"^::(error|warning|notice) (?P<props>[^:]*)::(?P<data>.*)$")


def _unescape(text: str) -> str:
    return text.replace("%0A", "\n").replace("%0D", "\r").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def test_github_commands_are_capped_per_kind_with_a_count_of_the_rest(capsys, tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step output\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    findings = json_findings(capsys, FAULTY, *FAULTY_ARGS)
    code, out, _ = run(capsys, FAULTY, *FAULTY_ARGS, "--format", "github")
    assert code == 1
    commands = [m for m in map(_COMMAND.match, out.splitlines()) if m]
    kinds = [m.group(1) for m in commands]
    for kind in ("error", "warning"):
        assert kinds.count(kind) <= github.ANNOTATIONS_PER_KIND
    assert kinds.count("error") == min(10, sum(f["severity"] == "error" for f in findings))
    rest = len(findings) - (len(commands) - 1)
    assert rest > 0 and f"{rest:,} more findings not annotated" in _unescape(commands[-1].group("data"))
    for match in commands[:-1]:
        props = dict(p.split("=", 1) for p in match.group("props").split(","))
        assert set(props) <= {"file", "line", "title"}
        title = _unescape(props["title"])
        assert any(title.startswith(f["check"]) and _unescape(match.group("data")) == f["message"] for f in findings)
    text = summary.read_text()
    assert text.startswith("earlier step output\n### kafka-audit scan")
    assert text.count("\n| ") == len(findings) + 1  # header row and one row per finding


def test_github_escapes_data_and_properties():
    finding = make_finding("skipped_file", "50% done\r\nnext: a, b", segment="odd,dir:x/notes 100%.txt")
    kind, line = github.command(finding, Locator([]))
    assert kind == "notice"
    assert line.endswith("::50%25 done%0D%0Anext: a, b")
    assert "file=odd%2Cdir%3Ax/notes 100%25.txt" in line
    assert "\n" not in line


def test_github_step_summary_stays_within_its_budget(capsys, tmp_path):
    code, out, _ = run(capsys, FAULTY, *FAULTY_ARGS, "--format", "json")
    from kafka_audit.audit.results import ScanResult
    from kafka_audit.rules.findings import Finding

    report = json.loads(out)
    result = ScanResult([Finding(**f) for f in report["findings"]], report["summary"])
    full = github.step_summary(result, "error", github.STEP_SUMMARY_LIMIT)
    budget = len(full.encode()) // 2
    cut = github.step_summary(result, "error", budget)
    assert len(cut.encode()) <= budget
    assert "more findings not shown" in cut
    assert github.step_summary(result, "error", 10) == ""


# -- GitLab -----------------------------------------------------------------------------------


def test_gitlab_code_quality_is_valid_with_the_same_findings(capsys):
    findings = json_findings(capsys, PRODUCER_ERRORS, "--broker-log", BROKER_LOG)
    code, out, _ = run(capsys, PRODUCER_ERRORS, "--broker-log", BROKER_LOG, "--format", "gitlab")
    assert code == 1
    issues = json.loads(out)
    validate_gitlab(issues)
    assert [i["fingerprint"] for i in issues] == [f["fingerprint"] for f in findings]
    assert [i["check_name"] for i in issues] == [f["check"] for f in findings]
    severities = {"error": {"major", "critical"}, "warning": {"minor"}, "info": {"info"}}
    assert all(i["severity"] in severities[f["severity"]] for i, f in zip(issues, findings))
    rejection = next(i for i in issues if i["check_name"] == "broker_rejection")
    # An absolute path given on the command line, relative to the job's folder (GitLab's
    # location.path is relative to the project; CI jobs run in it).
    assert rejection["location"] == {"path": os.path.relpath(BROKER_LOG), "lines": {"begin": 1}}


# -- the same exit codes, and the default engine ------------------------------------------------


@pytest.mark.parametrize("fail_on, code", [("error", 1), ("warning", 1), ("never", 0)])
def test_ci_formats_exit_as_json_does(capsys, fail_on, code):
    for format in ("json", "sarif", "junit", "github", "gitlab"):
        assert run(capsys, PRODUCER_ERRORS, "--format", format, "--fail-on", fail_on)[0] == code


def test_producers_and_timeline_refuse_ci_formats(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["producers", str(PRODUCER_ERRORS), "--format", "sarif", "--engine", "local"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and "sarif" in err


@pytest.mark.spark
def test_sarif_on_the_spark_engine_matches_the_local_engine(cli, capsys):
    done = cli("scan", FAULTY, *FAULTY_ARGS, "--format", "sarif", "--quiet")
    assert done.exit_code == 1
    on_spark = json.loads(done.stdout)
    validate_sarif(on_spark)
    code, out, _ = run(capsys, FAULTY, *FAULTY_ARGS, "--format", "sarif")
    assert on_spark["runs"][0]["results"] == json.loads(out)["runs"][0]["results"]


def test_paths_are_the_files_as_the_job_folder_sees_them(capsys, tmp_path, monkeypatch):
    """A PATH given relative to the job's folder, or absolute, gives paths relative to that
    folder, where GitHub and GitLab look for the files."""
    monkeypatch.chdir(PRODUCER_ERRORS.parent)
    for given in ("producer-errors", str(PRODUCER_ERRORS)):
        code, out, _ = run(capsys, given, "--format", "gitlab")
        paths = {issue["location"]["path"] for issue in json.loads(out)}
        assert paths == {"producer-errors/test-8/00000000000000000104.log"}


def test_every_sarif_result_has_a_location_github_can_take():
    """GitHub code scanning takes no result without a location: a finding outside any partition
    and file points at the PATH scanned."""
    from kafka_audit.audit.results import ScanResult
    from kafka_audit.rules.findings import assign_fingerprints

    findings = [make_finding("skipped_file", "not part of a Kafka log")]
    assign_fingerprints(findings)
    document = json.loads(sarif.to_sarif(ScanResult(findings, {"paths": ["captured-logs"]}), "0"))
    validate_sarif(document)
    (result,) = document["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "captured-logs"
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": sarif.BINARY_START_LINE}
    # A scan that names no PATH (the Python API on a given list): the current folder.
    document = json.loads(sarif.to_sarif(ScanResult(findings, {"paths": []}), "0"))
    validate_sarif(document)
    (result,) = document["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "."
