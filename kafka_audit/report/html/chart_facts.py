"""What a scan's findings add to the report's charts (:mod:`.charts`): which partitions hold
errors and warnings (charted first), where an open transaction's bar ends and the last stable
offset it pins, and why each epoch bump finding happened (a fenced instance stands out from the
routine transactions-v2 bumps)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from kafka_audit.rules.catalogue import CheckId, Severity
from kafka_audit.rules.findings import Finding


@dataclass(frozen=True, slots=True)
class OpenEnd:
    """Where an open transaction's bar ends: the reference time its age was measured against
    (``--reference-time``, else the partition's newest timestamp), and the LSO it holds back."""

    end: int
    hanging: bool
    last_stable_offset: int | None
    records_blocked: int | None


@dataclass(slots=True)
class ChartFacts:
    """What the findings add to the charts: per partition its error and warning counts, the ends
    of its open transactions by producer id, and the reason of each epoch bump finding by offset."""

    severity: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    open_ends: dict[tuple[str, int, int], OpenEnd] = field(default_factory=dict)
    bump_reasons: dict[tuple[str, int, int], str] = field(default_factory=dict)

    @classmethod
    def of(cls, findings: list[Finding], producers: list[dict[str, Any]]) -> ChartFacts:
        facts = cls()
        last = {(r["topic"], r["partition"], r["producer_id"]): r["last_timestamp"] for r in producers}
        counts: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])
        for f in findings:
            if f.topic is None or f.partition is None:
                continue
            if f.severity in (Severity.ERROR, Severity.WARNING):
                counts[(f.topic, f.partition)][0 if f.severity == Severity.ERROR else 1] += 1
            if f.check in (CheckId.HANGING_TRANSACTION, CheckId.OPEN_TRANSACTION) and f.producer_id is not None:
                seen = last.get((f.topic, f.partition, f.producer_id))
                age = f.details.get("age_ms")
                if seen is not None and isinstance(age, int):  # the age is reference time - last batch
                    facts.open_ends[(f.topic, f.partition, f.producer_id)] = OpenEnd(
                        seen + age, f.check == CheckId.HANGING_TRANSACTION,
                        f.details.get("last_stable_offset"), f.details.get("records_blocked"))
            if f.check == CheckId.EPOCH_BUMP and f.offset is not None:
                facts.bump_reasons[(f.topic, f.partition, f.offset)] = str(f.details.get("reason", ""))
        facts.severity = {key: (e, w) for key, (e, w) in counts.items()}
        return facts
