"""``scan --format github``: GitHub Actions workflow commands (``::error``, ``::warning``,
``::notice``) that annotate the run and the pull request, and the Markdown summary appended to
``$GITHUB_STEP_SUMMARY`` (SPEC section 3).

GitHub shows 10 error and 10 warning annotations per step and 50 per job (actions/toolkit,
docs/problem-matchers.md "Limitations"); a step summary holds at most 1 MiB (docs.github.com,
"Workflow commands for GitHub Actions", adding a job summary). The commands are capped at
:data:`ANNOTATIONS_PER_KIND` of each kind, most severe first, and one notice counts the findings
not annotated; the summary is cut to the bytes left in the step's summary file. Known findings
(``--baseline``) are annotated as notices: they never fail the gate.

Escaping follows the runner (actions/toolkit ``command.ts``): ``%``, CR and LF in the message;
also ``:`` and ``,`` in properties.
"""

from __future__ import annotations

from collections import Counter

from kafka_audit.audit.results import ScanResult
from kafka_audit.report.ci_formats.locations import Locator, title
from kafka_audit.report.safe_text import escape_controls
from kafka_audit.rules.catalogue import SEVERITIES, Severity
from kafka_audit.rules.findings import Finding, partition_label

ANNOTATIONS_PER_KIND = 10
STEP_SUMMARY_LIMIT = 1024 * 1024
_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """A workflow command's message (the runner's ``escapeData``), its control characters shown
    escaped (``\\x1b``: a terminal or log viewer would obey them)."""
    return escape_controls(text, line_breaks=True).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (the runner's ``escapeProperty``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def kind_of(finding: Finding) -> str:
    """The annotation a finding makes: by severity; a known (baseline) finding is a notice."""
    return "notice" if finding.baseline else _COMMAND[Severity(finding.severity)]


def command(finding: Finding, locator: Locator) -> tuple[str, str]:
    """The finding's annotation kind and its workflow command line."""
    kind = kind_of(finding)
    properties = []
    place = locator.where(finding)
    if place is not None:
        properties.append(f"file={escape_property(place.path)}")
        if place.line is not None:
            properties.append(f"line={place.line}")
    properties.append(f"title={escape_property(title(finding))}")
    return kind, f"::{kind} {','.join(properties)}::{escape_data(finding.message or finding.check)}"


def to_github(result: ScanResult) -> str:
    """The workflow commands of a scan: at most :data:`ANNOTATIONS_PER_KIND` of each kind, most
    severe first (then SPEC order), and a notice counting the rest."""
    shown: Counter[str] = Counter()
    lines = []
    locator = Locator(result.summary.get("paths", []))
    order = sorted(result.findings, key=lambda f: (f.baseline, -Severity(f.severity).rank))
    for finding in order:
        if shown[kind_of(finding)] < ANNOTATIONS_PER_KIND:
            kind, line = command(finding, locator)
            shown[kind] += 1
            lines.append(line)
    rest = len(result.findings) - sum(shown.values())
    if rest:
        note = (
            f"{rest:,} more findings not annotated (GitHub shows {ANNOTATIONS_PER_KIND} annotations of each "
            "kind per step); the step summary and --format json list them"
        )
        lines.append(f"::notice title={escape_property('kafka-audit')}::{escape_data(note)}")
    lines.append(_counts_line(result))
    return "\n".join(lines) + "\n"


def _counts_line(result: ScanResult) -> str:
    by_severity = Counter(f.severity for f in result.findings)
    counts = ", ".join(f"{by_severity[s]:,} {s}" for s in SEVERITIES if by_severity[s]) or "no findings"
    known = sum(f.baseline for f in result.findings)
    partitions = result.summary.get("partitions", 0)
    plural = "" if partitions == 1 else "s"
    return f"kafka-audit: {partitions:,} partition{plural}, {counts}" + (
        f" ({known:,} known from the baseline)" if known else ""
    )


def step_summary(result: ScanResult, fail_on: str, budget: int) -> str:
    """The Markdown summary for ``$GITHUB_STEP_SUMMARY``, at most ``budget`` UTF-8 bytes (rows
    past that are counted, not shown); empty when not even the heading fits."""
    failing = sum(f.fails_gate(fail_on) for f in result.findings)
    head = [
        "### kafka-audit scan",
        "",
        f"{_counts_line(result).removeprefix('kafka-audit: ')}. Gate `--fail-on {fail_on}`: "
        + (f"**failed** ({failing:,} findings)." if failing else "passed."),
        "",
    ]
    if not result.findings:
        text = "\n".join(head) + "\n"
        return text if len(text.encode("utf-8")) <= budget else ""
    head += ["| severity | check | partition | offset | segment | message | baseline |", "|---|---|---|---|---|---|---|"]
    text = "\n".join(head) + "\n"
    used = len(text.encode("utf-8"))
    # Room kept for the line that counts the rows left out.
    reserve = 120
    if used + reserve > budget:
        return ""
    rows = []
    locator = Locator(result.summary.get("paths", []))
    for number, finding in enumerate(result.findings):
        row = _row(finding, locator) + "\n"
        size = len(row.encode("utf-8"))
        if used + size + reserve > budget:
            rows.append(f"\n{len(result.findings) - number:,} more findings not shown (GitHub's 1 MiB step summary limit).\n")
            break
        rows.append(row)
        used += size
    return text + "".join(rows)


def _row(finding: Finding, locator: Locator) -> str:
    cells = [
        finding.severity,
        f"`{finding.check}`",
        partition_label(finding.topic, finding.partition) if finding.topic is not None else "",
        "" if finding.offset is None else str(finding.offset),
        locator.file_path(finding.segment) if finding.segment else "",
        finding.message,
        "yes" if finding.baseline else "",
    ]
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _cell(text: str) -> str:
    """A Markdown table cell: no line break, no column separator, no HTML, no control character."""
    text = escape_controls(text, line_breaks=True).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")
    return text.replace("\r\n", "<br>").replace("\n", "<br>").replace("\r", "<br>")
