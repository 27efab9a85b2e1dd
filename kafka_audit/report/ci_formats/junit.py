"""``scan --format junit``: JUnit XML for CI test-report widgets (SPEC section 3), written with
junitparser.

One ``testsuite`` per topic and one ``testcase`` per partition scanned. A partition with findings
that fail the gate (at or above ``--fail-on`` and not in the ``--baseline``) has a ``failure``
listing them; its other findings (below ``--fail-on``, or known) are listed in the test case's
``system-out``. Findings outside any partition (files that are not part of a Kafka log in the
scanned tree) make one more test case, ``(not in a partition)``, in a suite of that name.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from junitparser import Failure, JUnitXml, TestCase, TestSuite

from kafka_audit.audit.results import ScanResult
from kafka_audit.report.ci_formats.locations import Locator
from kafka_audit.report.safe_text import escape_text, xml_text
from kafka_audit.rules.findings import Finding, partition_label

# Not a Kafka topic name (those are [a-zA-Z0-9._-]), so no topic shares its suite.
_OUTSIDE = "(not in a partition)"


def to_junit(result: ScanResult, fail_on: str) -> str:
    """The JUnit XML document of a scan gated at ``fail_on`` (``error``, ``warning``, ``info``,
    ``never``)."""
    by_case: dict[tuple[str, int | None], list[Finding]] = defaultdict(list)
    for finding in result.findings:
        by_case[_case_key(finding)].append(finding)
    locator = Locator(result.summary.get("paths", []))
    keys = set(by_case) | {(topic, partition) for topic, partition in result.partitions}
    suites: dict[str, TestSuite] = {}
    for topic, partition in sorted(keys, key=lambda k: (k[0], k[1] if k[1] is not None else -2)):
        suite = suites.get(topic)
        if suite is None:
            suite = suites[topic] = TestSuite(_xml(topic))
        suite.add_testcase(_case(topic, partition, by_case.get((topic, partition), []), fail_on, locator))
    document = JUnitXml("kafka-audit")
    for suite in suites.values():
        suite.update_statistics()
        document.add_testsuite(suite)
    document.update_statistics()
    return xml_text(document.tostring().decode("utf-8"))


def _case_key(finding: Finding) -> tuple[str, int | None]:
    if finding.topic is None:
        return (_OUTSIDE, None)
    return (finding.topic, finding.partition)


def _case(topic: str, partition: int | None, findings: list[Finding], fail_on: str, locator: Locator) -> TestCase:
    name = _OUTSIDE if partition is None else partition_label(topic, partition)
    case = TestCase(_xml(name), classname=_xml(topic))
    failing = [f for f in findings if f.fails_gate(fail_on)]
    others = [f for f in findings if not f.fails_gate(fail_on)]
    if failing:
        counts = Counter(f.check for f in failing)
        listed = ", ".join(f"{count} {check}" for check, count in sorted(counts.items()))
        failure = Failure(_xml(f"{len(failing)} findings at or above {fail_on}: {listed}"), type_=failing[0].check)
        failure.text = "\n".join(_line(f, locator) for f in failing)
        case.result = [failure]
    if others:
        case.system_out = "\n".join(_line(f, locator) for f in others)
    return case


def _line(finding: Finding, locator: Locator) -> str:
    """One finding: severity, check, where (the segment as SARIF, GitHub and GitLab name it: the
    PATH joined with it), the message and the fingerprint; data escaped (:func:`_xml`)."""
    at = f"@{finding.offset}" if finding.offset is not None else ""
    segment = f" in {locator.file_path(finding.segment)}" if finding.segment else ""
    position = f" position {finding.position}" if finding.position is not None else ""
    known = " (baseline: known)" if finding.baseline else ""
    where = partition_label(finding.topic, finding.partition) if finding.topic is not None else _OUTSIDE
    return _xml(
        f"{finding.severity} {finding.check}{known} at {where}{at}{segment}{position}: "
        f"{finding.message} [fingerprint {finding.fingerprint}]"
    )


def _xml(text: str) -> str:
    """Data as XML 1.0 can hold it and a CI log shows it: control characters (which XML forbids
    or a terminal obeys) as ``\\xNN`` / ``\\uNNNN``, a surrogate escape of a path byte as
    ``\\xNN``, U+FFFE/U+FFFF (no XML character) as ``\\uNNNN``, runner commands broken (:func:`kafka_audit.report.safe_text.escape_text`)."""
    return escape_text(text).replace("\ufffe", "\\ufffe").replace("\uffff", "\\uffff")
