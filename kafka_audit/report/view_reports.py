"""Reports of the ``producers`` and ``timeline`` views (SPEC section 3): a Rich table, JSON
(``{"summary": ..., "producers"|"events": [...]}``), NDJSON (one row per line) and CSV (nested
fields as JSON strings)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kafka_audit.report.scan_report import DEFAULT_TABLE_LIMIT, summary_panel
from kafka_audit.rules.findings import iso_time

PRODUCER_FIELDS = (
    "topic",
    "partition",
    "producer_id",
    "transactional_id",
    "epochs",
    "first_offset",
    "last_offset",
    "first_timestamp",
    "last_timestamp",
    "sequences",
    "batches",
    "records",
    "transactions",
    "findings",
)
EVENT_FIELDS = (
    "timestamp",
    "time",
    "topic",
    "partition",
    "offset",
    "producer_id",
    "producer_epoch",
    "transactional_id",
    "kind",
    "check",
    "message",
)
_KIND_STYLE = {"finding": "bold", "epoch_bump": "magenta", "transaction_abort": "yellow", "transaction_commit": "green"}


def to_json(summary: dict[str, Any], notes: list[str], key: str, rows: list[dict[str, Any]]) -> str:
    return json.dumps({"summary": {**summary, "notes": notes}, key: rows}, indent=2)


def to_ndjson(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def to_csv(rows: list[dict[str, Any]], fields: tuple[str, ...]) -> str:
    if any("node_id" in row for row in rows) and "node_id" not in fields:
        fields = (*fields, "node_id")  # SPEC section 6: replicas side by side where they differ
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(fields)
    for row in rows:
        writer.writerow([_csv_cell(row.get(name)) for name in fields])
    return out.getvalue()


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return value


def render_producers(summary: dict[str, Any], rows: list[dict[str, Any]], console: Console, limit: int = DEFAULT_TABLE_LIMIT) -> None:
    console.print(summary_panel(summary, "kafka-audit producers"))
    table = Table(title=f"producers ({len(rows):,})", box=box.SIMPLE_HEAVY, title_justify="left")
    for name, width in (("partition", None), ("pid", None), ("epoch: seqs", None), ("offsets", None),
                        ("first / last time (UTC)", 12), ("counts", 12), ("findings", 8)):
        table.add_column(name, overflow="fold", no_wrap=width is None, min_width=width)
    for row in rows[:limit]:
        producer = Text(str(row["producer_id"]))
        if row["transactional_id"]:
            producer.append(f"\n{row['transactional_id']}", style="cyan")
        epochs = _epoch_lines(row["epochs"], row["sequences"])
        txn = row["transactions"]
        found = row["findings"]
        replica = f"\nbroker {row['node_id']}" if "node_id" in row else ""
        table.add_row(
            f"{row['topic']}-{row['partition']}{replica}",
            producer,
            epochs,
            f"{row['first_offset']}-{row['last_offset']}",
            f"{_short_time(row['first_timestamp'])}\n{_short_time(row['last_timestamp'])}",
            f"{_count(row['batches'], 'batch', 'batches')}\n{_count(row['records'], 'record', 'records')}\n"
            f"{txn['committed']} commit, {txn['aborted']} abort, {txn['open']} open",
            _findings_cell(found),
        )
    console.print(table)
    _more(console, len(rows), limit, "producers")


def _epoch_lines(epochs: list[int], sequences: dict[str, list[int]]) -> str:
    """One line per run of consecutive epochs with the same sequence range: a transactions-v2
    producer moves to a new epoch at every transaction end (KIP-890), so its thousands of epochs
    read as ``0..4093: 0-9`` rather than one line each."""
    runs: list[tuple[int, int, str]] = []
    for epoch in epochs:
        span = sequences.get(str(epoch))
        text = f"{span[0]}-{span[1]}" if span else "-"
        if runs and runs[-1][1] == epoch - 1 and runs[-1][2] == text:
            runs[-1] = (runs[-1][0], epoch, text)
        else:
            runs.append((epoch, epoch, text))
    return "\n".join(f"{first}: {text}" if first == last else f"{first}..{last}: {text}" for first, last, text in runs)


def render_timeline(summary: dict[str, Any], rows: list[dict[str, Any]], console: Console, limit: int = DEFAULT_TABLE_LIMIT) -> None:
    console.print(summary_panel(summary, "kafka-audit timeline"))
    table = Table(title=f"timeline ({len(rows):,} events)", box=box.SIMPLE_HEAVY, title_justify="left", expand=True)
    table.add_column("time (UTC)", no_wrap=True)
    table.add_column("where", no_wrap=True)
    table.add_column("event", max_width=24, overflow="fold")
    table.add_column("message", ratio=1, min_width=30, overflow="fold")
    for row in rows[:limit]:
        where = f"{row['topic']}-{row['partition']} @{row['offset']}"
        if row["producer_id"] not in (None, -1):
            where += f"\npid {row['producer_id']}"
            if row["producer_epoch"] is not None:
                where += f" e{row['producer_epoch']}"
        if row["transactional_id"]:
            where += f"\n{row['transactional_id']}"
        event = row["check"] if row["kind"] == "finding" else row["kind"]
        table.add_row(
            _short_time(row["timestamp"]).replace(" ", "\n"),
            where,
            Text(event or "", style=_KIND_STYLE.get(row["kind"], "")),
            row["message"],
        )
    console.print(table)
    _more(console, len(rows), limit, "events")


def _count(number: int, one: str, many: str) -> str:
    return f"{number:,} {one if number == 1 else many}"


def _findings_cell(found: dict[str, int]) -> Text:
    cell = Text()
    for severity, style in (("error", "bold red"), ("warning", "yellow"), ("info", "cyan")):
        if found.get(severity):
            cell.append(f"{found[severity]} {severity}\n", style=style)
    return cell if cell.plain else Text("-")


def _short_time(timestamp: int | None) -> str:
    text = iso_time(timestamp)
    return text.replace("T", " ").removesuffix("Z") if text else "-"


def _more(console: Console, total: int, limit: int, what: str) -> None:
    if total > limit:
        console.print(Text(f"... and {total - limit:,} more {what} not shown (use --format json)", style="dim"))
