"""Where the producer-state replay of one partition writes: its findings and timeline events.

Each part of the replay (:mod:`~kafka_audit.rules.replay.partition_replay`, transactions, epoch bumps,
snapshot comparison) is given this object and writes here; none reads another's state.
"""

from __future__ import annotations

from typing import Any

from kafka_audit.rules.events import Event, EventKind
from kafka_audit.rules.findings import BatchFields, Finding, make_finding, partition_label


def _timestamp(batch: BatchFields | None) -> int | None:
    ts = getattr(batch, "max_timestamp", None)
    return ts if ts is not None and ts >= 0 else None


class ReplayOutput:
    """The findings and (with ``timeline``) the timeline events of one partition's replay."""

    def __init__(self, topic: str, partition: int, timeline: bool) -> None:
        self.topic = topic
        self.partition = partition
        self.tp = partition_label(topic, partition)
        self.timeline = timeline
        self.findings: list[Finding] = []
        self.events: list[Event] = []

    def finding(
        self, check: str, message: str, batch: BatchFields | None, details: dict[str, Any] | None = None, offset: int | None = None, **kw: Any
    ) -> Finding:
        found = make_finding(
            check,
            message,
            topic=self.topic,
            partition=self.partition,
            segment=getattr(batch, "segment", None),
            offset=offset,
            batch=batch,
            details=details,
            **kw,
        )
        self.findings.append(found)
        return found

    def event(self, kind: EventKind, batch: BatchFields | None, message: str, offset: int | None = None, timestamp: int | None = None) -> None:
        if not self.timeline:
            return
        self.events.append(
            Event(
                kind=kind,
                topic=self.topic,
                partition=self.partition,
                offset=offset if offset is not None else getattr(batch, "base_offset", None),
                timestamp=timestamp if timestamp is not None else _timestamp(batch),
                producer_id=getattr(batch, "producer_id", None),
                producer_epoch=getattr(batch, "producer_epoch", None),
                message=message,
            )
        )

    def extend(self, findings: list[Finding]) -> None:
        self.findings.extend(findings)
