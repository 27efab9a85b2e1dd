"""Reports of the ``producers`` and ``timeline`` views (SPEC section 3): a Rich table, JSON
(``{"summary": ..., "producers"|"events": [...]}``), NDJSON (one row per line) and CSV (nested
fields as JSON strings)."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kafka_audit.audit.results import ScanResult
from kafka_audit.report.safe_text import csv_cell, dumps, escape_text
from kafka_audit.report.scan_report import DEFAULT_TABLE_LIMIT, summary_panel
from kafka_audit.report.views import ReportFilter, event_rows, timeline
from kafka_audit.report.wording import plural
from kafka_audit.rules.events import EventKind
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
# Consoles narrower than this get the views' narrow layouts, fewer and stacked columns, so that
# every column shows whole and the message keeps the width.
_NARROW_BELOW = 100
_KIND_STYLE = {
    EventKind.FINDING: "bold",
    EventKind.EPOCH_BUMP: "magenta",
    EventKind.TRANSACTION_ABORT: "yellow",
    EventKind.TRANSACTION_COMMIT: "green",
}


def to_json(summary: dict[str, Any], notes: list[str], key: str, rows: list[dict[str, Any]]) -> str:
    return dumps({"summary": {**summary, "notes": notes}, key: rows}, indent=2)


def to_ndjson(rows: list[dict[str, Any]]) -> str:
    return "".join(dumps(row) + "\n" for row in rows)


def to_csv(rows: list[dict[str, Any]], fields: tuple[str, ...]) -> str:
    if any("node_id" in row for row in rows) and "node_id" not in fields:
        fields = (*fields, "node_id")  # SPEC section 6: replicas side by side where they differ
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(fields)
    for row in rows:
        writer.writerow([csv_cell(row.get(name)) for name in fields])
    return out.getvalue()


def render_producers(summary: dict[str, Any], rows: list[dict[str, Any]], console: Console, limit: int = DEFAULT_TABLE_LIMIT) -> None:
    console.print(summary_panel(summary, "kafka-audit producers"))
    narrow = console.width < _NARROW_BELOW
    table = Table(title=f"producers ({len(rows):,})", box=box.SIMPLE_HEAVY, title_justify="left")
    columns = (("partition · pid", None), ("epoch: seqs", None), ("offsets · time (UTC)", None), ("counts", 9),
               ("findings", 8)) if narrow else \
        (("partition", None), ("pid", None), ("epoch: seqs", None), ("offsets", None), ("first / last time (UTC)", 12),
         ("counts", 12), ("findings", 8))
    label = max((len(f"{row['topic']}-{row['partition']}") for row in rows[:limit]), default=0)
    for index, (name, given) in enumerate(columns):
        # The partition's name whole, up to a third of the console.
        width = min(label, console.width // 3) if narrow and index == 0 else given
        table.add_column(name, overflow="fold", no_wrap=width is None and not narrow, min_width=width)
    for row in rows[:limit]:
        table.add_row(*_producer_cells(row, narrow))
    console.print(table)
    _more(console, len(rows), limit, "producers")
    _closing(console, len(rows), limit, "producer")


def _producer_cells(row: dict[str, Any], narrow: bool) -> tuple[Any, ...]:
    """One producer's cells; on a narrow console partition and producer share a cell, and so do
    the offsets and times (each time on two lines), and the transaction counts take a line each."""
    producer = Text(str(row["producer_id"]))
    if row["transactional_id"]:
        producer.append(f"\n{escape_text(row['transactional_id'])}", style="cyan")
    replica = f"\nbroker {escape_text(str(row['node_id']))}" if "node_id" in row else ""  # replicas side by side
    partition = Text(escape_text(f"{row['topic']}-{row['partition']}") + replica)
    offsets = f"{row['first_offset']}-{row['last_offset']}"
    txn = row["transactions"]
    counts = f"{_count(row['batches'], 'batch', 'batches')}\n{_count(row['records'], 'record', 'records')}\n"
    first, last = _short_time(row["first_timestamp"]), _short_time(row["last_timestamp"])
    epochs = _epoch_lines(row["epochs"], row["sequences"])
    if narrow:
        counts += f"{txn['committed']} commit\n{txn['aborted']} abort\n{txn['open']} open"
        times = f"{first.replace(' ', chr(10))}\n{last.replace(' ', chr(10))}"
        return (Text.assemble(partition, "\n", producer), epochs, f"{offsets}\n{times}", counts,
                _findings_cell(row["findings"]))
    counts += f"{txn['committed']} commit, {txn['aborted']} abort, {txn['open']} open"
    return partition, producer, epochs, offsets, f"{first}\n{last}", counts, _findings_cell(row["findings"])


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
    narrow = console.width < _NARROW_BELOW
    table = Table(title=f"timeline ({plural(len(rows), 'event')})", box=box.SIMPLE_HEAVY, title_justify="left", expand=True)
    if narrow:
        table.add_column("time (UTC) · where", overflow="fold")
    else:
        table.add_column("time (UTC)", no_wrap=True)
        table.add_column("where", no_wrap=True)
        table.add_column("event", overflow="fold")
    table.add_column("event · message" if narrow else "message", ratio=1, overflow="fold")
    for row in rows[:limit]:
        time, where, event = _event_cells(row)
        if narrow:
            table.add_row(Text(f"{time}\n{where}"), Text.assemble(event, "\n", escape_text(row["message"] or "")))
        else:
            table.add_row(Text(time), Text(where), event, Text(escape_text(row["message"] or "")))
    console.print(table)
    _more(console, len(rows), limit, "events")
    _closing(console, len(rows), limit, "event")


def _event_cells(row: dict[str, Any]) -> tuple[str, str, Text]:
    """An event's time (date and time on two lines), where (partition and offset, producer id and
    epoch, transactional id) and kind or check."""
    where = escape_text(f"{row['topic']}-{row['partition']}") + f" @{row['offset']}"
    if row["producer_id"] not in (None, -1):
        where += f"\npid {row['producer_id']}"
        if row["producer_epoch"] is not None:
            where += f" e{row['producer_epoch']}"
    if row["transactional_id"]:
        where += f"\n{escape_text(row['transactional_id'])}"
    event = row["check"] if row["kind"] == "finding" else row["kind"]
    return _short_time(row["timestamp"]).replace(" ", "\n"), where, Text(escape_text(event or ""), style=_KIND_STYLE.get(row["kind"], ""))


def _count(number: int, one: str, many: str) -> str:
    return plural(number, one, many)


def _findings_cell(found: dict[str, int]) -> Text:
    cell = Text()
    for severity, style in (("error", "bold red"), ("warning", "yellow"), ("info", "cyan")):
        if found.get(severity):
            cell.append(f"{found[severity]} {severity}\n", style=style)
    return cell if cell.plain else Text("-")


def _short_time(timestamp: int | None) -> str:
    text = iso_time(timestamp)
    return text.replace("T", " ").removesuffix("Z") if text else "-"


def _closing(console: Console, total: int, limit: int, noun: str) -> None:
    """A long view ends with its count, its summary panel having scrolled away."""
    if total > limit:
        console.print(Text(f"{plural(total, noun)} in all", style="bold"))


def _more(console: Console, total: int, limit: int, what: str) -> None:
    if total > limit:
        console.print(Text(f"... and {total - limit:,} more {what} not shown (use --format json)", style="dim"))


def _producer_rows(result: ScanResult, keep: ReportFilter) -> list[dict[str, Any]]:
    """One row per (topic, partition, producer id), already filtered by ``keep``."""
    return result.producers


def _event_rows(result: ScanResult, keep: ReportFilter) -> list[dict[str, Any]]:
    """The events in time order, each with its producer's transactional id."""
    names = {f.producer_id: f.transactional_id for f in result.findings if f.transactional_id}
    names.update({row["producer_id"]: row["transactional_id"] for row in result.producers if row["transactional_id"]})
    return event_rows(timeline(result, keep), names)


@dataclass(frozen=True, slots=True)
class View:
    """A view of the scan: its rows, their key in JSON, their CSV columns, their table."""

    rows: Callable[[ScanResult, ReportFilter], list[dict[str, Any]]]
    key: str
    fields: tuple[str, ...]
    render: Callable[[dict[str, Any], list[dict[str, Any]], Console], None]


VIEWS = {
    "producers": View(_producer_rows, "producers", PRODUCER_FIELDS, render_producers),
    "timeline": View(_event_rows, "events", EVENT_FIELDS, render_timeline),
}
