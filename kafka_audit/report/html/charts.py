"""The report's per-partition swim-lane charts (Plotly figures, drawn in the page by the embedded
plotly.js): one lane per producer with its epochs (bars labelled with the epoch's sequence range)
and transactions (committed, aborted, open), a lane of broker log lines and a lane of the
partition's own events (log-start moves, snapshots, findings without a producer); epoch bumps,
findings and the other events are markers on one time axis, each with hover details.

Everything comes from the audit's producer rows and timeline events (:func:`views.timeline`);
nothing is recomputed here. Past :class:`Limits` a chart aggregates: the producers beyond
``lanes`` share one lane, transactions are binned in time when there are more than ``points``,
and markers beyond ``points`` are counted in the chart's title rather than drawn."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from kafka_audit.report.html.chart_facts import ChartFacts, OpenEnd
from kafka_audit.report.html.chart_markers import (
    BROKER_LANE,
    PARTITION_LANE,
    TXN_KINDS,
    Lanes,
    Trace,
    chart_text,
    make_trace,
    marker_traces,
)
from kafka_audit.rules.events import Event, EventKind
from kafka_audit.rules.findings import Finding, iso_time, partition_label

_TXN_COLOR = {"committed": "#2ca02c", "aborted": "#d62728", "open": "#ff7f0e", "hanging": "#b2182b"}
# A chart's x axis spans at least this long (ms): a lone marker gets second-sized ticks, not
# sub-millisecond ones; and it is padded by this share of its span on each side.
_MIN_SPAN_MS, _PAD = 2_000, 0.04
# Lane height, the chart's frame (title, axis) and one row of its legend in px.
_LANE_PX, _FRAME_PX, _LEGEND_ROW_PX = 34, 90, 20
# A chart of at most this many lanes and markers is drawn at half width, two side by side.
_SMALL_LANES, _SMALL_MARKS = 2, 3
_EPOCH_COLORS = ("#c6dbef", "#9ecae1", "#6baed6", "#bcbddc", "#9e9ac8")
# Transaction bars run in the lower part of their lane, below the epoch's label in its middle.
_TXN_WIDTH, _TXN_OFFSET = 0.22, 0.1
# Time bins per lane at least, when transactions are binned.
_MIN_BINS = 8


@dataclass(frozen=True, slots=True)
class Limits:
    """Where the report stops drawing one by one and aggregates (each a shown limit)."""

    findings_rows: int = 5_000
    producer_rows: int = 2_000
    charts: int = 40
    lanes: int = 25
    points: int = 1_500

    def halved(self) -> Limits:
        return Limits(*(max(1, value // 2) for value in (self.findings_rows, self.producer_rows,
                                                         self.charts, self.lanes, self.points)))


@dataclass(slots=True)
class Chart:
    """One partition's chart: its label, the Plotly figure as JSON-ready dict, what was left out,
    and whether it is small (few lanes and markers: half width)."""

    label: str
    figure: dict[str, Any]
    traces: int
    not_drawn: int = 0
    small: bool = False


@dataclass(slots=True)
class Charted:
    """The charts drawn; the partitions past the limit; those with an error or warning finding but
    nothing with a time to draw (their findings are in the tables)."""

    charts: list[Chart]
    uncharted: list[str]
    blank: list[str]


def partition_charts(producers: list[dict[str, Any]], events: list[Event], limits: Limits,
                     findings: list[Finding] | None = None) -> Charted:
    """Every partition with an error, then with a warning finding (most first), then the others
    by their events, charted in that order until ``limits.charts`` charts are drawn: a partition
    with nothing to draw takes no slot."""
    facts = ChartFacts.of(findings or [], producers)
    rows_by: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for row in producers:
        rows_by[(row["topic"], row["partition"])].append(row)
    events_by: dict[tuple[str, int], list[Event]] = defaultdict(list)
    for event in events:
        events_by[(event.topic, event.partition)].append(event)

    def rank(key: tuple[str, int]) -> tuple:
        errors, warnings = facts.severity.get(key, (0, 0))
        return (-errors, -warnings, -_weight(events_by[key]), key)

    done = Charted([], [], [])
    for key in sorted(set(rows_by) | set(events_by) | set(facts.severity), key=rank):
        if len(done.charts) >= limits.charts:
            done.uncharted.append(partition_label(*key))
            continue
        chart = _chart(key, rows_by[key], events_by[key], limits, facts)
        if chart.traces:
            done.charts.append(chart)
        elif key in facts.severity:
            done.blank.append(partition_label(*key))
    return done


def _weight(events: list[Event]) -> int:
    return sum(1 for e in events if e.kind == EventKind.FINDING or e.check)


def _chart(key: tuple[str, int], rows: list[dict[str, Any]], events: list[Event], limits: Limits,
           facts: ChartFacts) -> Chart:
    lanes, rest = _lanes(rows, events, limits.lanes)
    ends = {pid: end for (topic, partition, pid), end in facts.open_ends.items() if (topic, partition) == key}
    whole = _whole(rows, events, [e.end for e in ends.values()])
    traces = [*_epoch_traces(rows, lanes, events, whole),
              *_transaction_traces(rows, events, lanes, limits.points, ends, whole)]
    markers, not_drawn = marker_traces(events, lanes, limits.points, facts.bump_reasons)
    traces.extend(markers)
    label = partition_label(*key)
    title = chart_text(label) + (f" - {not_drawn:,} events not drawn (in the tables)" if not_drawn else "")
    title += f" - {rest:,} more producers share the last lane" if rest else ""
    order = [BROKER_LANE, PARTITION_LANE, *lanes.names.values(), *([lanes.others] if lanes.others else [])]
    shown = [lane for lane in order if any(lane in t.get("y", ()) for t in traces)]
    marks = sum(len(t.get("x", ())) for t in markers)
    small = len(shown) <= _SMALL_LANES and marks <= _SMALL_MARKS and not rest
    legend_rows = -(-len(traces) // (2 if small else 5)) if len(traces) > 1 else 0  # Plotly shows no legend for one trace
    layout = {
        "title": {"text": title, "x": 0, "font": {"size": 14}},
        "barmode": "overlay",
        "height": _FRAME_PX + _LANE_PX * max(2, len(shown)) + _LEGEND_ROW_PX * legend_rows,
        "margin": {"l": 10, "r": 10, "t": 36, "b": 34 + _LEGEND_ROW_PX * legend_rows},
        "hovermode": "closest",
        "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "font": {"size": 11}},
        "xaxis": {"type": "date", "title": None, "automargin": True, "range": _x_range(whole), "gridcolor": "#e6e6e6"},
        "yaxis": {"categoryorder": "array", "categoryarray": shown[::-1], "automargin": True, "type": "category"},
        "plot_bgcolor": "#fafafa",
    }
    return Chart(label, {"data": traces, "layout": layout}, len(traces), not_drawn, small)


def _x_range(whole: tuple[int, int]) -> list[str | None]:
    """The x axis range: the chart's span padded, and at least :data:`_MIN_SPAN_MS` wide."""
    span = max(whole[1] - whole[0], _MIN_SPAN_MS)
    middle = (whole[0] + whole[1]) // 2
    half = int(span * (0.5 + _PAD))
    return [iso_time(max(0, middle - half)), iso_time(middle + half)]


def _lanes(rows: list[dict[str, Any]], events: list[Event], limit: int) -> tuple[Lanes, int]:
    """Producers with findings first, then the busiest, one lane each up to ``limit``."""
    found: dict[int, int] = defaultdict(int)
    for event in events:
        if event.check and event.producer_id is not None:
            found[event.producer_id] += 1
    ranked = sorted(rows, key=lambda r: (-found[r["producer_id"]], -r["batches"], r["producer_id"]))
    lanes = Lanes()
    for row in ranked[:limit]:
        name = f"pid {row['producer_id']}"
        lanes.names[row["producer_id"]] = name + (f"<br>{chart_text(row['transactional_id'])}" if row["transactional_id"] else "")
    rest = len(ranked) - len(lanes.names)
    if rest:
        lanes.others = f"{rest:,} other producers"
    return lanes, rest


def _span(start: int, end: int, whole: tuple[int, int]) -> int:
    """A bar's length in ms, at least 1/400 of the chart's span so a short one stays visible."""
    return max(end - start, (whole[1] - whole[0]) // 400, 1)


def _whole(rows: list[dict[str, Any]], events: list[Event], ends: list[int]) -> tuple[int, int]:
    """The chart's time span: producers' batches, events, and the open transactions' ends."""
    times = [t for r in rows for t in (r["first_timestamp"], r["last_timestamp"]) if t is not None]
    times += [e.timestamp for e in events if e.timestamp is not None] + ends
    return (min(times), max(times)) if times else (0, 0)


def _epoch_traces(rows: list[dict[str, Any]], lanes: Lanes, events: list[Event], whole: tuple[int, int]) -> list[Trace]:
    """One bar per (producer, epoch): from the epoch's first batch (its bump event; the first
    epoch from the producer's first batch) to the next epoch's start or the producer's last batch."""
    bumps = {(e.producer_id, e.producer_epoch): e.timestamp for e in events
             if e.kind == EventKind.EPOCH_BUMP and e.timestamp is not None}
    bars: dict[str, list] = defaultdict(list)
    for row in rows:
        lane = lanes.names.get(row["producer_id"])
        if lane is None or row["first_timestamp"] is None or row["last_timestamp"] is None:
            continue
        epochs = row["epochs"]
        starts = [row["first_timestamp"]] + [bumps.get((row["producer_id"], e), row["first_timestamp"]) for e in epochs[1:]]
        for i, epoch in enumerate(epochs):
            start = starts[i]
            end = starts[i + 1] if i + 1 < len(epochs) else row["last_timestamp"]
            seq = row["sequences"].get(str(epoch))
            seq_text = f"seq {seq[0]}-{seq[1]}" if seq else "no sequences"
            bars["lane"].append(lane)
            bars["base"].append(iso_time(start))
            bars["x"].append(_span(start, max(end, start), whole))
            bars["text"].append(f"e{epoch} {seq_text}")
            bars["color"].append(_EPOCH_COLORS[i % len(_EPOCH_COLORS)])
            bars["hover"].append(
                f"producer {row['producer_id']} epoch {epoch}<br>{seq_text}<br>"
                f"offsets {row['first_offset']}-{row['last_offset']} (producer)<br>"
                f"{iso_time(start)} - {iso_time(end)}"
            )
    traces = _others_bar(rows, lanes, whole)
    if not bars:
        return traces
    return traces + [make_trace("bar", name="epochs (sequence range)", orientation="h", y=bars["lane"], base=bars["base"], x=bars["x"],
                   width=0.7, text=bars["text"], textposition="inside", insidetextanchor="middle",
                   marker={"color": bars["color"], "line": {"width": 0.5, "color": "#555"}},
                   hovertext=bars["hover"], hoverinfo="text")]


def _others_bar(rows: list[dict[str, Any]], lanes: Lanes, whole: tuple[int, int]) -> list[Trace]:
    """The shared lane of the producers beyond the limit: one bar over their active time."""
    others = [r for r in rows if r["producer_id"] not in lanes.names and r["first_timestamp"] is not None]
    if lanes.others is None or not others:
        return []
    start = min(r["first_timestamp"] for r in others)
    end = max(r["last_timestamp"] for r in others)
    hover = (f"{len(others):,} producers<br>{sum(r['batches'] for r in others):,} batches, "
             f"{sum(r['records'] for r in others):,} records<br>{iso_time(start)} - {iso_time(end)}")
    return [make_trace("bar", name="other producers", orientation="h", y=[lanes.others], base=[iso_time(start)],
                   x=[_span(start, end, whole)], width=0.7, marker={"color": "#d9d9d9"},
                   hovertext=[hover], hoverinfo="text")]


def _transaction_traces(rows: list[dict[str, Any]], events: list[Event], lanes: Lanes, points: int,
                        ends: dict[int, OpenEnd], whole: tuple[int, int]) -> list[Trace]:
    """Transactions from their begin to their commit or abort marker, a bar each; an open one to
    the reference time its finding measured it against (``--reference-time``, else the
    partition's newest timestamp), a hanging one with the LSO it holds back, else to the
    producer's last batch. More than ``points`` are binned in time per lane."""
    last = {r["producer_id"]: r["last_timestamp"] for r in rows}
    began: dict[int, int] = {}
    spans: list[tuple[str, int, int, str]] = []  # lane, start, end, outcome
    for event in events:
        if event.kind not in TXN_KINDS or event.timestamp is None or event.producer_id is None:
            continue
        lane = lanes.of(event.producer_id)
        if lane is None:
            continue
        if event.kind == EventKind.TRANSACTION_BEGIN:
            began.setdefault(event.producer_id, event.timestamp)
            continue
        start = began.pop(event.producer_id, event.timestamp)
        spans.append((lane, start, event.timestamp, "committed" if event.kind == EventKind.TRANSACTION_COMMIT else "aborted"))
    open_bars = []
    for pid, start in began.items():
        end = ends.get(pid)
        if end is not None and end.hanging and lanes.of(pid):
            open_bars.append(_hanging_bar(lanes.of(pid) or "", start, end, whole))
            continue
        stop = end.end if end is not None else last.get(pid) or start
        spans.append((lanes.of(pid) or "", start, max(start, stop), "open"))
    if not spans:
        return open_bars
    if len(spans) > points:
        return open_bars + _binned_transactions(spans, whole, max(_MIN_BINS, points // (len(lanes.names) + 1)))
    traces = open_bars
    for outcome in ("committed", "aborted", "open"):
        chosen = [s for s in spans if s[3] == outcome]
        if chosen:
            traces.append(make_trace("bar",
                name=f"transactions {outcome}", orientation="h", y=[s[0] for s in chosen],
                base=[iso_time(s[1]) for s in chosen], x=[_span(s[1], s[2], whole) for s in chosen],
                width=_TXN_WIDTH, offset=_TXN_OFFSET, marker={"color": _TXN_COLOR[outcome]}, hoverinfo="text",
                hovertext=[f"transaction {outcome}<br>{iso_time(s[1])} - {iso_time(s[2])}" for s in chosen]))
    return traces


def _hanging_bar(lane: str, start: int, end: OpenEnd, whole: tuple[int, int]) -> Trace:
    """A hanging transaction: from its first batch to the reference time, labelled with the last
    stable offset it pins (every read_committed consumer waits there)."""
    held = f": {end.records_blocked:,} offsets held back" if end.records_blocked is not None else ""
    return make_trace("bar",
        name="transaction hanging (LSO pinned)", orientation="h", y=[lane], base=[iso_time(start)],
        x=[_span(start, max(start, end.end), whole)], width=_TXN_WIDTH * 1.6, offset=_TXN_OFFSET - 0.1,
        marker={"color": _TXN_COLOR["hanging"], "pattern": {"shape": "/"}}, text=[f"hanging: LSO {end.last_stable_offset}"],
        textposition="inside", insidetextanchor="start", hoverinfo="text",
        hovertext=[f"transaction hanging<br>{iso_time(start)} - {iso_time(end.end)} (reference time)<br>"
                   f"pins the last stable offset at {end.last_stable_offset}{held}"])


def _binned_transactions(spans: list[tuple[str, int, int, str]], whole: tuple[int, int], bins: int) -> list[Trace]:
    """Transactions counted per lane in ``bins`` equal time bins (by start): a bar per non-empty
    bin, orange when one is open, else red when at least half aborted, else green; the counts on
    hover."""
    width = max(1, (whole[1] - whole[0]) // bins + 1)
    counts: dict[tuple[str, int], dict[str, int]] = defaultdict(lambda: {"committed": 0, "aborted": 0, "open": 0})
    for lane, start, _end, outcome in spans:
        counts[(lane, (start - whole[0]) // width)][outcome] += 1
    lanes, bases, colors, hovers = [], [], [], []
    for (lane, n), c in sorted(counts.items()):
        start = whole[0] + n * width
        lanes.append(lane)
        bases.append(iso_time(start))
        colors.append(_TXN_COLOR["open" if c["open"] else "aborted" if 2 * c["aborted"] >= sum(c.values()) else "committed"])
        hovers.append(f"{sum(c.values()):,} transactions from {iso_time(start)} to {iso_time(start + width)}<br>"
                      f"{c['committed']:,} committed, {c['aborted']:,} aborted, {c['open']:,} open")
    return [make_trace("bar", name=f"transactions ({len(spans):,}, binned)", orientation="h", y=lanes, base=bases,
                   x=[width] * len(lanes), width=_TXN_WIDTH, offset=_TXN_OFFSET, marker={"color": colors}, hovertext=hovers, hoverinfo="text")]


