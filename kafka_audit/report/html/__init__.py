"""``kafka-audit report``: one self-contained HTML postmortem document (SPEC section 3).

The page holds the summary, the findings table (sortable, filterable, with remedies and culprit
records), a swim-lane timeline chart per partition and the producers table. A partial plotly.js
bundle (scatter and bar traces, :data:`PLOTLY_BUNDLE`) is embedded once; the page's own script (``report.js``) and
style (``report.css``) are inlined from this package, so opening the file makes no request.

Large inputs: tables and charts stop at :class:`~kafka_audit.report.html.charts.Limits` and
count the rest; when the document would still exceed :data:`MAX_REPORT_BYTES` it is written
again with every limit halved, so the file stays under that size (the Plotly bundle is 1.2 MB;
the page at the smallest limits, one row, chart, lane and marker each, is far below it).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from kafka_audit.audit.results import ScanResult
from kafka_audit.report.html.charts import Charted, Limits, partition_charts
from kafka_audit.report.html.evidence import culprit_records
from kafka_audit.report.html.tables import findings_table, producers_table, story_section, summary_table
from kafka_audit.report.redact import Redactor
from kafka_audit.report.safe_text import html_text as escape  # data never acts (SPEC section 1)
from kafka_audit.report.safe_text import surrogates_shown
from kafka_audit.report.story import by_severity, tell
from kafka_audit.report.views import ReportFilter, timeline
from kafka_audit.rules.findings import Finding

# The most a report file may weigh: plotly.js (1.2 MB) and at most 14.8 MiB of tables and charts.
MAX_REPORT_BYTES = 16 << 20
# The partial Plotly bundle (npm plotly.js-basic-dist-min, MIT: plotly-basic.LICENSE.txt beside it):
# the scatter and bar traces the charts use, 1.2 MB instead of the full library's 4.6 MiB.
PLOTLY_BUNDLE = "plotly-basic.min.js"
_HERE = Path(__file__).parent
_MARKER = re.compile(r"__[A-Z_]+__")


@dataclass(frozen=True, slots=True)
class ReportStats:
    """What was written: the file's size, the limits it was written with, charts drawn."""

    bytes: int
    limits: Limits
    charts: int


def render_report(
    result: ScanResult,
    keep: ReportFilter,
    *,
    segment_paths: dict[str, str] | None = None,
    redact: Redactor | None = None,
    limits: Limits = Limits(),
    title: str = "kafka-audit report",
) -> tuple[str, ReportStats]:
    """The document's text for ``result`` (already filtered by ``keep``) and its stats."""
    events = timeline(result, keep)
    ordered = by_severity(result.findings)  # errors, then warnings, then info (machine formats: SPEC order)
    evidence = culprit_records(ordered[: limits.findings_rows], segment_paths or {}, redact)
    plotly_js = (_HERE / PLOTLY_BUNDLE).read_text(encoding="utf-8")
    while True:  # bounded: the limits halve down to 1 each
        charted = partition_charts(result.producers, events, limits, result.findings)
        page = surrogates_shown(_page(result, ordered, charted, evidence, limits, plotly_js, redact is not None, title))
        size = len(page.encode("utf-8"))
        if size <= MAX_REPORT_BYTES or limits.halved() == limits:
            return page, ReportStats(size, limits, len(charted.charts))
        limits = limits.halved()


def write_report(path: Path, result: ScanResult, keep: ReportFilter, **options) -> ReportStats:
    """Write the document to ``path`` (:func:`render_report`'s options)."""
    page, stats = render_report(result, keep, **options)
    path.write_text(page, encoding="utf-8", errors="backslashreplace")
    return stats


def _page(result: ScanResult, ordered: list[Finding], charted: Charted, evidence,
          limits: Limits, plotly_js: str, redacted: bool, title: str) -> str:
    from kafka_audit import __version__

    checks = sorted({f.check for f in result.findings})
    parts = {
        "__TITLE__": escape(title),
        "__VERSION__": escape(__version__),
        "__WRITTEN__": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "__REDACTED__": "Record keys, values and header values are redacted (length and keyed hash)." if redacted else "",
        "__SUMMARY__": summary_table(result.summary, result.notes),
        "__FINDING_COUNT__": f"{len(result.findings):,}",
        "__CHECK_OPTIONS__": "".join(f"<option>{escape(c)}</option>" for c in checks),
        "__STORY__": story_section(tell(result.findings, result.summary)),
        "__FINDINGS__": findings_table(ordered, evidence, limits.findings_rows),
        "__CHARTS_NOTE__": _charts_note(charted, limits, result.summary.get("partitions", 0)),
        "__CHARTS__": "".join(f'<div class="chart{" small" if c.small else ""}" id="chart-{i}" data-traces="{c.traces}" '
                              f'data-partition="{escape(c.label)}"></div>' for i, c in enumerate(charted.charts)),
        "__PRODUCER_COUNT__": f"{len(result.producers):,}",
        "__PRODUCERS__": producers_table(result.producers, limits.producer_rows),
        "__CHART_DATA__": _script_json([{"label": c.label, "figure": c.figure} for c in charted.charts]),
        "__CSS__": (_HERE / "report.css").read_text(encoding="utf-8"),
        "__REPORT_JS__": (_HERE / "report.js").read_text(encoding="utf-8"),
    }
    parts["__PLOTLY_JS__"] = plotly_js
    template = (_HERE / "template.html").read_text(encoding="utf-8")
    # One pass: text put in place is never searched for markers again.
    return _MARKER.sub(lambda m: parts[m.group(0)], template)


# The partitions a note names before it says how many more.
_NAMES_SHOWN = 20


def _charts_note(charted: Charted, limits: Limits, partitions: int) -> str:
    """The stated limit and what the charts leave out: partitions past it, those with an error or
    warning finding but nothing with a time to draw, and those with nothing at all (no producer
    id, no event with a time: plain producers' data only)."""
    charts, uncharted, blank = charted.charts, charted.uncharted, charted.blank
    notes = [f"{_count(len(charts), 'partition')} charted, at most {limits.charts:,}: those with error findings "
             "first, then warnings, then the busiest."]
    if uncharted:
        listed = ", ".join(uncharted[:_NAMES_SHOWN]) + (f" and {len(uncharted) - _NAMES_SHOWN:,} more" if len(uncharted) > _NAMES_SHOWN else "")
        notes.append(f"{len(uncharted):,} not charted (past the limit): {escape(listed)}. "
                     "Their findings and producers are in the tables.")
    if blank:
        listed = ", ".join(blank[:_NAMES_SHOWN]) + (f" and {len(blank) - _NAMES_SHOWN:,} more" if len(blank) > _NAMES_SHOWN else "")
        notes.append(f"{len(blank):,} with an error or warning finding but no time to place it on: {escape(listed)}. "
                     "Their findings are in the table above.")
    empty = partitions - len(charts) - len(uncharted) - len(blank)
    if empty > 0:
        notes.append(f"{empty:,} of {_count(partitions, 'partition')} without a producer id or an event with a time: "
                     "nothing to chart.")
    return "".join(f'<p class="note">{note}</p>' for note in notes)


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" + ("" if number == 1 else "s")


def _script_json(data) -> str:
    """JSON safe inside a script element: no ``</`` or ``<!--`` can end or comment it."""
    from plotly.utils import PlotlyJSONEncoder

    return json.dumps(data, cls=PlotlyJSONEncoder, separators=(",", ":")).replace("<", "\\u003c")
