"""The audit of one segment (or one byte range of it): the work of one Spark task.

Walks the batches, turns decoding problems into findings, re-runs the record rules of
:mod:`kafka_audit.rules.validation.log_validator` on every batch whose CRC holds, and streams a
:class:`BatchSummary` per batch for the partition-level replay. Nothing is kept per batch:
findings and summaries are yielded as they are found, counts are accumulated in ``stats``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from kafka_audit.audit.segment_task import SegmentStats, SegmentTask
from kafka_audit.io import storage
from kafka_audit.io.local_file import FileChanged
from kafka_audit.io.rsm_objects import EncryptedSegment
from kafka_audit.log.internal_topics import count_unread, unread_test_for_topic
from kafka_audit.record.batch_records import BatchRecords
from kafka_audit.record.batch_walk import COMPILED as WALK_COMPILED
from kafka_audit.record.batch_walk import BatchColumns, CompiledWalk
from kafka_audit.record.control_record import ControlRecord, parse_control_key_value
from kafka_audit.record.file_records import FileRecords
from kafka_audit.record.problem import Problem
from kafka_audit.record.record_batch import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    MAGIC_VALUE_V2,
    TIMESTAMP_TYPE_MASK,
    RecordBatch,
    codec_label,
)
from kafka_audit.record.record_screen import RecordScreen, screen_payload
from kafka_audit.rules.batch_summary import BatchSummary, SummaryColumns
from kafka_audit.rules.catalogue import INCOMPLETE_TAIL_LIVE, Check, CheckId
from kafka_audit.rules.findings import Finding, make_finding, partition_label
from kafka_audit.rules.validation.batch_validation import validate_appended_size, validate_batch_header, validate_batch_size
from kafka_audit.rules.validation.control_batch import control_record_violation, validate_control_batch
from kafka_audit.rules.validation.log_validator import (
    ValidationConfig,
    Violation,
    control_record_screen,
    record_screen,
    validate_records,
)

# Findings of one check listed one by one per task; the rest are counted in one last finding. A
# segment of garbage with plausible framing (every message skipped by its size after a bad CRC)
# would otherwise give millions of findings, all to be collected by the driver.
MAX_FINDINGS_PER_CHECK = 1000

# Problems of a batch's framing: at position 0 they may show a file that is no segment at all.
_FRAMING_CHECKS = frozenset({"truncated_batch", "invalid_batch_size", "unknown_magic"})
_INT_MAX = (1 << 31) - 1

# The summary panel's format labels (magic byte to label), built once.
_FORMAT_LABELS = {0: "v0", 1: "v1", 2: "v2"}


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


class SegmentAuditor:
    """Iterate :meth:`run` for the findings and summaries of one task; read ``stats`` after."""

    def __init__(self, task: SegmentTask, config: ValidationConfig, reference_time: int | None = None) -> None:
        self.task = task
        self.config = config
        storage.configure(task.storage_options)
        # SPEC: the reference time defaults to the segment file's modification time. Only an
        # object in a store has none, and timestamp bounds over a URI need --reference-time
        # (audit.scan_options.reference_time_problem refuses the scan before it starts).
        self.reference_time = reference_time if reference_time is not None else task.mtime_ms
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

    def run(self) -> Iterator[Finding | BatchSummary]:
        """The task's findings (at most :data:`MAX_FINDINGS_PER_CHECK` of each check, then one
        that counts the rest) and its batch summaries, in file order."""
        self._counts = Counter()
        yield from self._walk()
        for check, count in sorted(self._counts.items()):
            if count > MAX_FINDINGS_PER_CHECK:
                more = count - MAX_FINDINGS_PER_CHECK
                message = f"{more} more {check} findings in {self.task.segment} (not listed one by one)"
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

    # Over 60 lines on purpose: the segment step's loop over batches, with its problem, oversize and
    # read-failure branches inline (one generator level per batch; bench/run.py measures it).
    def _walk(self) -> Iterator[Finding | BatchSummary]:
        task = self.task
        try:
            segment = FileRecords(task.path, task.size or None, task.file_id)
        except FileChanged as exc:
            # Deleted by retention or swapped in by the cleaner since the listing (SPEC segment_changed).
            self.stats.segments = 0
            yield from self._capped((self._changed_finding(exc, task.start, task.byte_count),))
            return
        except EncryptedSegment as exc:
            # A tiered-storage segment this process cannot decrypt (SPEC 5: reason ``encrypted``).
            self.stats.unread[task.segment] = exc.reason
            self.stats.segments = 0
            return
        except OSError as exc:
            # Permission, I/O error, vanished since discovery, or not visible on this executor.
            self.stats.unread[task.segment] = f"cannot read ({exc.strerror or exc})"
            self.stats.segments = 0  # counted among segments_unreadable instead
            return
        with segment:
            stop = segment.size if task.stop is None else min(task.stop, segment.size)
            read = max(0, stop - task.start)
            self.stats.bytes += read
            self.stats.bytes_read[task.segment] += read
            pending: list[Problem] = []
            next_offset = task.base_offset if task.start == 0 else None
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
                        yield from SummaryColumns(task.topic, task.partition, task.segment, task.base_offset, item)
                        continue
                    if first and task.start == 0 and isinstance(item, Problem) and self._not_a_segment(item):
                        yield from self._capped((self._finding(
                            item.check,
                            f"Not a Kafka segment: the file does not start with a record batch ({item.message})",
                            None,
                            position=0,
                            details={"not_a_segment": True},
                        ),))
                        return
                    first = False
                    if isinstance(item, Problem):
                        if item.incomplete and task.newest and self._could_be_written(item):
                            yield from self._capped((self._incomplete_tail(item, segment, next_offset),))
                        elif item.check == CheckId.CRC_MISMATCH:
                            pending.append(item)  # its batch follows at once
                        else:
                            yield from self._capped((self._problem_finding(item, None),))
                        continue
                    if pending:
                        # The size comes before the CRC (validate_batch_size): an oversized batch
                        # with a bad CRC is answered MESSAGE_TOO_LARGE.
                        oversized = validate_batch_size(item, self.topic_partition, self.config)
                        if oversized is not None:
                            yield from self._capped(
                                (self._finding(oversized.check, oversized.message, item, details=oversized.details),)
                            )
                        else:
                            yield from self._capped(self._problem_finding(problem, item) for problem in pending)
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
                # Shrunk, deleted or swapped under the walk: pread came back short (SPEC
                # segment_changed); the bytes from the batch it stopped in are not read.
                self.stats.bytes -= stop - walked
                self.stats.bytes_read[task.segment] -= stop - walked
                yield from self._capped((self._changed_finding(exc, walked, stop - walked),))
            except OSError as exc:
                # A ranged read of an object in a store failed part way (network, object gone):
                # what was read is audited, the rest is said to be unread (SPEC section 1).
                yield from self._capped((self._finding(
                    CheckId.UNREADABLE_SEGMENT,
                    f"Reading {task.segment} failed after byte {walked}: {exc.strerror or exc}; "
                    f"the bytes from there to {stop} are not audited",
                    None,
                    position=walked,
                    details={"unread_bytes": stop - walked},
                ),))
            finally:
                self._fold_quick_counts()
                how = segment.changed()
                if how is not None:
                    self.stats.changed[task.segment] = how

    def _could_be_written(self, problem: Problem) -> bool:
        """Whether a cut-off batch's size field is one a broker writes: FileLogInputStream.nextBatch
        throws CorruptRecordException for a size above max.message.bytes before it looks at the
        end of the file, so such a size is corruption, not a write in progress."""
        return int(problem.details.get("size", 0)) <= self.config.max_message_bytes

    def _changed_finding(self, exc: FileChanged, position: int, not_read: int) -> Finding:
        """A ``segment_changed`` finding: what was listed and not read (counted as not read)."""
        self.stats.changed[self.task.segment] = exc.reason
        return self._finding(
            CheckId.SEGMENT_CHANGED,
            f"{self.task.segment} {exc.reason} during the scan ({exc.strerror}): {not_read:,} bytes from "
            f"position {position} were not read",
            None,
            position=position,
            details={"reason": exc.reason, "bytes_not_read": not_read},
        )

    def _incomplete_tail(self, problem: Problem, segment: FileRecords, next_offset: int | None) -> Finding:
        """The last batch of the partition's newest segment is cut off: LogSegment.recover would
        truncate the segment at its position (at ``next_offset``). Info when the file changed during
        the scan (a write in progress), a warning otherwise (an unclean stop, a copy taken mid-write)."""
        changed = segment.changed() is not None
        truncate_to = next_offset if next_offset is not None else problem.offset
        cut = problem.details.get("unread_bytes", 0)
        where = "a write in progress" if changed else "an unclean stop or a copy taken mid-write"
        return self._finding(
            CheckId.INCOMPLETE_TAIL,
            f"The newest segment ends inside its last batch ({cut:,} bytes at position {problem.position}): "
            f"{where}; recovery truncates the log at offset {truncate_to} ({problem.message})",
            None,
            position=problem.position,
            offset=problem.offset,
            details={"bytes": cut, "truncate_to_offset": truncate_to, "changed_during_scan": changed},
            spec=INCOMPLETE_TAIL_LIVE if changed else None,
        )

    def _not_a_segment(self, problem: Problem) -> bool:
        """Whether the framing problem at position 0 shows a file that is no segment at all: no
        batch header could be read there, or its base offset lies below the segment's base offset
        or more than Integer.MAX_VALUE above it, where no batch of this segment can be
        (LogSegment.canConvertToRelativeOffset)."""
        if problem.position != 0 or problem.check not in _FRAMING_CHECKS:
            return False
        offset = problem.offset
        return offset is None or not 0 <= offset - self.task.base_offset <= _INT_MAX

    def _quick_summary(self, buf, batch: RecordBatch) -> BatchSummary | None:
        """The summary of a v2 batch with a valid CRC and nothing to report, in one pass: the
        header rules, the payload inflated and screened in one call (:func:`screen_payload`), a
        control batch's one record parsed from its key and value, the appended size. None when
        any stage might report something: :meth:`_audit_batch` then audits the batch in full,
        so this path decides nothing :meth:`_audit_batch` would not (it skips only the work
        whose answer is known to be empty)."""
        if batch.magic != MAGIC_VALUE_V2 or not batch.crc_valid:
            return None
        config, topic_partition, task = self.config, self.topic_partition, self.task
        if validate_batch_header(batch, topic_partition, config, compacted=self.compacted, topic=task.topic):
            return None
        attributes = batch.attributes
        is_control = attributes & CONTROL_FLAG_MASK
        screen_key = attributes & (CONTROL_FLAG_MASK | TIMESTAMP_TYPE_MASK)
        screen = self._quick_screens.get(screen_key)
        if screen is None:
            if is_control:
                built = control_record_screen(batch, config, self.reference_time)
            else:
                built = record_screen(batch, task.topic, config, self.reference_time)
            assert built is not None  # every v2 batch has its screen
            screen = self._quick_screens[screen_key] = built
        passed = screen_payload(buf, batch, screen, is_control)
        control = None
        if is_control:
            # A control batch passes with its one record's (key, value) (validate_control_batch).
            if passed.__class__ is not tuple:
                return None
            control = parse_control_key_value(*passed)
            if control_record_violation(batch, control, None) is not None:
                return None
        elif passed is not True:
            return None
        if validate_appended_size(batch, topic_partition, config) is not None:
            return None
        self._quick_codecs[attributes & COMPRESSION_CODEC_MASK] += 1
        self._quick_records += batch.record_count or 0
        return BatchSummary.of(task.topic, task.partition, task.segment, task.base_offset, batch, True, control)

    def _compiled_walk(self) -> CompiledWalk:
        """The compiled walk with this task's settings: the record screens of a v2 data batch of
        each timestamp type (``log_validator.record_screen``, built from a header alone)."""
        config, topic = self.config, self.task.topic
        screens = []
        for attributes in (0, TIMESTAMP_TYPE_MASK):
            header = RecordBatch(0, 0, 0, MAGIC_VALUE_V2, 0, 0, True, attributes, 1, 0, 0, 0, 0, -1, -1, -1)
            screen = record_screen(header, topic, config, self.reference_time)
            assert screen is not None  # every v2 data batch has its screen
            screens.append(screen)
        return CompiledWalk(min(config.max_message_bytes, config.segment_bytes), *screens)

    def _fold_run(self, run: BatchColumns) -> tuple[int, int]:
        """Count a run of batches the compiled walk took (as :meth:`_quick_summary` counts one);
        the walk's position and next offset after it."""
        count = run.count
        codecs = run.column("compression").tobytes()
        for codec in set(codecs):
            self._quick_codecs[codec] += codecs.count(codec)
        self._quick_records += sum(run.column("record_count"))
        for timestamp in reversed(run.column("max_timestamp")):
            if timestamp >= 0:
                self._last_timestamp = timestamp
                break
        return run.column("position")[count - 1], run.column("last_offset")[count - 1] + 1

    def _fold_quick_counts(self) -> None:
        """Add the quick path's counts to ``stats`` (the full path counts as it goes)."""
        stats = self.stats
        for codec, count in enumerate(self._quick_codecs):
            if count:
                stats.batches += count
                stats.formats[_FORMAT_LABELS[MAGIC_VALUE_V2]] += count
                stats.codecs[codec_label(codec)] += count
        stats.records += self._quick_records
        self._quick_codecs = [0] * (COMPRESSION_CODEC_MASK + 1)
        self._quick_records = 0

    def _audit_batch(self, segment: FileRecords, batch: RecordBatch) -> tuple[list[Finding], BatchSummary]:
        """The findings of one batch (most have none) and its summary for the partition step."""
        findings: list[Finding] = []
        stats = self.stats
        stats.batches += 1
        stats.formats[_FORMAT_LABELS.get(batch.magic) or f"v{batch.magic}"] += 1
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
            task.topic, task.partition, task.segment, task.base_offset, batch, valid, control
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

    def _finding(
        self,
        check: str,
        message: str,
        batch: RecordBatch | None,
        *,
        position: int | None = None,
        offset: int | None = None,
        record_index: int | None = None,
        details: dict | None = None,
        error: str | None = None,
        spec: Check | None = None,
    ) -> Finding:
        """A finding in this task's segment (``details.segment_state`` for a non-live one)."""
        return make_finding(
            check,
            message,
            topic=self.task.topic,
            partition=self.task.partition,
            segment=self.task.segment,
            position=position,
            offset=offset,
            batch=batch,
            record_index=record_index,
            details=self._details(details or {}),
            timestamp=self._last_timestamp if batch is None else None,
            error=error,
            spec=spec,
        )

    def _problem_finding(self, problem: Problem, batch: RecordBatch | None) -> Finding:
        return self._finding(
            problem.check,
            problem.message,
            batch,
            position=problem.position,
            offset=problem.offset,
            record_index=problem.record_index,
            details=problem.details,
        )

    def _details(self, details: dict) -> dict:
        if self.task.state != "live":
            return {**details, "segment_state": self.task.state}
        return details
