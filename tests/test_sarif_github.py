"""``scan --format sarif`` as GitHub code scanning ingests it (SPEC section 3): the SARIF of the
fixtures and of the bundled corpora passes the SARIF multitool's ``Sarif;Ghas`` rules with no error
and no warning, and holds what GitHub needs to show a result (``region.startLine``, a location for
every result, the driver's ``informationUri``, ``primaryLocationLineHash`` from the fingerprint)."""

from __future__ import annotations

import json

import pytest

from kafka_audit.cli.app import main
from kafka_audit.report.ci_formats import sarif
from tests.conftest import REPO
from tests.support.audit_run import BUNDLED_CORPORA, corpus_dir
from tests.support.sarif_multitool import ghas_problems, multitool
from tests.test_ci_formats import validate_sarif

FIXTURES = ("healthy", "faulty", "producer-errors", "transactions-v2")


def _sarif_files(tmp_path) -> list:
    paths = [REPO / "fixtures" / name for name in FIXTURES] + [corpus_dir(name) for name in BUNDLED_CORPORA]
    files = []
    for path in paths:
        target = tmp_path / f"{path.name}.sarif"
        with pytest.raises(SystemExit) as stop:
            main(["scan", str(path), "--engine", "local", "--quiet", "--format", "sarif", "--fail-on", "never",
                  "--output", str(target)])
        assert stop.value.code == 0
        files.append(target)
    return files


def test_the_sarif_of_fixtures_and_corpora_passes_githubs_rules(tmp_path):
    tool = multitool()  # skipped with the install line when absent, before any scan
    assert tool
    files = _sarif_files(tmp_path)
    results = 0
    for file in files:
        document = json.loads(file.read_text())
        validate_sarif(document)  # the OASIS schema still
        (run,) = document["runs"]
        assert run["tool"]["driver"]["informationUri"] == sarif.INFORMATION_URI
        for result in run["results"]:
            (location,) = result["locations"]
            assert location["physicalLocation"]["region"]["startLine"] >= 1
            assert result["partialFingerprints"]["primaryLocationLineHash"] == result["partialFingerprints"]["kafkaAudit/v1"]
        results += len(run["results"])
    assert results > 100
    assert ghas_problems(files, tmp_path / "validation.sarif") == []
