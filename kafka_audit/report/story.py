"""The incident told in words (SPEC section 3, ``report``): what happened, where, when, to whom and
what it cost, then the headline findings ranked by consequence, each with its remedy. Built from
a scan's findings only (pure: no I/O); the HTML report opens with it and ``scan``'s table output
ends with it.

The consequence classes, most severe first: 1 data lost or unreadable (a batch no consumer can
read, a segment not read, offsets or sequences lost), 2 consumers blocked (a hanging transaction
pins the last stable offset: ``kafka-transactions.sh find-hanging``), 3 producers failing, by the
KIP-691 outcome of what they saw (fatal, then abortable, then retriable; a fenced instance's epoch
bump among them), 4 other errors and warnings, 5 info."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from kafka_audit.rules.catalogue import CheckId, ClientOutcome, Severity
from kafka_audit.rules.findings import Finding, partition_label

MAX_HEADLINES = 7
# Producers named in the account before "and N more".
_NAMED = 5
# Errors of these checks lose data or make it unreadable (class 1).
DATA_CHECKS = frozenset(str(c) for c in (
    CheckId.CRC_MISMATCH, CheckId.TRUNCATED_BATCH, CheckId.INVALID_BATCH_SIZE, CheckId.UNKNOWN_MAGIC,
    CheckId.DECOMPRESSION_FAILED, CheckId.UNREADABLE_SEGMENT, CheckId.OFFSET_OVERLAP, CheckId.RECORD_TOO_LARGE,
    CheckId.OUT_OF_ORDER_SEQUENCE, CheckId.NEW_EPOCH_NONZERO_SEQUENCE, CheckId.DUPLICATE_SEQUENCE,
    CheckId.REMOTE_SEGMENT_MISSING, CheckId.REMOTE_SEGMENT_OVERLAP,
))
# The batches no consumer can read (CorruptRecordException in the consumer).
UNREADABLE_CHECKS = frozenset(str(c) for c in (
    CheckId.CRC_MISMATCH, CheckId.TRUNCATED_BATCH, CheckId.INVALID_BATCH_SIZE, CheckId.UNKNOWN_MAGIC,
    CheckId.DECOMPRESSION_FAILED,
))
CLASS_NAMES = {1: "data lost or unreadable", 2: "consumers blocked", 3: "producers failing", 4: "other warnings",
               5: "info"}
_OUTCOME_RANK = {ClientOutcome.FATAL: 0, ClientOutcome.ABORTABLE: 1, ClientOutcome.RETRIABLE: 2}
_SEVERITY_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


@dataclass(frozen=True, slots=True)
class Headline:
    """One headline: the first finding of a check's group, how many findings and partitions the
    group holds."""

    rank: int
    finding: Finding
    count: int
    partitions: int

    @property
    def short(self) -> str:
        f = self.finding
        where = partition_label(f.topic, f.partition) if f.topic is not None else "the log dir"
        if self.partitions > 1:
            where += f" and {self.partitions - 1:,} more partition{'s' if self.partitions - 1 > 1 else ''}"
        more = f", {self.count:,} findings" if self.count > 1 else ""
        return f"{f.severity} {f.check} ({CLASS_NAMES[self.rank]}{more}) in {where}"

    @property
    def title(self) -> str:
        return f"{self.short}: {self.finding.message}"

    @property
    def remedy(self) -> dict[str, Any] | None:
        found = self.finding.details.get("remedy")
        return found if isinstance(found, dict) else None


@dataclass(frozen=True, slots=True)
class Story:
    sentences: list[str]
    headlines: list[Headline]


def by_severity(findings: list[Finding]) -> list[Finding]:
    """Errors, then warnings, then info, each in the order given (SPEC order): the tables' order."""
    return sorted(findings, key=lambda f: _SEVERITY_RANK.get(Severity(f.severity), 3))


def consequence(finding: Finding) -> int:
    """The finding's consequence class (1 most severe, 5 least)."""
    if finding.severity == Severity.ERROR and finding.check in DATA_CHECKS:
        return 1
    if finding.check == CheckId.HANGING_TRANSACTION:
        return 2
    if finding.client_outcome in _OUTCOME_RANK:
        return 3
    return 5 if finding.severity == Severity.INFO else 4


def _rank_key(finding: Finding) -> tuple[int, int, int, int]:
    return (consequence(finding), 0 if finding.check in UNREADABLE_CHECKS else 1,
            _OUTCOME_RANK.get(ClientOutcome(finding.client_outcome), 3), _SEVERITY_RANK.get(Severity(finding.severity), 3))


def headlines(findings: list[Finding], limit: int = MAX_HEADLINES) -> list[Headline]:
    """At most ``limit`` headlines, one per check and consequence class (a fenced epoch bump is
    not a routine one), ranked by consequence, then by the client outcome (fatal first) and
    severity, then in SPEC order; each shows the group's first finding. Every class present gets
    its first group a slot before a class gets a second, so a log with many kinds of corruption
    still shows its blocked consumers and failing producers."""
    groups: dict[tuple, list[Finding]] = {}
    for finding in sorted(findings, key=_rank_key):
        groups.setdefault((finding.check, consequence(finding)), []).append(finding)
    ranked = list(groups.values())
    firsts = {id(next(g for g in ranked if consequence(g[0]) == rank)) for rank in {consequence(g[0]) for g in ranked}}
    chosen = [g for g in ranked if id(g) in firsts][:limit]
    chosen += [g for g in ranked if id(g) not in firsts][: limit - len(chosen)]
    chosen.sort(key=ranked.index)
    return [Headline(consequence(g[0]), g[0], len(g), len({(f.topic, f.partition) for f in g})) for g in chosen]


def tell(findings: list[Finding], summary: dict[str, Any]) -> Story:
    """The account in words and the headlines of one scan's findings and summary."""
    serious = [f for f in findings if f.severity != Severity.INFO]
    sentences = [_what(findings, serious, summary)]
    sentences += [s for s in (_when(serious or findings), _who(serious or findings)) if s]
    sentences += _cost(findings)
    return Story(sentences, headlines(findings))


def _what(findings: list[Finding], serious: list[Finding], summary: dict[str, Any]) -> str:
    scanned = (f"{summary.get('partitions', 0):,} partitions, {summary.get('batches', 0):,} batches and "
               f"{summary.get('records', 0):,} records")
    if not findings:
        return f"The audit of {scanned} found nothing to report."
    severities = Counter(f.severity for f in findings)
    counts = ", ".join(f"{severities[s]:,} {s}" for s in ("error", "warning", "info") if severities[s])
    places = sorted({partition_label(f.topic, f.partition) for f in (serious or findings) if f.topic is not None})
    checks = Counter(f.check for f in (serious or findings)).most_common(4)
    where = f" in {_listed(places, 'partition')}" if places else ""
    return (f"The audit of {scanned} found {counts}{where}; most often "
            + ", ".join(f"{check} ({n:,})" for check, n in checks) + ".")


def _when(findings: list[Finding]) -> str | None:
    times = sorted((f.timestamp, f.time) for f in findings if f.timestamp is not None and f.time)
    if not times:
        return None
    if times[0][0] == times[-1][0]:
        return f"It happened at {_shown(times[0][1])}."
    return f"It happened between {_shown(times[0][1])} and {_shown(times[-1][1])}."


def _who(findings: list[Finding]) -> str | None:
    producers: dict[int, str | None] = {}
    for f in findings:
        if f.producer_id is not None and f.producer_id >= 0:
            producers[f.producer_id] = producers.get(f.producer_id) or f.transactional_id
    if not producers:
        return None
    named = [f"{pid} ({txn})" if txn else str(pid) for pid, txn in sorted(producers.items())[:_NAMED]]
    rest = f" and {len(producers) - _NAMED:,} more" if len(producers) > _NAMED else ""
    noun = "Producer id" if len(producers) == 1 else "Producer ids"
    return f"{noun} involved: {', '.join(named)}{rest}."


def _cost(findings: list[Finding]) -> list[str]:
    """What it cost: unreadable batches and records, blocked consumers and the LSO each hanging
    transaction pins, producers fenced and the errors producers saw."""
    costs = []
    unreadable = [f for f in findings if f.check in UNREADABLE_CHECKS]
    if unreadable:
        records = sum(f.batch_last_offset - f.batch_base_offset + 1 for f in unreadable
                      if f.batch_last_offset is not None and f.batch_base_offset is not None)
        known = f" holding at least {records:,} records" if records else ""
        places = sorted({partition_label(f.topic, f.partition) for f in unreadable})
        costs.append(f"{len(unreadable):,} batches{known} cannot be read by a consumer, in {_listed(places, 'partition')}.")
    for f in (f for f in findings if f.check == CheckId.HANGING_TRANSACTION):
        d = f.details
        who = f" of producer {f.producer_id}" if f.producer_id is not None else ""
        costs.append(
            f"Every read_committed consumer of {partition_label(f.topic, f.partition)} is blocked behind the open "
            f"transaction{who} since offset {d.get('first_offset')}: it pins the last stable "
            f"offset at {d.get('last_stable_offset')} while the log ends at {d.get('log_end_offset')} "
            f"({d.get('records_blocked', 0):,} offsets held back).")
    fenced = sorted({f.producer_id for f in findings if f.producer_id is not None and (
        f.check == CheckId.FENCED_EPOCH_WRITE or (f.check == CheckId.EPOCH_BUMP and f.details.get("reason") == "fenced"))})
    if fenced:
        costs.append(f"{_listed([str(p) for p in fenced], 'producer')} fenced (a zombie instance or a new one taking over).")
    outcomes = Counter(f.client_outcome for f in findings if f.error_code is not None and f.client_outcome in _OUTCOME_RANK)
    if outcomes:
        costs.append("Producers saw " + ", ".join(f"{outcomes[o]:,} {o}" for o in _OUTCOME_RANK if outcomes[o])
                     + " errors (KIP-691).")
    return costs


def _listed(items: list[str], noun: str) -> str:
    shown = ", ".join(items[:_NAMED]) + (f" and {len(items) - _NAMED:,} more" if len(items) > _NAMED else "")
    return f"{len(items):,} {noun}{'' if len(items) == 1 else 's'} ({shown})"


def _shown(time: str) -> str:
    return time.replace("T", " ").removesuffix("Z") + " UTC"
