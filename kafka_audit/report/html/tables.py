"""The report's HTML tables, written on the server side so the page reads without scripts: the
summary, the findings (with remedy and culprit record) and the producers. Each sortable cell
carries its sort value in ``data-v``; the page's script sorts and filters the rows."""

from __future__ import annotations

import json
import re
from typing import Any

from kafka_audit.report.html.evidence import Evidence
from kafka_audit.report.safe_text import html_text as escape  # data never acts (SPEC section 1)
from kafka_audit.report.scan_report import summary_rows
from kafka_audit.report.story import CLASS_NAMES, Story
from kafka_audit.rules.findings import Finding, iso_time, partition_label

# The message cell also holds the remedy, the culprit record and the details, under the message.
FINDING_COLUMNS = ("severity", "check", "partition", "offset", "record", "producer", "time",
                   "Kafka error", "client", "message", "segment")
PRODUCER_COLUMNS = ("partition", "producer id", "transactional id", "epochs: sequences", "offsets",
                    "first time (UTC)", "last time (UTC)", "batches", "records", "transactions", "findings")
_BREAKS = re.compile(r"([_/]|\.(?=[A-Za-z])|[a-z](?=[A-Z]))")
_SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


def summary_table(summary: dict[str, Any], notes: list[str], notes_shown: int = 20) -> str:
    items = [(name, str(value)) for name, value in summary_rows(summary)]
    items += [("note", note) for note in notes[:notes_shown]]
    if len(notes) > notes_shown:
        items.append(("notes", f"... and {len(notes) - notes_shown:,} more (see --format json)"))
    return '<dl class="summary">' + "".join(
        f"<div><dt>{escape(name)}</dt><dd>{_breakable(value)}</dd></div>" for name, value in items) + "</dl>"


def _cell(text: Any, sort: Any = None, css: str = "") -> str:
    """A cell; long names may break after ``_`` and ``/`` (``<wbr>``, not in its text)."""
    shown = "" if text is None else _breakable(str(text))
    value = f' data-v="{escape(str(sort))}"' if sort is not None else ""
    klass = f' class="{css}"' if css else ""
    return f"<td{value}{klass}>{shown}</td>"


def _breakable(text: str) -> str:
    """Escaped text whose long names may break after ``_``, ``/``, a dot before a letter and
    inside camelCase (``<wbr>``: not part of its text, so filtering and sorting do not see it)."""
    return _BREAKS.sub(r"\1<wbr>", escape(text))


def _head(table_id: str, columns: tuple[str, ...]) -> str:
    heads = "".join(f'<th data-col="{i}" title="click to sort">{escape(c)}</th>' for i, c in enumerate(columns))
    return f'<table class="data" id="{table_id}"><thead><tr>{heads}</tr></thead><tbody>'


def finding_key(finding: Finding | dict[str, Any]) -> str:
    """One finding's identity in the page (``data-finding``), as the tests compare it with a
    ``--format json`` scan: topic, partition, offset, check, record index, position."""
    data = finding if isinstance(finding, dict) else finding.to_dict()
    return "|".join(str(data[k]) for k in ("topic", "partition", "offset", "check", "record_index", "position"))


def findings_table(findings: list[Finding], evidence: dict[int, Evidence], limit: int) -> str:
    """The first ``limit`` findings; the record index column only when a row has one."""
    shown = findings[:limit]
    drop = set() if any(f.record_index is not None for f in shown) else {"record"}
    keep = [i for i, name in enumerate(FINDING_COLUMNS) if name not in drop]
    rows = [_finding_row(f, evidence.get(id(f)), keep) for f in shown]
    more = ""
    if len(findings) > limit:
        more = (f'<p class="more">{len(findings) - limit:,} more findings not shown (of {len(findings):,}; '
                f"the summary counts them all; use scan --format json)</p>")
    head = _head("findings", tuple(FINDING_COLUMNS[i] for i in keep))
    return '<div class="scroll">' + head + "".join(rows) + "</tbody></table></div>" + more


def _finding_row(f: Finding, evidence: Evidence | None, keep: list[int]) -> str:
    producer = ""
    if f.producer_id is not None and f.producer_id >= 0:
        producer = " ".join([str(f.producer_id), *([f"e{f.producer_epoch}"] if f.producer_epoch is not None else []),
                             *([f"seq {f.sequence}"] if f.sequence is not None else [])])
        if f.transactional_id:
            producer += f" ({f.transactional_id})"
    error = f"{f.error_name} ({f.error_code})" if f.error_name else ""
    client = f.client_outcome + (f" ({f.details['client_exception']})" if f.details.get("client_exception") else "")
    shown_apart = ("remedy", "client_exception", "explanation", "log_line")
    details = {k: v for k, v in f.details.items() if k not in shown_apart}
    message = _breakable(f.message)
    if isinstance(f.details.get("log_line"), str):
        message += f'<div class="log-line"><b>broker log</b> <code>{_paragraphs(f.details["log_line"])}</code></div>'
    if isinstance(f.details.get("explanation"), str):
        message += f'<div class="explanation"><b>why</b> {_paragraphs(f.details["explanation"])}</div>'
    if isinstance(f.details.get("remedy"), dict):
        message += remedy_block(f.details["remedy"])
    if evidence:
        lines = "<br>".join(escape(line) for line in evidence.lines())
        message += f'<div class="culprit"><b>culprit record</b><br><code>{lines}</code></div>'
    if details:
        items = "".join(f"<dt>{escape(k)}</dt><dd>{_breakable(v if isinstance(v, str) else json.dumps(v, sort_keys=True))}</dd>"
                        for k, v in sorted(details.items()))
        message += f'<details><summary>details</summary><dl class="details">{items}</dl></details>'
    where = (f.segment or "") + (f" pos {f.position}" if f.segment and f.position is not None else "")
    cells = [
        _cell(f.severity + (" (known: baseline)" if f.baseline else ""), _SEVERITY_RANK.get(f.severity, 3), f"sev-{f.severity}"),
        _cell(f.check),
        _cell(partition_label(f.topic, f.partition) if f.topic is not None else ""),
        _cell(f.offset, f.offset if f.offset is not None else -1),
        _cell(f.record_index, f.record_index if f.record_index is not None else -1),
        _cell(producer, f.producer_id if f.producer_id is not None else -1),
        _cell((f.time or "").replace("T", " ").removesuffix("Z"), f.timestamp if f.timestamp is not None else -1),
        _cell(error),
        _cell(client),
        f'<td class="message">{message}</td>',
        _cell(where, css="where"),
    ]
    return (f'<tr data-finding="{escape(finding_key(f))}" data-severity="{escape(f.severity)}" '
            f'data-check="{escape(f.check)}">' + "".join(cells[i] for i in keep) + "</tr>")


def story_section(story: Story) -> str:
    """The account in words, then the headline findings ranked by consequence with their remedies."""
    account = "".join(f"<p class=\"story-line\">{escape(sentence)}</p>" for sentence in story.sentences)
    items = "".join(
        f'<li class="headline sev-{escape(h.finding.severity)}" data-class="{h.rank}" data-check="{escape(h.finding.check)}">'
        f'<span class="class">{escape(CLASS_NAMES[h.rank])}</span> {_breakable(h.title)}'
        + (remedy_block(h.remedy) if h.remedy else "") + "</li>"
        for h in story.headlines
    )
    return f'<div class="story">{account}</div>' + (f'<ol class="headlines">{items}</ol>' if items else "")


def remedy_block(remedy: dict[str, Any]) -> str:
    """A finding's remedy (SPEC section 3): its summary, the commands one per line, what it loses,
    its references."""
    commands = "".join(f"<code>{escape(str(c))}</code>" for c in remedy.get("commands") or [])
    references = ", ".join(escape(str(r)) for r in remedy.get("references") or [])
    return (f'<div class="remedy"><b>remedy</b> {escape(str(remedy.get("summary", "")))}'
            + (f'<div class="commands">{commands}</div>' if commands else "")
            + f'<div class="loses"><b>loses</b> {escape(str(remedy.get("loses", "")))}</div>'
            + (f'<div class="refs">{references}</div>' if references else "") + "</div>")


def _paragraphs(text: str) -> str:
    """Text with its line breaks kept (a broker log explanation may hold several lines)."""
    return "<br>".join(escape(line) for line in text.splitlines())


def producers_table(rows: list[dict[str, Any]], limit: int) -> str:
    body = "".join(_producer_row(row) for row in rows[:limit])
    more = ""
    if len(rows) > limit:
        more = f'<p class="more">{len(rows) - limit:,} more producers not shown (of {len(rows):,}; use producers --format json)</p>'
    return '<div class="scroll">' + _head("producers", PRODUCER_COLUMNS) + body + "</tbody></table></div>" + more


def _producer_row(row: dict[str, Any]) -> str:
    sequences = row["sequences"]
    epochs = ", ".join(
        f"{e}: {sequences[str(e)][0]}-{sequences[str(e)][1]}" if str(e) in sequences else f"{e}: -" for e in row["epochs"]
    )
    txn, found = row["transactions"], row["findings"]
    cells = [
        _cell(partition_label(row["topic"], row["partition"])),
        _cell(row["producer_id"], row["producer_id"]),
        _cell(row["transactional_id"]),
        _cell(epochs),
        _cell(f"{row['first_offset']}-{row['last_offset']}", row["first_offset"]),
        _cell(_time(row["first_timestamp"]), row["first_timestamp"] if row["first_timestamp"] is not None else -1),
        _cell(_time(row["last_timestamp"]), row["last_timestamp"] if row["last_timestamp"] is not None else -1),
        _cell(f"{row['batches']:,}", row["batches"]),
        _cell(f"{row['records']:,}", row["records"]),
        _cell(f"{txn['committed']:,} committed, {txn['aborted']:,} aborted, {txn['open']:,} open",
              txn["committed"] + txn["aborted"] + txn["open"]),
        _cell(", ".join(f"{found[s]} {s}" for s in ("error", "warning", "info") if found.get(s)) or "-",
              -(found.get("error", 0) * 1_000_000 + found.get("warning", 0) * 1_000 + found.get("info", 0))),
    ]
    return "<tr>" + "".join(cells) + "</tr>"


def _time(timestamp: int | None) -> str:
    text = iso_time(timestamp)
    return text.replace("T", " ").removesuffix("Z") if text else "-"

