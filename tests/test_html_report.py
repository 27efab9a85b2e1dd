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
from kafka_audit.report.html.charts import Limits
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


# -- a large log: the limits aggregate, the cap holds (no browser) ------------------------------

def _busy_log(root: Path) -> Path:
    """Two partitions: ``busy-0`` with 12 transactional producers committing and aborting in turn,
    producer 5000 skipping a sequence every 4th batch (out_of_order_sequence errors); ``quiet-0``
    with one idempotent producer."""
    from tests.support.writer import LogDirWriter, Producer, records

    with LogDirWriter(root) as out:
        busy = out.partition("busy", 0)
        producers = [Producer(5000 + n, transactional=True) for n in range(12)]
        for turn in range(96):
            producer = producers[turn % len(producers)]
            producer.begin()
            skip = producer.producer_id == 5000 and turn % 4 == 0 and turn > 0
            sequence = producer.next_sequence(busy) + 1 if skip else None
            producer.send(busy, records([f"v{turn}-{i}" for i in range(3)]), sequence=sequence)
            if skip:
                producer.sequences[id(busy)] += 1
            (producer.abort if turn % 5 == 0 else producer.commit)()
        quiet = out.partition("quiet", 0)
        single = Producer(7000)
        for turn in range(4):
            single.send(quiet, records([f"q{turn}"]))
    return root


def _render(root: Path, limits):
    from kafka_audit.audit.scan_options import scan_options
    from kafka_audit.engines.local import audit_in_process
    from kafka_audit.log.log_dir import discover
    from kafka_audit.report.html import render_report
    from kafka_audit.report.views import ReportFilter

    result = audit_in_process(discover([str(root)]), scan_options(timeline=True))
    return render_report(result, ReportFilter(), limits=limits)


def test_a_large_log_is_aggregated_past_the_shown_limits(tmp_path):
    from kafka_audit.report.html.charts import Limits

    root = _busy_log(tmp_path / "busy")
    findings = _json("scan", root)["findings"]
    producers = _json("producers", root)["producers"]
    busy = [p for p in producers if p["topic"] == "busy"]
    assert len(findings) > 2 and len(busy) == 12
    page, stats = _render(root, Limits(findings_rows=2, producer_rows=4, charts=1, lanes=3, points=5))
    assert len(_table_rows(page, "findings")) == 2
    assert f"{len(findings) - 2:,} more findings not shown (of {len(findings):,}" in page
    assert len(_table_rows(page, "producers")) == 4
    assert f"{len(producers) - 4:,} more producers not shown" in page
    (chart,) = _chart_data(page)
    assert chart["label"] == "busy-0" and "1 not charted (past the limit): quiet-0" in page
    traces = {t["name"]: t for t in chart["figure"]["data"]}
    lanes = {y for t in traces.values() for y in t["y"]}
    assert f"{len(busy) - 3} other producers" in lanes
    assert len([lane for lane in lanes if lane.startswith("pid ")]) == 3
    (binned,) = [t for name, t in traces.items() if "binned" in name]
    counted = sum(int(re.match(r"([\d,]+) transactions", h).group(1).replace(",", "")) for h in binned["hovertext"])
    assert counted == sum(sum(p["transactions"].values()) for p in busy)
    drawn = sum(len(t["x"]) for t in traces.values() if t["type"] == "scatter")
    marks, _ = _expected_marks(root, "--topic", "busy")
    assert drawn == 5 and f"{marks - 5:,} events not drawn" in chart["figure"]["layout"]["title"]["text"]


def test_the_document_stays_under_its_cap(tmp_path, monkeypatch):
    """Past the cap the document is written again with every limit halved until it fits."""
    import kafka_audit.report.html as html_report
    from kafka_audit.report.html.charts import Limits

    root = _busy_log(tmp_path / "busy")
    _, full = _render(root, Limits())
    _, small = _render(root, Limits(findings_rows=3, producer_rows=3, charts=1, lanes=1, points=10))
    cap = small.bytes + 100
    monkeypatch.setattr(html_report, "MAX_REPORT_BYTES", cap)
    page, stats = _render(root, Limits())
    assert stats.bytes == len(page.encode()) <= cap < full.bytes
    assert stats.limits != Limits()


def test_report_exit_codes_are_scans(tmp_path, monkeypatch):
    path = FIXTURES / "producer-errors"
    monkeypatch.chdir(tmp_path)
    assert _cli("report", path, "--engine", "local", "--quiet").exit_code == 1
    assert (tmp_path / "kafka-audit-report.html").is_file()
    assert _cli("report", path, "--engine", "local", "--quiet", "--fail-on", "never").exit_code == 0
    missing = _cli("report", tmp_path / "nowhere", "--engine", "local")
    assert missing.exit_code == 2 and "no such file or directory" in missing.output
    no_folder = _cli("report", path, "--engine", "local", "--output", tmp_path / "no" / "r.html")
    assert no_folder.exit_code == 2 and "does not exist" in no_folder.output
    assert _cli("report", path, "--engine", "local", "--redact-key", "k").exit_code == 2
    assert _cli("report", path, "--format", "json").exit_code == 2  # no --format: the document is HTML
    baseline = tmp_path / "baseline.json"
    assert _cli("scan", path, "--engine", "local", "--quiet", "--write-baseline", baseline).exit_code == 1
    known = _cli("report", path, "--engine", "local", "--quiet", "--baseline", baseline, "--output", tmp_path / "k.html")
    assert known.exit_code == 0, known.output  # every finding is known: none fails the gate
    rows = _table_rows((tmp_path / "k.html").read_text(encoding="utf-8"), "findings")
    marked = (tmp_path / "k.html").read_text(encoding="utf-8").count("(known: baseline)")
    assert marked == len(rows) == len(_json("scan", path)["findings"])


def test_the_document_refers_to_nothing_outside_itself(tmp_path):
    page = _report(FIXTURES / "healthy", tmp_path / "r.html").read_text(encoding="utf-8")
    assert not re.search(r"<(script|img|link|iframe)[^>]+(src|href)=", page, re.I)
    assert not re.search(r"url\(\s*['\"]?https?:", page, re.I)


# What a reader does: sort by offset (twice: descending), then keep the errors only.
_READER = """<script>
(function () {
  var table = document.getElementById("findings");
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var col = heads.findIndex(function (th) { return th.textContent === "offset"; });
  heads[col].click(); heads[col].click();
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  var order = rows.map(function (r) { return r.cells[col].textContent; });
  var severity = document.querySelector('.filters[data-table="findings"] .severity-filter');
  severity.value = "error";
  severity.dispatchEvent(new Event("change"));
  var shown = rows.filter(function (r) { return r.style.display !== "none"; })
    .map(function (r) { return r.getAttribute("data-severity"); });
  document.body.setAttribute("data-reader", JSON.stringify({order: order, shown: shown}));
})();
</script></body>"""


@needs_browser
def test_the_findings_sort_and_filter_in_the_browser(tmp_path):
    path = FIXTURES / "faulty"
    args = _faulty_args()
    page = _report(path, tmp_path / "faulty.html", *args)
    page.write_text(page.read_text(encoding="utf-8").replace("</body>", _READER, 1), encoding="utf-8")
    run = open_page(BROWSER, page, tmp_path, screenshot=False)
    found = re.search(r'data-reader="([^"]*)"', run.dom)
    assert found, "the reader's script did not run"
    seen = json.loads(found.group(1).replace("&quot;", '"'))
    findings = _json("scan", path, *args)["findings"]
    offsets = sorted((f["offset"] for f in findings), key=lambda o: -1 if o is None else o, reverse=True)
    assert seen["order"] == ["" if o is None else str(o) for o in offsets]
    assert seen["shown"] == ["error"] * sum(1 for f in findings if f["severity"] == "error")


def _faulty_args() -> list[str]:
    """The scan options ``fixtures/faulty/EXPECTED.json`` names."""
    return json.loads((FIXTURES / "faulty" / "EXPECTED.json").read_text())["scan_args"]


FAULTY = FIXTURES / "faulty"
FAULTY_ARGS = json.loads((FAULTY / "EXPECTED.json").read_text())["scan_args"]
# fixtures/faulty/EXPECTED.json's --reference-time (ms): the hanging transaction is measured against it.
FAULTY_REFERENCE_MS = 1_700_003_600_000
_UNREADABLE = {"crc_mismatch", "truncated_batch", "invalid_batch_size", "unknown_magic", "decompression_failed"}


def _text(dom_part: str) -> str:
    """An HTML fragment's text: tags and ``<wbr>`` dropped, entities read, spaces folded."""
    from html import unescape

    return " ".join(unescape(re.sub(r"<[^>]+>", "", dom_part)).split())


@needs_browser
def test_the_story_opens_the_document_and_tells_the_findings(tmp_path):
    """The account's sentences carry the scan's numbers: the unreadable batches, the hanging
    transaction's LSO, first and last time; the headlines rank by consequence with remedies; the
    tables list errors, then warnings, then info; every partition with an error or warning that
    has a time is charted; the hanging transaction is drawn to the reference time."""
    html, run = _open("faulty", FAULTY, tmp_path, *FAULTY_ARGS)
    scanned = _json("scan", FAULTY, *FAULTY_ARGS)["findings"]
    dom = run.dom
    assert dom.index('id="story"') < dom.index('id="summary"') < dom.index('id="findings-section"')
    story = _text(dom[dom.index('id="story"'):dom.index('id="summary"')])
    unreadable = [f for f in scanned if f["check"] in _UNREADABLE]
    assert f"{len(unreadable)} batches holding at least" in story
    (hanging,) = [f for f in scanned if f["check"] == "hanging_transaction"]
    d = hanging["details"]
    assert (f"Every read_committed consumer of hanging-transaction-0 is blocked behind the open transaction of producer "
            f"{hanging['producer_id']} since offset {d['first_offset']}: it pins the last stable offset at "
            f"{d['last_stable_offset']} while the log ends at {d['log_end_offset']} ({d['records_blocked']} offsets held back).") in story
    times = sorted(f["time"] for f in scanned if f["severity"] != "info" and f["time"])
    shown = [t.replace("T", " ").removesuffix("Z") + " UTC" for t in (times[0], times[-1])]
    assert f"It happened between {shown[0]} and {shown[1]}." in story
    classes = [int(c) for c in re.findall(r'<li class="headline[^"]*" data-class="(\d)"', dom)]
    # Ranked by consequence; fixtures/faulty has unreadable batches (1), a hanging transaction (2)
    # and failing producers (3), each with a headline.
    assert 3 <= len(classes) <= 7 and classes == sorted(classes) and {1, 2, 3} <= set(classes), classes
    assert "kafka-transactions.sh --bootstrap-server &lt;broker&gt; abort --topic hanging-transaction --partition 0 --start-offset 3" in dom
    severities = re.findall(r'data-severity="(\w+)"', dom[dom.index('id="findings"'):dom.index('id="timelines"')])
    rank = {"error": 0, "warning": 1, "info": 2}
    assert [rank[s] for s in severities] == sorted(rank[s] for s in severities) and len(severities) == len(scanned)
    charts = _chart_data(html)
    labels = [c["label"] for c in charts]
    serious = {f"{f['topic']}-{f['partition']}" for f in scanned if f["severity"] != "info" and f["timestamp"] is not None}
    # Charted first, up to the stated limit: either all of them, or the limit holds only them.
    assert serious <= set(labels) or (len(labels) == Limits().charts and set(labels) <= serious), serious - set(labels)
    assert all(label in serious for label in labels[: len(serious)])
    assert f"{len(charts)} partitions charted, at most {Limits().charts}" in dom
    (chart,) = [c for c in charts if c["label"] == "hanging-transaction-0"]
    (bar,) = [t for t in chart["figure"]["data"] if t.get("name") == "transaction hanging (LSO pinned)"]
    from datetime import datetime

    start = datetime.fromisoformat(bar["base"][0].replace("Z", "+00:00")).timestamp() * 1000
    assert round(start) + bar["x"][0] == FAULTY_REFERENCE_MS
    assert f"hanging: LSO {d['last_stable_offset']}" in dom


@needs_browser
def test_the_printed_document_keeps_every_column(tmp_path):
    """Printed by Chromium (Letter, its default) and read back by pdftotext: every column header
    of the findings and producers tables is there (no clipped column)."""
    from tests.support.browser import pdf_text, print_to_pdf

    if shutil.which("pdftotext") is None:
        pytest.skip("no pdftotext (Debian's poppler-utils: CI installs it in .ci/run)")
    page = _report(FIXTURES / "producer-errors", tmp_path / "printed.html", *INCIDENT)
    headers = [_text(h) for h in re.findall(r'<th data-col="\d+"[^>]*>(.*?)</th>', page.read_text(encoding="utf-8"))]
    assert len(headers) >= 20  # the findings' columns and the producers'
    text = pdf_text(print_to_pdf(BROWSER, page, tmp_path))
    words = set(" ".join(text.split()).split(" "))
    for header in headers:
        for word in header.replace(":", "").split():
            assert word in words or word + ":" in words, f"column {header!r} is not in the printed document"
