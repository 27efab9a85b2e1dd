"""Reports of a scan (SPEC section 3): Rich tables, JSON, NDJSON and CSV."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from kafka_audit.audit.plan import ScanResult
from kafka_audit.rules.catalogue import CHECKS, GROUPS, SEVERITIES, ClientOutcome, Severity
from kafka_audit.rules.findings import FIELD_NAMES, Finding, partition_label

DEFAULT_TABLE_LIMIT = 50
# Notes printed under the summary panel before "... and N more".
_NOTES_SHOWN = 20
# Consoles at least this wide get a separate "where" column.
_WIDE_CONSOLE = 140
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
    return json.dumps({"summary": summary, "findings": [f.to_dict() for f in result.findings]}, indent=2)


def to_ndjson(result: ScanResult) -> str:
    return "".join(json.dumps(f.to_dict()) + "\n" for f in result.findings)


def to_csv(result: ScanResult) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(FIELD_NAMES)
    for finding in result.findings:
        row = finding.to_dict()
        row["details"] = json.dumps(row["details"], sort_keys=True)
        writer.writerow(["" if row[name] is None else row[name] for name in FIELD_NAMES])
    return out.getvalue()


def render_table(result: ScanResult, console: Console, limit: int = DEFAULT_TABLE_LIMIT) -> None:
    """The summary panel, the notes, then one table per group of findings, each cut at ``limit`` rows."""
    console.print(summary_panel(result.summary))
    for note in result.notes[:_NOTES_SHOWN]:
        console.print(Text(f"note: {note}", style="dim"), overflow="fold")
    if len(result.notes) > _NOTES_SHOWN:
        console.print(Text(f"... and {len(result.notes) - _NOTES_SHOWN:,} more notes (see --format json)", style="dim"))
    by_group: dict[str, list[Finding]] = {group: [] for group in GROUPS}
    for finding in result.findings:
        by_group[CHECKS[finding.check].group].append(finding)
    if not result.findings:
        console.print(Text("No findings.", style="bold green"))
    wide = console.width >= _WIDE_CONSOLE
    for group, findings in by_group.items():
        if findings:
            console.print(_group_table(group, findings, limit, wide))


def _written_by(summary: dict[str, Any]) -> str:
    """The feature levels the log dirs record, or that they record none."""
    levels = [f"{name} {summary[key]}" for key, name in (("metadata_version", "metadata.version"),
                                                        ("transaction_version", "transaction.version"))
              if summary.get(key) is not None]
    text = ", ".join(levels) or "unknown (no KRaft metadata scanned)"
    clusters = summary.get("feature_levels_by_cluster") or {}
    return f"{text} (the newest of {len(clusters)} clusters)" if clusters else text


def summary_panel(summary: dict[str, Any], title: str = "kafka-audit scan") -> Panel:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for name, value in summary_rows(summary):
        grid.add_row(name, value)
    return Panel(grid, title=title, border_style="blue", expand=False)


def _changed(paths: list[str]) -> str:
    """SPEC section 1: the files that grew, shrank or vanished while the scan ran (a live log dir;
    each file was read up to the size listed)."""
    if not paths:
        return "no file changed during the scan"
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5:,} more" if len(paths) > 5 else "")
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
        ("unreadable", f"{summary.get('segments_unreadable', 0):,} segments not read in full"),
        ("skipped", f"{summary.get('files_skipped', 0):,} files that are not part of a Kafka log"),
        ("changed", _changed(summary.get("files_changed") or [])),
        ("written by", _written_by(summary)),
        ("internal", f"{summary.get('internal_records_unknown', 0):,} internal records of unknown type or version"),
        ("formats", _counts(summary.get("formats", {}))),
        ("codecs", _counts(summary.get("codecs", {}))),
        ("producers", f"{summary.get('producers', 0):,}"),
        (
            "transactions",
            f"{txn.get('committed', 0):,} committed, {txn.get('aborted', 0):,} aborted, {txn.get('open', 0):,} open",
        ),
        ("engine", summary.get("engine", "-")),
        ("wall time", f"{summary.get('wall_time_s', 0):.1f} s ({summary.get('mb_per_s', 0):.1f} MB/s)"),
        ("findings", (", ".join(f"{severities[s]:,} {s}" for s in SEVERITIES if s in severities) or "none")
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


def _finding_cell(finding: Finding) -> Text:
    """Severity and check, the Kafka error a broker answers, and what the client does (KIP-691)."""
    cell = Text()
    cell.append(finding.severity, style=_SEVERITY_STYLE[finding.severity])
    cell.append(f" {finding.check}")
    if finding.baseline:  # --baseline lists it: shown, never failing the gate
        cell.append(" (baseline)", style="dim")
    if finding.error_name:
        cell.append(f"\n{finding.error_name} ({finding.error_code})", style="bold")
    exception = finding.details.get("client_exception")
    outcome = finding.client_outcome
    cell.append(f"\nclient: {outcome}", style=_OUTCOME_STYLE.get(outcome, ""))
    if exception:
        cell.append(f" ({exception})", style="dim")
    return cell


def _where_cell(finding: Finding) -> Text:
    """Time, partition, offset, record index, producer fields and transactional id of a finding."""
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
    if finding.segment:
        position = "" if finding.position is None else f" pos {finding.position}"
        parts.append(f"{finding.segment}{position}")
    return Text("\n".join(parts))


def _group_table(group: str, findings: list[Finding], limit: int, wide: bool) -> Group:
    """One group's findings. On a wide console: finding, where, message; on a narrow one the
    location heads the message cell so that the message keeps room to wrap."""
    table = Table(
        title=f"{group} ({len(findings):,})", box=box.SIMPLE_HEAVY, title_justify="left", expand=True, show_lines=True
    )
    table.add_column("finding", max_width=40, overflow="fold")
    if wide:
        table.add_column("where", max_width=44, overflow="fold")
    table.add_column("message", ratio=1, min_width=30, overflow="fold")
    for finding in findings[:limit]:
        where = _where_cell(finding)
        # A finding that explains itself (broker_rejection) shows the explanation under Kafka's words.
        explanation = finding.details.get("explanation")
        message = Text(finding.message)
        if explanation:
            message.append(f"\n{explanation}", style="italic")
        if wide:
            table.add_row(_finding_cell(finding), where, message)
        else:
            where.stylize("cyan")
            table.add_row(_finding_cell(finding), Text.assemble(where, "\n", message))
    parts: list[Any] = [table]
    if len(findings) > limit:
        parts.append(Text(f"... and {len(findings) - limit:,} more {group.lower()} not shown (use --format json)", style="dim"))
    return Group(*parts)
