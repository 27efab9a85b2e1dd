"""``kafka-audit report``: the HTML postmortem document opened in a real browser (headless
Chromium, network cut off), its DOM checked against what ``scan``, ``producers`` and ``timeline``
print for the same input, its exit codes, and its limits on a large log."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kafka_audit.cli.app import app
from kafka_audit.report.html.tables import finding_key
from tests.conftest import FIXTURES
from tests.support.browser import find_chromium, open_page

BROWSER = find_chromium()
needs_browser = pytest.mark.skipif(
    BROWSER is None, reason="no Chromium on PATH (chromium, chromium-browser, google-chrome): CI installs Debian's in .ci/run"
)
# The screenshots are also kept here for a look after the run (not committed).
ARTIFACTS = Path(__file__).parent / "artifacts"
INCIDENT = ["--broker-log", str(FIXTURES / "broker-logs" / "producer-errors.server.log")]
_TXN_KINDS = {"transaction_begin", "transaction_commit", "transaction_abort"}


def _cli(*args) -> object:
    return CliRunner().invoke(app, [str(a) for a in args])


def _json(command: str, path: Path, *args) -> dict:
    done = _cli(command, path, "--engine", "local", "--quiet", "--format", "json", "--fail-on", "never", *args)
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def _report(path: Path, out: Path, *args) -> Path:
    done = _cli("report", path, "--engine", "local", "--quiet", "--output", out, *args)
    assert done.exit_code in (0, 1), done.output
    return out


def _chart_data(html: str) -> list[dict]:
    found = re.search(r'<script type="application/json" id="chart-data">(.*?)</script>', html, re.S)
    assert found, "no chart data in the document"
    return json.loads(found.group(1))


def _chart_doms(dom: str, count: int) -> list[str]:
    """The DOM of each chart's div, in page order (each ends where the next begins)."""
    starts = [dom.index(f'id="chart-{i}"') for i in range(count)]
    ends = starts[1:] + [dom.index('id="producers-section"')]
    return [dom[s:e] for s, e in zip(starts, ends)]


def _table_rows(dom: str, table_id: str) -> list[str]:
    body = re.search(rf'<table class="data" id="{table_id}">.*?<tbody>(.*?)</tbody>', dom, re.S)
    assert body, f"no table {table_id}"
    return re.findall(r"<tr[^>]*>", body.group(1))


def _open(name: str, path: Path, tmp: Path, *args) -> tuple[str, object]:
    page = _report(path, tmp / f"{name}.html", *args)
    run = open_page(BROWSER, page, tmp)
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(run.screenshot, ARTIFACTS / run.screenshot.name)
    return page.read_text(encoding="utf-8"), run


def _expected_marks(path: Path, *args) -> tuple[int, int]:
    """Markers and bars the charts must draw, from ``timeline`` and ``producers``: a marker per
    event with a time that is not a transaction boundary (or is a finding), a bar per epoch of
    every producer with times, a bar per transaction (committed, aborted or open)."""
    events = _json("timeline", path, *args)["events"]
    producers = _json("producers", path, *args)["producers"]
    marks = sum(1 for e in events if e["timestamp"] is not None and (e["kind"] not in _TXN_KINDS or e["check"]))
    timed = [p for p in producers if p["first_timestamp"] is not None]
    bars = sum(len(p["epochs"]) + sum(p["transactions"].values()) for p in timed)
    return marks, bars


@needs_browser
def test_incident_document_opens_offline_with_its_chart_and_findings(tmp_path):
    path = FIXTURES / "producer-errors"
    html, run = _open("producer-errors", path, tmp_path, *INCIDENT)
    assert run.page_requests == [], "the page asked the network for something"
    assert run.screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    charts = _chart_data(html)
    assert len(charts) == 1 and charts[0]["label"] == "test-8"
    (chart,) = _chart_doms(run.dom, 1)
    assert 'class="main-svg"' in chart, "Plotly drew no chart"
    assert len(re.findall(r'<g class="trace[ "]', chart)) == len(charts[0]["figure"]["data"])
    marks, bars = _expected_marks(path, *INCIDENT)
    assert (marks, bars) == (4, 2)  # the broker log line, the bump, two findings; epochs 2 and 3
    assert len(re.findall(r'<path class="point"', chart)) == marks
    assert len(re.findall(r'<g class="point"', chart)) == bars
    scanned = _json("scan", path, *INCIDENT)["findings"]
    rows = _table_rows(run.dom, "findings")
    keys = sorted(re.search(r'data-finding="([^"]*)"', row).group(1) for row in rows)
    assert keys == sorted(finding_key(f) for f in scanned)
    assert len(_table_rows(run.dom, "producers")) == len(_json("producers", path, *INCIDENT)["producers"])
    assert f"{len(rows)} of {len(rows)} rows shown" in run.dom, "the table script did not run"


@needs_browser
def test_transactions_and_every_partition_are_drawn(tmp_path):
    """``healthy``: transactional producers with commits and aborts over several partitions."""
    path = FIXTURES / "healthy"
    html, run = _open("healthy", path, tmp_path)
    assert run.page_requests == []
    charts = _chart_data(html)
    doms = _chart_doms(run.dom, len(charts))
    marks, bars = _expected_marks(path)
    assert sum(len(re.findall(r'<path class="point"', d)) for d in doms) == marks
    assert sum(len(re.findall(r'<g class="point"', d)) for d in doms) == bars
    for dom, chart in zip(doms, charts):
        assert len(re.findall(r'<g class="trace[ "]', dom)) == len(chart["figure"]["data"]), chart["label"]
    names = {t["name"] for c in charts for t in c["figure"]["data"]}
    assert {"transactions committed", "transactions aborted"} <= names


def test_browser_check_sees_a_page_that_asks_the_network(tmp_path):
    """The offline check can fail: a page loading a script from a CDN is caught."""
    if BROWSER is None:
        pytest.skip("no Chromium on PATH: CI installs Debian's in .ci/run")
    page = tmp_path / "online.html"
    page.write_text('<html><body><script src="https://cdn.plot.ly/plotly.min.js"></script></body></html>')
    assert open_page(BROWSER, page, tmp_path, screenshot=False).page_requests == ["https://cdn.plot.ly/plotly.min.js"]
