"""What an audit hands back, on either engine: :class:`ScanResult`, and :class:`Progress` as it goes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafka_audit.rules.events import Event
from kafka_audit.rules.findings import Finding


@dataclass(slots=True)
class ScanResult:
    """What a scan found: findings in SPEC order and the summary counts of SPEC section 3;
    ``events``: the replay's timeline events (``ScanOptions.timeline``), in log order per partition."""

    findings: list[Finding]
    summary: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    # The ``producers`` rows (SPEC section 3), by topic, partition, producer id.
    producers: list[dict[str, Any]] = field(default_factory=list)
    # Every (topic, partition) scanned, sorted, findings or not (a JUnit test case each).
    partitions: list[tuple[str, int]] = field(default_factory=list)


@dataclass(slots=True)
class Progress:
    """How far an audit is, for the progress display: segment tasks and their bytes audited,
    then partition replicas replayed. Both engines update it and pass it to ``on_progress``."""

    segments_total: int = 0
    bytes_total: int = 0
    partitions_total: int = 0
    segments_done: int = 0
    bytes_done: int = 0
    partitions_done: int = 0
