"""Reports of a scan (SPEC section 3): Rich tables, JSON, NDJSON and CSV."""

from __future__ import annotations

import csv
import io
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from kafka_audit.audit.results import ScanResult
from kafka_audit.report.safe_text import csv_cell, dumps, escape_text
from kafka_audit.report.story import Story, by_severity, tell
from kafka_audit.report.wording import findings_line, plural, severity_counts, shorten_left, wall_time
from kafka_audit.rules.catalogue import CHECKS, GROUPS, ClientOutcome, Severity
from kafka_audit.rules.findings import FIELD_NAMES, Finding, partition_label

DEFAULT_TABLE_LIMIT = 50
# Notes printed under the summary panel before "... and N more".
_NOTES_SHOWN = 20
# Consoles at least this wide get a separate "where" column.
_WIDE_CONSOLE = 140
# Consoles narrower than this stack finding, where and message in one column, so that the message
# has the width.
_STACKED_BELOW = 100
# The "where" column's width on a wide console; a table's borders and cell padding per column.
_WHERE_WIDTH = 44
_CELL_PADDING = 3
_SEVERITY_STYLE: dict[str, str] = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
_OUTCOME_STYLE: dict[str, str] = {
    ClientOutcome.FATAL: "bold red",
    ClientOutcome.ABORTABLE: "magenta",
    ClientOutcome.RETRIABLE: "yellow",
    ClientOutcome.NONE: "dim",
}


def to_json(result: ScanResult) -> str:
    """SPEC section 3: ``{"summary": {...}, "findings": [...]}``; the summary also lists the notes
    (files skipped and why)."""
    summary = {**result.summary, "notes": result.notes}
    return dumps({"summary": summary, "findings": [f.to_dict() for f in result.findings]}, indent=2)


def to_ndjson(result: ScanResult) -> str:
    return "".join(dumps(f.to_dict()) + "\n" for f in result.findings)


def to_csv(result: ScanResult) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(FIELD_NAMES)
    for finding in result.findings:
        row = finding.to_dict()
        writer.writerow([csv_cell(row[name]) for name in FIELD_NAMES])
    return out.getvalue()


def render_table(result: ScanResult, console: Console, limit: int = DEFAULT_TABLE_LIMIT, exit_code: int | None = None) -> None:
    """The summary panel, the notes, then one table per group of findings, each cut at ``limit``
    rows, and a closing line with the counts by severity and ``exit_code`` (whose summary panel
    has scrolled away)."""
    console.print(summary_panel(result.summary))
    for note in result.notes[:_NOTES_SHOWN]:
        console.print(Text(f"note: {escape_text(note)}", style="dim"), overflow="fold")
    if len(result.notes) > _NOTES_SHOWN:
        console.print(Text(f"... and {len(result.notes) - _NOTES_SHOWN:,} more notes (see --format json)", style="dim"))
    by_group: dict[str, list[Finding]] = {group: [] for group in GROUPS}
    for finding in by_severity(result.findings):
        by_group[CHECKS[finding.check].group].append(finding)
    if not result.findings:
        console.print(Text("No findings.", style="bold green"))
    for group, findings in by_group.items():
        if findings:
            console.print(_group_table(group, findings, limit, console.width))
    render_story(tell(result.findings, result.summary), console)
    if result.findings and exit_code is not None:
        console.print(Text(findings_line(result.summary.get("findings_by_severity", {}), exit_code), style="bold"))


def render_story(story: Story, console: Console) -> None:
    """The incident in a few lines (``report/story.py``): the account, then the headlines ranked
    by consequence (their remedies: ``details.remedy`` in --format json, and the HTML report)."""
    console.print(Text("What happened", style="bold"))
    console.print(Text(escape_text(" ".join(story.sentences))), overflow="fold")
    for number, headline in enumerate(story.headlines, 1):
        line = Text(f"{number}. ")
        line.append(escape_text(headline.short), style=_SEVERITY_STYLE.get(headline.finding.severity, ""))
        console.print(line, overflow="fold")


def _written_by(summary: dict[str, Any]) -> str:
    """The feature levels the log dirs record, or that they record none."""
    levels = [f"{name} {summary[key]}" for key, name in (("metadata_version", "metadata.version"),
                                                        ("transaction_version", "transaction.version"))
              if summary.get(key) is not None]
    text = ", ".join(levels) or "unknown (no KRaft metadata scanned)"
    clusters = summary.get("feature_levels_by_cluster") or {}
    return f"{text} (the newest of {plural(len(clusters), 'cluster')})" if clusters else text


def summary_panel(summary: dict[str, Any], title: str = "kafka-audit scan") -> Panel:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for name, value in summary_rows(summary):
        grid.add_row(name, Text(escape_text(value)))
    return Panel(grid, title=title, border_style="blue", expand=False)


# The changed files the line names before it says how many more.
_PATHS_SHOWN = 5


def _changed(paths: list[str]) -> str:
    """SPEC section 1: the files that grew, shrank or vanished while the scan ran (a live log dir;
    each file was read up to the size listed)."""
    if not paths:
        return "no file changed during the scan"
    shown = ", ".join(paths[:_PATHS_SHOWN]) + (f" and {len(paths) - _PATHS_SHOWN:,} more" if len(paths) > _PATHS_SHOWN else "")
    return f"{len(paths):,} files changed during the scan (each read up to its listed size): {shown}"


def summary_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The summary's lines as (name, text): the table's panel and the HTML report's summary."""
    txn = summary.get("transactions", {})
    severities = summary.get("findings_by_severity", {})
    rows = [
        ("paths", ", ".join(summary.get("paths", []))),
        ("partitions", f"{summary.get('partitions', 0):,}"),
        ("segments", f"{summary.get('segments', 0):,}"),
        ("batches", f"{summary.get('batches', 0):,}"),
        ("records", f"{summary.get('records', 0):,}"),
        ("bytes", f"{summary.get('bytes_read', summary.get('bytes', 0)):,} read of {summary.get('bytes_found', 0):,} found"),
        ("unreadable", plural(summary.get("segments_unreadable", 0), "segment") + " not read in full"),
        ("skipped", plural(summary.get("files_skipped", 0), "file") + " not part of a Kafka log"),
        ("changed", _changed(summary.get("files_changed") or [])),
        ("written by", _written_by(summary)),
        ("internal", plural(summary.get("internal_records_unknown", 0), "record")
         + " of unknown type or version, or not decodable"),
        ("formats", _counts(summary.get("formats", {}))),
        ("codecs", _counts(summary.get("codecs", {}))),
        ("producers", f"{summary.get('producers', 0):,}"),
        (
            "transactions",
            f"{txn.get('committed', 0):,} committed, {txn.get('aborted', 0):,} aborted, {txn.get('open', 0):,} open",
        ),
        ("engine", summary.get("engine", "-")),
        ("wall time", wall_time(summary)),
        ("findings", (severity_counts(severities) or "none")
         + (f" ({summary['findings_baseline']:,} known from the baseline)" if summary.get("findings_baseline") else "")),
        ("by check", _counts(summary.get("findings_by_check", {})) or "-"),
    ]
    if summary.get("filter"):
        rows.append(("filter", ", ".join(f"{k} {v}" for k, v in summary["filter"].items() if v is not None)))
    if "broker_log_lines" in summary:
        rows.append(("broker log", _broker_log_counts(summary)))
    return rows


def _broker_log_counts(summary: dict[str, Any]) -> str:
    """``--broker-log``: what was read, and the lines no scanned partition could explain."""
    return (
        f"{summary['broker_log_lines']:,} lines from {summary['broker_log_files']:,} files, "
        f"{summary['broker_log_rejections']:,} produce errors, "
        f"{summary['broker_log_lines_unmatched']:,} about partitions not scanned"
    )


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count:,}" for name, count in sorted(counts.items()))


def _finding_cell(finding: Finding, stacked: bool = False) -> Text:
    """Severity and check, the Kafka error a broker answers, and what the client does (KIP-691):
    one item a line in a column of its own, two lines when ``stacked`` over the message."""
    cell = Text()
    cell.append(finding.severity, style=_SEVERITY_STYLE[finding.severity])
    cell.append(f" {escape_text(finding.check)}")
    if finding.baseline:  # --baseline lists it: shown, never failing the gate
        cell.append(" (baseline)", style="dim")
    if finding.error_name:
        cell.append(f"{'  ' if stacked else chr(10)}{finding.error_name} ({finding.error_code})", style="bold")
    exception = finding.details.get("client_exception")
    outcome = finding.client_outcome
    cell.append(f"\nclient: {outcome}", style=_OUTCOME_STYLE.get(outcome, ""))
    if exception:
        cell.append(f"{' ' if stacked else chr(10)}({escape_text(str(exception))})", style="dim")
    return cell


def _where_cell(finding: Finding, path_width: int) -> Text:
    """Time, partition, offset, record index, producer fields and transactional id of a finding;
    its segment's path shortened from the left to ``path_width`` with the file name kept."""
    parts = [finding.time.replace("T", " ").removesuffix("Z") + " UTC"] if finding.time else []
    parts.append(partition_label(finding.topic, finding.partition) if finding.topic is not None else "-")
    if finding.offset is not None:
        parts[-1] += f" @{finding.offset}"
    if finding.record_index is not None:
        parts.append(f"record {finding.record_index}")
    if finding.producer_id not in (None, -1):
        producer = f"pid {finding.producer_id}"
        if finding.producer_epoch is not None:
            producer += f" epoch {finding.producer_epoch}"
        if finding.sequence not in (None, -1):
            producer += f" seq {finding.sequence}"
        if finding.transactional_id:
            producer += f" ({finding.transactional_id})"
        parts.append(producer)
    lines = [escape_text(part) for part in parts]
    if finding.segment:
        position = "" if finding.position is None else f" pos {finding.position}"
        segment = escape_text(finding.segment)  # escaped first: the shortened path is what is shown
        path = shorten_left(segment, path_width - len(position)) if len(segment) + len(position) > path_width else segment
        lines.append(f"{path}{position}")
    return Text("\n".join(lines))


def _group_table(group: str, findings: list[Finding], limit: int, width: int) -> Group:
    """One group's findings on a console ``width`` wide. At least 140: finding, where, message;
    at least 100: the location heads the message cell; narrower: finding, where and message in
    one cell, so that the message has the width. The finding column is as wide as its content."""
    table = Table(
        title=f"{group} ({len(findings):,})", box=box.SIMPLE_HEAVY, title_justify="left", expand=True, show_lines=True
    )
    shown = findings[:limit]
    stacked, wide = width < _STACKED_BELOW, width >= _WIDE_CONSOLE
    finding_cells = [_finding_cell(f, stacked) for f in shown]
    if stacked:
        table.add_column("finding · where · message", ratio=1, overflow="fold")
        path_width = width - _CELL_PADDING
    else:
        finding_width = max(_widest_line(cell) for cell in finding_cells)
        table.add_column("finding", width=finding_width, overflow="fold")
        if wide:
            table.add_column("where", max_width=_WHERE_WIDTH, overflow="fold")
        table.add_column("message", ratio=1, overflow="fold")
        path_width = _WHERE_WIDTH if wide else width - finding_width - 2 * _CELL_PADDING
    for finding, cell in zip(shown, finding_cells):
        table.add_row(*_row(finding, cell, _where_cell(finding, path_width), stacked, wide))
    parts: list[Any] = [table]
    if len(findings) > limit:
        parts.append(Text(f"... and {len(findings) - limit:,} more {group.lower()} not shown (use --format json)", style="dim"))
    return Group(*parts)


def _widest_line(text: Text) -> int:
    return max(len(line) for line in text.plain.split("\n"))


def _row(finding: Finding, cell: Text, where: Text, stacked: bool, wide: bool) -> tuple[Text, ...]:
    """A finding's cells: its message, and under it the explanation of a finding that explains
    itself (broker_rejection), placed by the layout of :func:`_group_table`."""
    message = Text(escape_text(finding.message))
    explanation = finding.details.get("explanation")
    if explanation:
        message.append(f"\n{escape_text(str(explanation))}", style="italic")
    if wide:
        return cell, where, message
    where.stylize("cyan")
    if stacked:
        return (Text.assemble(cell, "\n", where, "\n", message),)
    return cell, Text.assemble(where, "\n", message)
