"""``scan --format sarif``: SARIF 2.1.0 (OASIS), as GitHub code scanning and other SARIF readers
take it (SPEC section 3).

One run; ``tool.driver.rules`` is the check catalogue (``rules.catalogue``) and each finding is one
result whose location is the segment with the batch's byte range, and whose
``partialFingerprints["kafkaAudit/v1"]`` is the finding's fingerprint.

GitHub code scanning shows a result only with a ``region.startLine`` (the SARIF multitool's GHAS
rule GH1003) and, where a result has no ``primaryLocationLineHash``, hashes the text at that line
itself. A segment is binary: its results carry line 1 (:data:`BINARY_START_LINE`, said in each
rule's help) beside the batch's ``byteOffset``/``byteLength``, and ``primaryLocationLineHash`` is the
finding's fingerprint, so that two findings of one segment never merge into one alert. A broker
log line keeps its own line; a partition folder or the PATH scanned (a finding with no batch) is
line 1 too. Every result has a location.

GitHub's documented limits on an upload (docs.github.com, "SARIF support for code scanning" and
"SARIF results exceed one or more limits"): 10 MB per gzip-compressed file, 20 runs per file,
25,000 results per run of which only the top 5,000 by severity are kept, 25,000 rules per run,
1,000 locations per result. This writes one run, one rule per check and one location per result, and keeps
at most :data:`MAX_RESULTS` results, most severe first (then in SPEC order); what it leaves out
is counted in ``runs[0].properties``.
"""

from __future__ import annotations

import gzip
from typing import Any

from kafka_audit.audit.results import ScanResult
from kafka_audit.check_ids import CheckId
from kafka_audit.report.ci_formats.locations import Locator, Where
from kafka_audit.report.safe_text import dumps, uri_path
from kafka_audit.rules.catalogue import CHECKS, DESCRIPTIONS, UNCOMPRESSED_OFFSET_DELTAS, Check, Severity
from kafka_audit.rules.findings import FINGERPRINT_VERSION, Finding, partition_label

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
# The tool's page (``tool.driver.informationUri``): the package's page on the Python Package Index.
INFORMATION_URI = "https://pypi.org/project/kafka-audit/"
# The line a result in a binary file (a segment) or a folder points at: there are no lines; the
# region's byteOffset/byteLength say which batch.
BINARY_START_LINE = 1
_LINE_NOTE = (
    f" Location: a segment is binary, so a result in one is at line {BINARY_START_LINE}; its region's "
    "byteOffset and byteLength are the batch (the position and size `kafka-audit dump` shows)."
)
# GitHub stores the top 5,000 results of a run (and rejects a run of more than 25,000).
MAX_RESULTS = 5_000
# GitHub rejects a file whose gzip-compressed size exceeds 10 MB; keep a margin under it.
MAX_GZIP_BYTES = 9_500_000
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
# The finding fields a result carries in its property bag (the rest are in the result proper).
_PROPERTIES = (
    "severity", "topic", "partition", "offset", "batch_base_offset", "batch_last_offset", "record_index",
    "producer_id", "producer_epoch", "sequence", "transactional_id", "timestamp", "time", "error_code",
    "error_name", "client_outcome", "details", "baseline",
)


def to_sarif(result: ScanResult, version: str, baseline_used: bool = False) -> str:
    """The SARIF log of a scan. ``baseline_used``: a ``--baseline`` was given, so each result says
    whether it is new or known (``baselineState``)."""
    rule_ids = list(CHECKS)
    kept = _kept(result.findings, MAX_RESULTS)
    while True:
        document = _document(result, version, rule_ids, kept, baseline_used)
        text = dumps(document, ensure_ascii=False)  # compact: the C encoder
        if len(kept) == 0 or len(gzip.compress(text.encode("utf-8"))) <= MAX_GZIP_BYTES:
            return text
        kept = kept[: len(kept) // 2]


def _kept(findings: list[Finding], limit: int) -> list[Finding]:
    """The first ``limit`` findings by severity, then SPEC order (GitHub keeps the most severe)."""
    if len(findings) <= limit:
        return findings
    order = sorted(range(len(findings)), key=lambda i: (-Severity(findings[i].severity).rank, i))
    return [findings[i] for i in sorted(order[:limit])]


def _document(result: ScanResult, version: str, rule_ids: list[str], kept: list[Finding], baseline_used: bool) -> dict:
    index = {rule_id: number for number, rule_id in enumerate(rule_ids)}
    locator = Locator(result.summary.get("paths", []))
    properties: dict[str, Any] = {"summary": _summary(result.summary)}
    if len(kept) < len(result.findings):
        properties["truncated"] = {
            "results_total": len(result.findings),
            "results_written": len(kept),
            "note": f"{len(result.findings) - len(kept):,} findings left out to stay within GitHub's upload "
            f"limits (top {MAX_RESULTS:,} results per run, 10 MB compressed), most severe kept; "
            "--format json lists them all",
        }
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "kafka-audit",
                        "version": version,
                        "informationUri": INFORMATION_URI,
                        "rules": [_rule(CHECKS[rule_id]) for rule_id in rule_ids],
                    }
                },
                "results": [_result(f, index[f.check], baseline_used, locator) for f in kept],
                "properties": properties,
            }
        ],
    }


def _rule(check: Check) -> dict[str, Any]:
    """A check of the catalogue as a SARIF reportingDescriptor."""
    rule_id = str(check.id)
    return {
        "id": rule_id,
        "name": "".join(part.capitalize() for part in rule_id.split("_")),
        "shortDescription": {"text": DESCRIPTIONS[rule_id]},
        "fullDescription": {"text": DESCRIPTIONS[rule_id]},
        "help": {"text": _help(check)},
        "defaultConfiguration": {"level": _LEVEL[check.severity]},
        "properties": {"tags": ["kafka", str(check.group)]},
    }


def _help(check: Check) -> str:
    """The Kafka error a broker answers and what a producer does with it (KIP-691)."""
    if check.id == CheckId.BROKER_REJECTION:
        return "The Kafka error is the one in the broker's log line; the client outcome is that error's."
    error = f"Kafka error: {check.error.name} ({check.error.code})" if check.error else "Kafka error: none (no broker answers one)"
    exception = f" ({check.client_exception})" if check.client_exception else ""
    text = f"{error}. Client outcome: {check.client_outcome}{exception}."
    if check.id == CheckId.RECORD_TOO_LARGE:
        text += " Over segment.bytes: RECORD_LIST_TOO_LARGE (18), abortable."
    if check.id == UNCOMPRESSED_OFFSET_DELTAS.id:  # the catalogue's one variant of a check
        text += " In an uncompressed v2 batch, non-consecutive deltas are a warning with no Kafka error."
    return text + _LINE_NOTE


def _result(finding: Finding, rule_index: int, baseline_used: bool, locator: Locator) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": finding.check,
        "ruleIndex": rule_index,
        "level": _LEVEL[Severity(finding.severity)],
        "message": {"text": finding.message or finding.check},
        # GitHub's own key, from the fingerprint: a binary segment has no line text to hash.
        "partialFingerprints": {FINGERPRINT_VERSION: finding.fingerprint, "primaryLocationLineHash": finding.fingerprint},
        "properties": {name: getattr(finding, name) for name in _PROPERTIES},
        "locations": [_location(finding, locator)],
    }
    # SPEC section 3: this finding's remedy (rules/remedies.py); the rule's help stays generic.
    result["properties"]["remedy"] = finding.details.get("remedy")
    if baseline_used:
        result["baselineState"] = "unchanged" if finding.baseline else "new"
    return result


def _location(finding: Finding, locator: Locator) -> dict[str, Any]:
    """The result's one location: the file or folder :class:`Locator` names (the current folder
    for a scan that names no PATH), with a region that always has a ``startLine``."""
    place = locator.where(finding) or Where(".")
    region: dict[str, Any] = {"startLine": place.line if place.line is not None else BINARY_START_LINE}
    if place.byte_offset is not None:
        region["byteOffset"] = place.byte_offset
        if place.byte_length is not None:
            region["byteLength"] = place.byte_length
    physical: dict[str, Any] = {"artifactLocation": {"uri": uri_path(place.path)}, "region": region}
    location: dict[str, Any] = {"physicalLocation": physical}
    if finding.topic is not None:
        location["logicalLocations"] = [{"name": partition_label(finding.topic, finding.partition), "kind": "module"}]
    return location


def _summary(summary: dict[str, Any]) -> dict[str, Any]:
    """The scan's counts (the JSON report's summary without the per-segment byte table)."""
    return {key: value for key, value in summary.items() if key != "segment_bytes"}
