"""The culprit records of the findings shown in the HTML report: for a finding that names a record
(``record_index``, KIP-467's index in the batch), that record's key, value and headers as the
incident's reader wants to see them, read back from its segment at the finding's position (one
batch per finding: the audit itself reads sizes only). With a :class:`Redactor` (``report
--redact``) the key, value and header values are replaced by their length and keyed hash."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from kafka_audit.record.file_records import FileRecords
from kafka_audit.record.record_batch import Record, RecordBatch
from kafka_audit.report.redact import Redactor
from kafka_audit.rules.findings import Finding

# How many bytes of a key, value or header value the report shows.
PREVIEW_BYTES = 96


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the report shows of one culprit record (text already cut or redacted)."""

    offset: int
    key: str | None
    value: str | None
    headers: tuple[tuple[str, str | None], ...]

    def lines(self) -> list[str]:
        shown = [f"offset {self.offset}", f"key: {_none(self.key)}", f"value: {_none(self.value)}"]
        shown.extend(f"header {name}: {_none(value)}" for name, value in self.headers)
        return shown


def culprit_records(
    findings: Iterable[Finding], segment_paths: dict[str, str], redact: Redactor | None
) -> dict[int, Evidence]:
    """Evidence by ``id()`` of each finding with a record index whose segment is known (its
    display path in ``segment_paths``) and whose batch still reads at the finding's position; a
    segment that cannot be opened gives no evidence (the audit has its own finding about it)."""
    wanted: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.record_index is not None and finding.position is not None and finding.segment in segment_paths:
            wanted.setdefault(segment_paths[finding.segment], []).append(finding)
    found: dict[int, Evidence] = {}
    for path, items in wanted.items():
        try:
            with FileRecords(path) as segment:
                for finding in items:
                    record = _record_at(segment, finding)
                    if record is not None:
                        found[id(finding)] = _evidence(record, redact)
        except OSError:
            continue
    return found


def _record_at(segment: FileRecords, finding: Finding) -> Record | None:
    position = finding.position
    assert position is not None
    batch = next(segment.batches(position, position + 1), None)
    if not isinstance(batch, RecordBatch) or batch.position != position:
        return None
    records = segment.records(batch, with_data=True).records
    return next((r for r in records if r.index == finding.record_index), None)


def _evidence(record: Record, redact: Redactor | None) -> Evidence:
    show = redact if redact is not None else _preview
    return Evidence(
        record.offset,
        show(record.key),
        show(record.value),
        tuple((h.key, show(h.value)) for h in record.headers),
    )


def _preview(data: bytes | None) -> str | None:
    """UTF-8 text where valid, other bytes and control characters escaped (``\\xNN``), cut at
    :data:`PREVIEW_BYTES` with the size."""
    if data is None:
        return None
    text = bytes(data[:PREVIEW_BYTES]).decode("utf-8", errors="backslashreplace")
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return text if len(data) <= PREVIEW_BYTES else f"{text}... ({len(data):,} bytes)"


def _none(value: str | None) -> str:
    return "null" if value is None else value


def segment_files(paths: list[str], displayed: set[str]) -> dict[str, str]:
    """Where to open each segment that findings show (display path -> file): the display path is
    relative to the PATH that found it, or that PATH itself (SPEC section 1). Local files only; a
    display path that two PATHs would both explain is left out rather than guessed."""
    files: dict[str, str] = {}
    for display in displayed:
        candidates = {display} if display in paths else set()
        candidates |= {os.path.join(root, display) for root in paths if "://" not in root and os.path.isdir(root)}
        found = [c for c in candidates if "://" not in c and os.path.isfile(c)]
        if len(found) == 1:
            files[display] = found[0]
    return files
