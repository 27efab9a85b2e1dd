"""The postmortem views of a scan, built on the driver after the audit (SPEC sections 1 and 3):
the report filters (``--producer-id``, ``--since``, ``--until``), the ``producers`` rows'
finding counts and transactional ids, and the ``timeline`` events."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from kafka_audit.audit.results import ScanResult
from kafka_audit.rules.events import Event, EventKind
from kafka_audit.rules.findings import Finding
from kafka_audit.rules.replay.producer_activity import count_findings


@dataclass(frozen=True, slots=True)
class ReportFilter:
    """What a report keeps: findings, producer rows and events of these producer ids (None:
    all), in the window [since, until] of batch timestamps (epoch ms; None: open)."""

    producer_ids: frozenset[int] | None = None
    since: int | None = None
    until: int | None = None

    @property
    def active(self) -> bool:
        return self.producer_ids is not None or self.since is not None or self.until is not None

    def _producer(self, producer_id: int | None) -> bool:
        return self.producer_ids is None or producer_id in self.producer_ids

    def _in_window(self, first: int | None, last: int | None) -> bool:
        """Whether [first, last] meets the window; a time the log does not hold is outside any
        window (it cannot be said to lie inside)."""
        if self.since is None and self.until is None:
            return True
        if first is None or last is None:
            return False
        return (self.since is None or last >= self.since) and (self.until is None or first <= self.until)

    def keeps_finding(self, finding: Finding) -> bool:
        return self._producer(finding.producer_id) and self._in_window(finding.timestamp, finding.timestamp)

    def keeps_row(self, row: dict[str, Any]) -> bool:
        """A producer row is kept when the producer was active in the window."""
        return self._producer(row["producer_id"]) and self._in_window(row["first_timestamp"], row["last_timestamp"])

    def keeps_event(self, event: Event) -> bool:
        return self._producer(event.producer_id) and self._in_window(event.timestamp, event.timestamp)

    def describe(self) -> dict[str, Any]:
        return {
            "producer_ids": sorted(self.producer_ids) if self.producer_ids is not None else None,
            "since": self.since,
            "until": self.until,
        }


def finish_views(result: ScanResult, keep: ReportFilter) -> ScanResult:
    """Apply the filter: keep what it reports, and recount the summary and each producer row's
    findings over that (in place; returns ``result``)."""
    if not keep.active:
        return result
    result.findings = [f for f in result.findings if keep.keeps_finding(f)]
    result.producers = [row for row in result.producers if keep.keeps_row(row)]
    result.summary["filter"] = keep.describe()
    result.summary["findings_by_check"] = dict(sorted(Counter(f.check for f in result.findings).items()))
    result.summary["findings_by_severity"] = dict(sorted(Counter(f.severity for f in result.findings).items()))
    result.summary["findings_baseline"] = sum(f.baseline for f in result.findings)
    count_findings(result.producers, result.findings)
    return result


def finding_event(finding: Finding) -> Event:
    """A finding as a timeline row (``kind`` ``finding``)."""
    return Event(
        kind=EventKind.FINDING,
        topic=finding.topic or "",
        partition=finding.partition if finding.partition is not None else -1,
        offset=finding.offset,
        timestamp=finding.timestamp,
        producer_id=finding.producer_id,
        producer_epoch=finding.producer_epoch,
        message=finding.message,
        check=finding.check,
    )


def event_order(event: Event) -> tuple:
    """Time order, ties by offset (SPEC section 3), then what happened before what was found
    about it; events without a time last."""
    return (
        event.timestamp is None,
        event.timestamp if event.timestamp is not None else 0,
        event.offset if event.offset is not None else -1,
        event.topic,
        event.partition,
        str(event.kind) == str(EventKind.FINDING),
        event.check or "",
    )


def timeline(result: ScanResult, keep: ReportFilter) -> list[Event]:
    """The events of the scan in time order: the replay's events (``ScanOptions.timeline``) and
    one row per reported finding. A finding that is itself an event (an ``epoch_bump`` or
    ``producer_expired`` of the replay, a ``broker_rejection`` of a broker log line, at the same
    offset of the same producer) is that event's row, with its ``check`` set, rather than the same
    story twice."""
    events = [e for e in result.events if keep.keeps_event(e)]
    same: dict[tuple[str, str | None, int | None, int | None, int | None], int] = {
        (e.check or str(e.kind), e.topic, e.partition, e.offset, e.producer_id): i for i, e in enumerate(events)
    }
    for finding in result.findings:
        at = same.pop((finding.check, finding.topic, finding.partition, finding.offset, finding.producer_id), None)
        if at is not None:
            events[at] = replace(events[at], check=finding.check)
        else:
            events.append(finding_event(finding))
    events.sort(key=event_order)
    return events


def event_rows(events: list[Event], transactional_ids: dict[int | None, str]) -> list[dict[str, Any]]:
    """Events as dicts in the SPEC field order, each with its producer's transactional id."""
    rows = []
    for event in events:
        data = event.to_dict()
        rows.append(
            {
                "timestamp": data["timestamp"],
                "time": data["time"],
                "topic": data["topic"],
                "partition": data["partition"],
                "offset": data["offset"],
                "producer_id": data["producer_id"],
                "producer_epoch": data["producer_epoch"],
                "transactional_id": transactional_ids.get(event.producer_id) if event.producer_id is not None else None,
                "kind": data["kind"],
                "check": data["check"],
                "message": data["message"],
            }
        )
    return rows
