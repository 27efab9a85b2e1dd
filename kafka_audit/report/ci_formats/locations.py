"""Where a finding points a CI tool: the segment file (with the batch's byte range), the broker
log file and line of a ``broker_rejection``, or the partition folder of a finding that concerns a
partition as a whole.

CI tools resolve a path against the project the job runs in, while a finding's ``segment`` is
relative to the PATH that found it (SPEC section 1). So a segment's path here is the PATH joined
with it (the first PATH under which that file exists), and an absolute local path is written
relative to the current folder: ``kafka-audit scan captured-logs/`` run at the top of a checkout
points annotations at ``captured-logs/orders-0/00000000000000000000.log``.
"""

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


class Locator:
    """The locations of one scan's findings (``roots``: the scan's PATHs as given)."""

    def __init__(self, roots: list[str]) -> None:
        self.roots = [r for r in roots if "://" not in r]
        # Where a finding outside any partition and file points: the (first) PATH scanned, as
        # GitHub code scanning takes no result without a location.
        self.scanned = _relative(roots[0]) if roots else None
        self._seen: dict[str, str] = {}

    def where(self, finding: Finding) -> Where | None:
        """The file a finding is about; for one outside any partition and file, the PATH scanned
        (None when the scan names none)."""
        if finding.segment:
            length = finding.batch_size if finding.position is not None else None
            return Where(self.file_path(finding.segment), None, finding.position, length)
        log_file = finding.details.get("log_file")
        if isinstance(log_file, str) and log_file:
            path, sep, line = log_file.rpartition(":")
            if sep and line.isdigit() and path:
                return Where(_relative(path), int(line))
            return Where(_relative(log_file))
        if finding.topic is not None and finding.partition is not None and finding.partition >= 0:
            return Where(self.file_path(partition_label(finding.topic, finding.partition)))
        return Where(self.scanned) if self.scanned else None

    def file_path(self, segment: str) -> str:
        """A segment's path as the CI job sees it: under the first local PATH that holds it, else
        as the finding names it (a URI, a PATH given as the file itself, a file gone since)."""
        if segment not in self._seen:
            found = segment
            if "://" not in segment and not os.path.isabs(segment):
                for root in self.roots:
                    candidate = os.path.join(root, segment)
                    if os.path.isdir(root) and os.path.lexists(candidate):
                        found = candidate
                        break
            self._seen[segment] = _relative(found)
        return self._seen[segment]


def _relative(path: str) -> str:
    """A local absolute path relative to the current folder; relative paths and URIs as they are."""
    return os.path.relpath(path) if os.path.isabs(path) else path


def title(finding: Finding) -> str:
    """``check`` at ``topic-partition@offset``: one line naming a finding."""
    place = partition_label(finding.topic, finding.partition) if finding.topic is not None else "kafka-audit"
    at = f"@{finding.offset}" if finding.offset is not None else ""
    known = " (baseline)" if finding.baseline else ""
    return f"{finding.check} at {place}{at}{known}"
