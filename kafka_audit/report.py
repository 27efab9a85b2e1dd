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

from kafka_audit.audit import ScanResult
from kafka_audit.errors import CHECKS, GROUPS
from kafka_audit.findings import FIELD_NAMES, Finding

DEFAULT_TABLE_LIMIT = 50
_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
_OUTCOME_STYLE = {"fatal": "bold red", "abortable": "magenta", "retriable": "yellow", "none": "dim"}


def to_json(result: ScanResult) -> str:
    return json.dumps(
        {"summary": result.summary, "findings": [f.to_dict() for f in result.findings]}, indent=2, sort_keys=False
    )


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
    """The summary panel, then one table per group of findings, each cut at ``limit`` rows."""
    console.print(_summary_panel(result.summary))
    for note in result.notes:
        console.print(Text(f"note: {note}", style="dim"))
    by_group: dict[str, list[Finding]] = {group: [] for group in GROUPS}
    for finding in result.findings:
        by_group[CHECKS[finding.check].group].append(finding)
    if not result.findings:
        console.print(Text("No findings.", style="bold green"))
    for group, findings in by_group.items():
        if findings:
            console.print(_group_table(group, findings, limit))


def _summary_panel(summary: dict[str, Any]) -> Panel:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    txn = summary.get("transactions", {})
    rows = [
        ("paths", ", ".join(summary.get("paths", []))),
        ("partitions", f"{summary.get('partitions', 0):,}"),
        ("segments", f"{summary.get('segments', 0):,}"),
        ("batches", f"{summary.get('batches', 0):,}"),
        ("records", f"{summary.get('records', 0):,}"),
        ("bytes", f"{summary.get('bytes', 0):,}"),
        ("formats", _counts(summary.get("formats", {}))),
        ("codecs", _counts(summary.get("codecs", {}))),
        ("producers", f"{summary.get('producers', 0):,}"),
        (
            "transactions",
            f"{txn.get('committed', 0):,} committed, {txn.get('aborted', 0):,} aborted, {txn.get('open', 0):,} open",
        ),
        ("wall time", f"{summary.get('wall_time_s', 0):.1f} s ({summary.get('mb_per_s', 0):.1f} MB/s)"),
        ("findings", _counts(summary.get("findings_by_check", {})) or "none"),
    ]
    for name, value in rows:
        grid.add_row(name, value)
    return Panel(grid, title="kafka-audit scan", border_style="blue", expand=False)


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count:,}" for name, count in sorted(counts.items()))


def _group_table(group: str, findings: list[Finding], limit: int) -> Group:
    table = Table(title=f"{group} ({len(findings):,})", box=box.SIMPLE_HEAVY, title_justify="left", expand=True)
    table.add_column("severity", no_wrap=True)
    table.add_column("partition", no_wrap=True)
    table.add_column("offset", justify="right", no_wrap=True)
    table.add_column("rec", justify="right", no_wrap=True)
    table.add_column("producer", no_wrap=True)
    table.add_column("check / error", no_wrap=True)
    table.add_column("client", no_wrap=True)
    table.add_column("message", ratio=1)
    for finding in findings[:limit]:
        producer = "" if finding.producer_id in (None, -1) else f"{finding.producer_id}/e{finding.producer_epoch}"
        if producer and finding.sequence not in (None, -1):
            producer += f"/s{finding.sequence}"
        check = finding.check + (f"\n{finding.error_name} ({finding.error_code})" if finding.error_name else "")
        client = finding.client_outcome
        exception = finding.details.get("client_exception")
        table.add_row(
            Text(finding.severity, style=_SEVERITY_STYLE[finding.severity]),
            f"{finding.topic}-{finding.partition}",
            "" if finding.offset is None else str(finding.offset),
            "" if finding.record_index is None else str(finding.record_index),
            producer,
            check,
            Text(client + (f"\n{exception}" if exception else ""), style=_OUTCOME_STYLE.get(client, "")),
            finding.message,
        )
    parts: list[Any] = [table]
    if len(findings) > limit:
        parts.append(Text(f"... and {len(findings) - limit:,} more {group.lower()} not shown (use --format json)", style="dim"))
    return Group(*parts)
