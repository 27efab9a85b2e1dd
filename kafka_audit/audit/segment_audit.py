"""The audit of one segment (or one byte range of it): the work of one Spark task.

Walks the batches, turns decoding problems into findings, re-runs the record rules of
:mod:`kafka_audit.rules.validation.log_validator` on every batch whose CRC holds, and streams a
:class:`BatchSummary` per batch for the partition-level replay. Nothing is kept per batch:
findings and summaries are yielded as they are found, counts are accumulated in ``stats``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Literal, overload

from kafka_audit.audit.quick_path import FORMAT_LABELS, QuickPath
from kafka_audit.audit.segment_findings import SegmentFindings
from kafka_audit.audit.segment_task import SegmentStats, SegmentTask
from kafka_audit.io.local_file import FileChanged
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.internal_topics import count_unread, unread_test_for_topic
from kafka_audit.record.batch_records import BatchRecords
from kafka_audit.record.batch_walk import COMPILED as WALK_COMPILED
from kafka_audit.record.batch_walk import BatchColumns
from kafka_audit.record.control_record import ControlRecord
from kafka_audit.record.file_records import FileRecords
from kafka_audit.record.problem import Problem
from kafka_audit.record.record_batch import (
    COMPRESSION_CODEC_MASK,
    RecordBatch,
)
from kafka_audit.record.record_screen import RecordScreen
from kafka_audit.rules.batch_summary import BatchSummary, SummaryColumns
from kafka_audit.rules.catalogue import CheckId
from kafka_audit.rules.findings import Finding, partition_label
from kafka_audit.rules.validation.batch_validation import validate_appended_size, validate_batch_header
from kafka_audit.rules.validation.control_batch import validate_control_batch
from kafka_audit.rules.validation.log_validator import (
    ValidationConfig,
    Violation,
    validate_records,
)

# Findings of one check listed one by one per task; the rest are counted in one last finding. A
# segment of garbage with plausible framing (every message skipped by its size after a bad CRC)
# would otherwise give millions of findings, all to be collected by the driver.
MAX_FINDINGS_PER_CHECK = 1000


def _with_record(details: dict, record_index: int | None) -> dict:
    return details if record_index is None else {**details, "record": record_index}


def _decode_violation(problem: Problem) -> Violation:
    """A problem met reading a batch's records. A v0/v1 inner message whose CRC-32 is wrong is a
    culprit record (SPEC section 2: the inner message's offset and ``record_index``); the others
    are exceptions, not RecordValidationExceptions: the broker's answer names no record (KIP-467
    record_errors empty), so neither does the finding, and its details say where reading stopped."""
    if problem.check == CheckId.CRC_MISMATCH:
        return Violation(problem.check, problem.message, problem.record_index, problem.offset,
                         _with_record(problem.details, problem.record_index))
    return Violation(problem.check, problem.message, details=_with_record(problem.details, problem.record_index))


class SegmentAuditor(QuickPath, SegmentFindings):
    """Iterate :meth:`run` for the findings and summaries of one task, its segment read under
    ``storage`` (the request's; none: one of ``task.storage_options``); read ``stats`` after."""

    def __init__(
        self,
        task: SegmentTask,
        config: ValidationConfig,
        reference_time: int | None = None,
        storage: StorageContext | None = None,
    ) -> None:
        self.task = task
        self.config = config
        self.storage = storage if storage is not None else StorageContext(task.storage_options)
        # SPEC: the reference time defaults to the segment file's modification time. Only an
        # object in a store has none, and timestamp bounds over a URI need --reference-time
        # (audit.scan_options.reference_time_problem refuses the scan before it starts).
        self.reference_time = reference_time if reference_time is not None else task.file.mtime_ms
        self.stats = SegmentStats(segments=1 if task.start == 0 else 0)
        self.topic_partition = partition_label(task.topic, task.partition)
        self.compacted = config.is_compacted(task.topic)
        # The quick path's screens, by the attribute bits they depend on (control, timestamp type).
        self._quick_screens: dict[int, RecordScreen] = {}
        # The quick path's counts, folded into ``stats`` when the walk ends: v2 batches per codec id.
        self._quick_codecs = [0] * (COMPRESSION_CODEC_MASK + 1)
        self._quick_records = 0
        # The newest batch timestamp read so far: the time a finding without a batch (bytes that
        # do not hold one) concerns, as those bytes were written after it.
        self._last_timestamp: int | None = None
        self._counts: Counter = Counter()  # findings per check (run)
        # Findings of a batch counted but not listed (a streamed batch's beyond the cap), added
        # to ``_counts`` once the batch's listed findings have passed :meth:`_capped`.
        self._omitted: Counter = Counter()
        # An internal topic's test for records its decoder cannot read (unknown type or version, or
        # not decodable by its schema), which are counted.
        self._internal = unread_test_for_topic(task.topic)
        # The compiled walk over runs of batches with nothing to report (not for an internal topic,
        # whose records are also counted by type).
        self._compiled = self._compiled_walk() if WALK_COMPILED and self._internal is None else None

    @overload
    def run(self) -> Iterator[Finding | BatchSummary]: ...

    @overload
    def run(self, columns: Literal[True]) -> Iterator[Finding | BatchSummary | SummaryColumns]: ...

    def run(self, columns: bool = False) -> Iterator[Finding | BatchSummary | SummaryColumns]:
        """The task's findings (at most :data:`MAX_FINDINGS_PER_CHECK` of each check, then one
        that counts the rest) and its batch summaries, in file order. With ``columns``, the runs
        of batches the compiled walk took come as :class:`SummaryColumns` (no object per batch);
        iterating one gives its summaries."""
        self._counts = Counter()
        yield from self._walk(columns)
        for check, count in sorted(self._counts.items()):
            if count > MAX_FINDINGS_PER_CHECK:
                more = count - MAX_FINDINGS_PER_CHECK
                message = f"{more} more {check} findings in {self.task.file.display_path} (not listed one by one)"
                yield self._finding(check, message, None, details={"more_findings": more})

    def _capped(self, findings: Iterable[Finding]) -> Iterator[Finding]:
        """The findings of a check while it has given fewer than :data:`MAX_FINDINGS_PER_CHECK`;
        the rest are only counted (the walk yields its summaries around this, without a count)."""
        counts = self._counts
        for finding in findings:
            counts[finding.check] += 1
            if counts[finding.check] <= MAX_FINDINGS_PER_CHECK:
                yield finding
        if self._omitted:
            counts.update(self._omitted)
            self._omitted.clear()

    # The segment step's loop over batches: one generator level per batch (bench/run.py measures
    # it); the rare branches (problems, a bad CRC's batch, a failed read) are helpers.
    def _walk(self, columns: bool) -> Iterator[Finding | BatchSummary | SummaryColumns]:
        task = self.task
        segment = self._open()
        if not isinstance(segment, FileRecords):
            if segment is not None:
                yield from self._capped((segment,))
            return
        with segment:
            stop = self._range_read(segment)
            pending: list[Problem] = []
            next_offset = task.file.base_offset if task.start == 0 else None
            walked = task.start
            first = True
            try:
                items = (
                    segment.batches(task.start, task.stop) if self._compiled is None
                    else segment.runs_and_batches(self._compiled, task.start, task.stop)
                )
                for item in items:
                    if isinstance(item, BatchColumns):
                        first = False
                        walked, next_offset = self._fold_run(item)
                        run = SummaryColumns(task.topic, task.partition, task.file.display_path, task.file.base_offset, item)
                        if columns:
                            yield run
                        else:
                            yield from run
                        continue
                    if first and task.start == 0 and isinstance(item, Problem) and self._not_a_segment(item):
                        yield from self._capped((self._not_a_segment_finding(item),))
                        return
                    first = False
                    if isinstance(item, Problem):
                        found = self._on_problem(item, segment, next_offset, pending)
                        if found:
                            yield from self._capped(found)
                        continue
                    if pending:
                        yield from self._capped(self._pending_findings(item, pending))
                        pending.clear()
                    walked = item.position
                    next_offset = item.last_offset + 1
                    summary = self._quick_summary(segment.buffer, item)
                    if summary is None:
                        findings, summary = self._audit_batch(segment, item)
                        if findings:
                            yield from self._capped(findings)
                    if item.max_timestamp >= 0:
                        self._last_timestamp = item.max_timestamp
                    if self._internal is not None and item.crc_valid:
                        self.stats.internal_records_unknown += count_unread(segment, item, self._internal)
                    yield summary
            except FileChanged as exc:
                yield from self._capped((self._changed_mid_walk(exc, walked, stop),))
            except OSError as exc:
                yield from self._capped((self._read_failed(exc, walked, stop),))
            finally:
                self._walk_ended(segment)

    def _range_read(self, segment: FileRecords) -> int:
        """Count the task's byte range of ``segment`` as read; the position where the range ends."""
        task = self.task
        stop = segment.size if task.stop is None else min(task.stop, segment.size)
        read = max(0, stop - task.start)
        self.stats.bytes += read
        self.stats.bytes_read[task.file.display_path] += read
        return stop

    def _walk_ended(self, segment: FileRecords) -> None:
        """Fold the quick path's counts into ``stats``, and note a segment changed under the walk."""
        self._fold_quick_counts()
        how = segment.changed()
        if how is not None:
            self.stats.changed[self.task.file.display_path] = how

    def _audit_batch(self, segment: FileRecords, batch: RecordBatch) -> tuple[list[Finding], BatchSummary]:
        """The findings of one batch (most have none) and its summary for the partition step."""
        findings: list[Finding] = []
        stats = self.stats
        stats.batches += 1
        stats.formats[FORMAT_LABELS.get(batch.magic) or f"v{batch.magic}"] += 1
        stats.codecs[batch.compression] += 1
        control = None
        valid = batch.crc_valid
        is_control = batch.is_control
        if valid:
            decoded = segment.records(batch, with_data=is_control)
            self._omitted.update(decoded.omitted)
            batch = decoded.batch or batch
            stats.records += decoded.count
            violations, control = self._validate(batch, decoded)
            for v in violations:
                findings.append(
                    self._finding(
                        v.check, v.message, batch, offset=v.offset, record_index=v.record_index,
                        details=v.details, error=v.error, spec=v.spec,
                    )
                )
            # A batch whose records cannot be read back is not trusted for the replay either.
            if decoded.problems:
                valid = not any(p.check == CheckId.DECOMPRESSION_FAILED for p in decoded.problems)
        task = self.task
        return findings, BatchSummary.of(
            task.topic, task.partition, task.file.display_path, task.file.base_offset, batch, valid, control
        )

    def _validate(self, batch: RecordBatch, decoded: BatchRecords) -> tuple[list[Violation], ControlRecord | None]:
        """The broker's validation stages in its order; the first that rejects the batch answers
        it (UnifiedLog.analyzeAndValidateRecords, LogValidator.validateBatch, the records, then
        UnifiedLog.append's segment.bytes check). Record problems met decoding (DefaultRecordBatch's
        iterator throws InvalidRecordException: DefaultRecord.readFrom's "Found invalid record
        structure" / "Invalid record size" and the iterator's "Incorrect declared batch size", all
        INVALID_RECORD, filed under non_monotonic_offsets, the SPEC row of a count that disagrees
        with the records present; AbstractLegacyRecordBatch and validateRecord's ensureValid throw
        CorruptRecordException) stop the record stage as the exception stops the broker's loop. Returns the violations and a well-formed control record."""
        config, topic_partition, compacted = self.config, self.topic_partition, self.compacted
        header = validate_batch_header(batch, topic_partition, config, compacted=compacted, topic=self.task.topic)
        if header:
            return header, None
        control = None
        violations: list[Violation] = []
        if batch.is_control:
            violations, control = validate_control_batch(batch, decoded.records, compacted=compacted)
        if decoded.problems:
            violations += [_decode_violation(p) for p in decoded.problems]
        else:
            violations += validate_records(
                batch, decoded.records, self.task.topic, topic_partition, config, self.reference_time,
                self._omitted, MAX_FINDINGS_PER_CHECK,
            )
        if not any(v.spec is None for v in violations):
            appended = validate_appended_size(batch, topic_partition, config)
            if appended is not None:
                violations.append(appended)
        return violations, control
