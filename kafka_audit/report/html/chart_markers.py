"""The markers of the report's swim-lane charts, after the events of Kafka's ProducerStateManager
and UnifiedLog the timeline holds (epoch bumps, log-start moves, snapshots, expiries, broker log
lines) and the findings: one Plotly scatter trace per marker style, the most severe first; and the
lanes and traces every part of a chart shares (:class:`Lanes`, :func:`make_trace`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from kafka_audit.report.safe_text import html_text
from kafka_audit.rules.catalogue import CHECKS
from kafka_audit.rules.events import Event, EventKind
from kafka_audit.rules.findings import iso_time

# A Plotly trace, as plotly.js reads it.
Trace = dict[str, Any]
BROKER_LANE = "broker log"
PARTITION_LANE = "partition"
_SEVERITY_COLOR = {"error": "#d62728", "warning": "#ff7f0e", "info": "#1f77b4"}
_MARKERS = {  # event kind -> (legend name, symbol, color); findings are coloured by severity
    EventKind.EPOCH_BUMP: ("epoch bump", "star", "#7b4173"),
    EventKind.LOG_START_MOVED: ("log start moved", "triangle-down", "#393b79"),
    EventKind.SNAPSHOT: ("snapshot", "circle-open", "#637939"),
    EventKind.PRODUCER_EXPIRED: ("producer expired", "hourglass", "#8c6d31"),
    EventKind.BROKER_LOG: ("broker log line", "square", "#843c39"),
}
TXN_KINDS = {EventKind.TRANSACTION_BEGIN, EventKind.TRANSACTION_COMMIT, EventKind.TRANSACTION_ABORT}


@dataclass(slots=True)
class Lanes:
    """Lane names of one partition: a producer id -> its lane; the rest share ``others``."""

    names: dict[int, str] = field(default_factory=dict)
    others: str | None = None

    def of(self, producer_id: int | None) -> str | None:
        if producer_id is None or producer_id < 0:
            return None
        return self.names.get(producer_id, self.others)


def make_trace(kind: str, **attributes: Any) -> Trace:
    """A Plotly trace as the JSON plotly.js reads (``bar`` or ``scatter``): the one place every
    trace's data passes on its way to the page. Plain dicts: the plotly package's figure
    validation cost a quarter of a second per chart."""
    return {"type": kind, **attributes}


def _marker_lane(event: Event, lanes: Lanes) -> str:
    if event.kind == EventKind.BROKER_LOG:
        return BROKER_LANE
    if event.kind in (EventKind.LOG_START_MOVED, EventKind.SNAPSHOT):
        return PARTITION_LANE
    return lanes.of(event.producer_id) or PARTITION_LANE


def _priority(event: Event) -> int:
    if event.check:
        return -CHECKS[event.check].severity.rank if event.check in CHECKS else 0
    return 1


def _marker_style(event: Event, bump_reasons: dict[tuple[str, int, int], str]) -> tuple[str, str, str, int]:
    """(legend name, symbol, color, size) of an event's marker. An epoch bump that is a finding
    (a fenced instance, a timeout abort, an idempotent bump: ``epoch_bumps.py``) stands out with
    its reason; the bump a transactions-v2 coordinator makes at every transaction end (KIP-890,
    an event without a check) is drawn small and grey."""
    if event.kind == EventKind.FINDING:
        severity = str(CHECKS[event.check].severity) if event.check in CHECKS else "info"
        return (f"finding: {severity}", "x", _SEVERITY_COLOR[severity], 12)
    if event.kind == EventKind.EPOCH_BUMP:
        if not event.check:
            return ("epoch bump (transaction end, routine)", "line-ns-open", "#9a9a9a", 9)
        reason = bump_reasons.get((event.topic, event.partition, event.offset or -1), "")
        color = "#d62728" if reason == "fenced" else "#7b4173"
        return (f"epoch bump: {reason.replace('_', ' ') or 'finding'}", "star", color, 16)
    name, symbol, color = _MARKERS.get(event.kind, (str(event.kind), "circle", "#444"))
    return (name, symbol, color, 12)


def marker_traces(events: list[Event], lanes: Lanes, points: int,
                   bump_reasons: dict[tuple[str, int, int], str]) -> tuple[list[Trace], int]:
    """Markers for findings (by severity) and the point events, the most severe first up to
    ``points``; returns the traces and how many were not drawn."""
    marks = [e for e in events if e.timestamp is not None and (e.kind not in TXN_KINDS or e.check)]
    marks.sort(key=_priority)
    drawn = marks[:points]
    groups: dict[tuple[str, str, str, int], list[Event]] = defaultdict(list)
    for event in drawn:
        groups[_marker_style(event, bump_reasons)].append(event)
    traces = []
    for (name, symbol, color, size), group in groups.items():
        line = {"width": 1, "color": "#222"} if not symbol.endswith("-open") else {"width": 2, "color": color}
        traces.append(make_trace("scatter",
            name=name, mode="markers", x=[iso_time(e.timestamp) for e in group],
            y=[_marker_lane(e, lanes) for e in group],
            marker={"symbol": symbol, "size": size, "color": color, "line": line},
            hovertext=[_hover(e) for e in group], hoverinfo="text"))
    return traces, len(marks) - len(drawn)


def _hover(event: Event) -> str:
    head = f"{event.check} ({event.kind})" if event.check and event.kind != EventKind.FINDING else (event.check or str(event.kind))
    where = f"offset {event.offset}" if event.offset is not None else "no offset"
    if event.producer_id is not None and event.producer_id >= 0:
        where += f", producer {event.producer_id}" + (f" epoch {event.producer_epoch}" if event.producer_epoch is not None else "")
    return f"<b>{chart_text(head)}</b><br>{iso_time(event.timestamp)}<br>{where}<br>{_wrap(chart_text(event.message))}"


def chart_text(text: str) -> str:
    """Data as Plotly shows it: as text, never as the HTML its labels render (SPEC section 1)."""
    return html_text(text)


def _wrap(text: str, width: int = 90) -> str:
    """Plotly hover labels do not wrap: break the message into lines of about ``width`` chars."""
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "<br>".join([*lines, line])
