"""Where a finding points a CI tool: the segment file (with the batch's byte range), the broker
log file and line of a ``broker_rejection``, or the partition folder of a finding that concerns a
partition as a whole. CI tools resolve paths against the project a job runs in, so an absolute
local path (a ``--broker-log`` or PATH given as one) is written relative to the current folder."""

from __future__ import annotations

import os
from dataclasses import dataclass

from kafka_audit.rules.findings import Finding, partition_label


@dataclass(frozen=True, slots=True)
class Where:
    path: str
    line: int | None = None  # a text file's line (broker logs); segments are binary
    byte_offset: int | None = None
    byte_length: int | None = None


def where(finding: Finding) -> Where | None:
    """The file a finding is about, as the scan named it (relative to the PATH that found it), or
    None for a finding outside any partition and file."""
    if finding.segment:
        length = finding.batch_size if finding.position is not None else None
        return Where(_relative(finding.segment), None, finding.position, length)
    log_file = finding.details.get("log_file")
    if isinstance(log_file, str) and log_file:
        path, sep, line = log_file.rpartition(":")
        if sep and line.isdigit() and path:
            return Where(_relative(path), int(line))
        return Where(_relative(log_file))
    if finding.topic is not None and finding.partition is not None and finding.partition >= 0:
        return Where(partition_label(finding.topic, finding.partition))
    return None


def _relative(path: str) -> str:
    """A local absolute path relative to the current folder; relative paths and URIs as they are."""
    return os.path.relpath(path) if os.path.isabs(path) else path


def title(finding: Finding) -> str:
    """``check`` at ``topic-partition@offset``: one line naming a finding."""
    place = partition_label(finding.topic, finding.partition) if finding.topic is not None else "kafka-audit"
    at = f"@{finding.offset}" if finding.offset is not None else ""
    known = " (baseline)" if finding.baseline else ""
    return f"{finding.check} at {place}{at}{known}"
