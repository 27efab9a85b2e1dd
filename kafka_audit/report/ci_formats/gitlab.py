"""``scan --format gitlab``: a GitLab Code Quality report (SPEC section 3), the subset of the Code
Climate issue format GitLab reads (docs.gitlab.com, ci/testing/code_quality, "Implement a custom
tool"): a JSON array of issues with ``description``, ``check_name``, ``fingerprint``, ``severity``
(``info``, ``minor``, ``major``, ``critical``, ``blocker``), ``location.path`` (a relative path)
and ``location.lines.begin``.

Severities: an error a producer cannot recover from (client outcome ``fatal``) is ``critical``,
any other error ``major``, a warning ``minor``, an info ``info``. A segment is a binary file, so a
finding in one points at line 1 (the byte position is in the description). A finding the
``--baseline`` lists is ``info``; a ``broker_rejection``
points at its line in the broker log.
"""

from __future__ import annotations

from typing import Any

from kafka_audit.audit.results import ScanResult
from kafka_audit.report.ci_formats.locations import Locator, title
from kafka_audit.report.safe_text import dumps
from kafka_audit.rules.catalogue import ClientOutcome, Severity
from kafka_audit.rules.findings import Finding

# Where a finding outside any file and partition points (a report needs a path).
_NO_FILE = "."


def severity(finding: Finding) -> str:
    """The Code Quality severity of a finding; a known one (``--baseline``) is ``info``, as it
    is a notice in ``--format github`` and never fails the gate."""
    if finding.baseline:
        return "info"
    level = Severity(finding.severity)
    if level is Severity.ERROR:
        return "critical" if finding.client_outcome == ClientOutcome.FATAL else "major"
    return "minor" if level is Severity.WARNING else "info"


def to_gitlab(result: ScanResult) -> str:
    """One issue per line (compact JSON: the C encoder; ``indent`` takes the pure-Python one)."""
    locator = Locator(result.summary.get("paths", []))
    issues = [dumps(_issue(f, locator), ensure_ascii=False) for f in result.findings]
    return "[\n" + ",\n".join(issues) + "\n]\n" if issues else "[]\n"


def _issue(finding: Finding, locator: Locator) -> dict[str, Any]:
    place = locator.where(finding)
    path = place.path if place is not None else _NO_FILE
    line = place.line if place is not None and place.line is not None else 1
    position = f" (byte {place.byte_offset})" if place is not None and place.byte_offset is not None else ""
    return {
        "type": "issue",
        "description": f"{title(finding)}{position}: {finding.message or finding.check}",
        "check_name": finding.check,
        "fingerprint": finding.fingerprint,
        "severity": severity(finding),
        "categories": ["Bug Risk"],
        "location": {"path": path or _NO_FILE, "lines": {"begin": line}},
    }

