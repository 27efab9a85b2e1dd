"""The audit of one segment (or one byte range of it): the work of one Spark task.

Walks the batches, turns decoding problems into findings, re-runs the record rules of
:mod:`kafka_audit.rules.log_validator` on every batch whose CRC holds, and streams a
:class:`BatchSummary` per batch for the partition-level replay. Nothing is kept per batch:
findings and summaries are yielded as they are found, counts are accumulated in ``stats``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from kafka_audit.io import storage
from kafka_audit.record.batch_records import BatchRecords
from kafka_audit.record.control_record import ControlRecord, parse_control_key_value
from kafka_audit.record.default_record import RecordScreen
from kafka_audit.record.file_records import FileRecords
from kafka_audit.record.payload_screen import screen_payload
from kafka_audit.record.problem import Problem
from kafka_audit.record.range_buffer import first_read
from kafka_audit.record.record_batch import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    MAGIC_VALUE_V2,
    TIMESTAMP_TYPE_MASK,
    RecordBatch,
    codec_label,
)
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.catalogue import Check, CheckId
from kafka_audit.rules.findings import Finding, make_finding, partition_label
from kafka_audit.rules.log_validator import (
    ValidationConfig,
    Violation,
    control_record_screen,
    control_record_violation,
    record_screen,
    validate_appended_size,
    validate_batch_header,
    validate_batch_size,
    validate_control_batch,
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


@dataclass(frozen=True, slots=True)
class SegmentTask:
    """One unit of parsing work: a segment file, or the batches starting in ``[start, stop)``.

    ``replica`` is the partition folder's display path (with topic and partition, the key of
    the partition step); ``segment`` is the path shown in findings (relative to the PATH that
    found it); ``state`` is ``live``, ``deleted``, ``cleaned`` or ``swap``; ``mtime_ms`` is the
    file's modification time, the default reference time for timestamp checks (for an object
    in a store: when the store last wrote it, None when it tells none). ``storage_options``
    are the ``--storage-option`` settings the executor needs to read a URI.
    """

    topic: str
    partition: int
    replica: str
    path: str
    segment: str
    base_offset: int
    state: str = "live"
    mtime_ms: int | None = 0
    size: int = 0
    start: int = 0
    stop: int | None = None
    storage_options: tuple = field(default=(), repr=False, compare=False)  # credentials: not in reprs

    @property
    def replica_key(self) -> tuple[str, int, str]:
        return (self.topic, self.partition, self.replica)

    @property
    def byte_count(self) -> int:
        return (self.size if self.stop is None else self.stop) - self.start

    def byte_range(self, start: int, stop: int | None) -> "SegmentTask":
        """The same segment, restricted to the batches starting in ``[start, stop)``."""
        return replace(self, start=start, stop=stop)


def with_read_ahead(tasks: Iterable[SegmentTask]) -> Iterator[SegmentTask]:
    """The tasks in the same order; the first ranged read of each task on an object store starts
    while the task before it is audited, so the store's latency overlaps the parsing."""
    previous: SegmentTask | None = None
    for task in tasks:
        if task.size and storage.is_remote(task.path):
            storage.configure(task.storage_options)
            storage.prefetch_range(*_first_read(task))
        if previous is not None:
            yield previous
            _forget_first_read(previous)
        previous = task
    if previous is not None:
        yield previous
        _forget_first_read(previous)


def _first_read(task: SegmentTask) -> tuple[str, int, int]:
    return (task.path, *first_read(task.size, task.start, task.stop))


def _forget_first_read(task: SegmentTask) -> None:
    """A task done without taking its first read (it failed before): the bytes are dropped."""
    if task.size and storage.is_remote(task.path):
        storage.discard_prefetched([_first_read(task)])


@dataclass(slots=True)
class SegmentStats:
    """Counts for the summary panel; merged across tasks with :meth:`merge`.

    ``bytes_read`` holds the bytes read per segment (display path), ``unread`` why a segment
    could not be read in full: the driver sets them against the bytes discovery found, so a scan
    never calls clean what it did not read (``audit.finish_result``)."""

    segments: int = 0
    batches: int = 0
    records: int = 0
    bytes: int = 0
    formats: Counter = field(default_factory=Counter)
    codecs: Counter = field(default_factory=Counter)
    bytes_read: Counter = field(default_factory=Counter)
    unread: dict[str, str] = field(default_factory=dict)
    # Requests to an object store and the bytes fetched, where a Spark task counts them.
    requests: int = 0
    bytes_fetched: int = 0

    def merge(self, other: "SegmentStats") -> "SegmentStats":
        self.segments += other.segments
        self.batches += other.batches
        self.records += other.records
        self.bytes += other.bytes
        self.formats.update(other.formats)
        self.codecs.update(other.codecs)
        self.bytes_read.update(other.bytes_read)
        self.requests += other.requests
        self.bytes_fetched += other.bytes_fetched
        for segment, reason in other.unread.items():
            self.unread.setdefault(segment, reason)
        return self


def _with_record(details: dict, record_index: int | None) -> dict:
    return details if record_index is None else {**details, "record": record_index}


class SegmentAuditor:
    """Iterate :meth:`run` for the findings and summaries of one task; read ``stats`` after."""

    def __init__(self, task: SegmentTask, config: ValidationConfig, reference_time: int | None = None) -> None:
        self.task = task
        self.config = config
        storage.configure(task.storage_options)
        # SPEC: the reference time defaults to the segment file's modification time. Only an
        # object in a store has none, and timestamp bounds over a URI need --reference-time
        # (audit.reference_time_problem refuses the scan before it starts).
        self.reference_time = reference_time if reference_time is not None else task.mtime_ms
        self.stats = SegmentStats(segments=1 if task.start == 0 else 0)
        self.topic_partition = partition_label(task.topic, task.partition)
        self.compacted = config.is_compacted(task.topic)
        # record_screen depends on the batch only through its format, control bit and timestamp
        # type: one lookup per batch instead of building the screen again.
        self._screens: dict[tuple[int, int], RecordScreen | None] = {}
        # The quick path's screens, by the attribute bits they depend on (control, timestamp type).
        self._quick_screens: dict[int, RecordScreen] = {}
        # The quick path's counts, folded into ``stats`` when the walk ends: v2 batches per codec id.
        self._quick_codecs = [0] * (COMPRESSION_CODEC_MASK + 1)
        self._quick_records = 0
        # The newest batch timestamp read so far: the time a finding without a batch (bytes that
        # do not hold one) concerns, as those bytes were written after it.
        self._last_timestamp: int | None = None
        self._counts: Counter = Counter()  # findings per check (run)

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

    def _walk(self) -> Iterator[Finding | BatchSummary]:
        task = self.task
        try:
            segment = FileRecords(task.path, task.size or None)
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
            if segment.size < task.size:
                self.stats.unread[task.segment] = (
                    f"the file shrank from {task.size:,} to {segment.size:,} bytes between discovery and reading"
                )
            pending: list[Problem] = []
            walked = task.start
            first = True
            try:
                for item in segment.batches(task.start, task.stop):
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
                        if item.check == CheckId.CRC_MISMATCH:
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
                    summary = self._quick_summary(segment.buffer, item)
                    if summary is None:
                        findings, summary = self._audit_batch(segment, item)
                        if findings:
                            yield from self._capped(findings)
                    if item.max_timestamp >= 0:
                        self._last_timestamp = item.max_timestamp
                    yield summary
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
                screen = control_record_screen(batch, config, self.reference_time)
            else:
                screen = record_screen(batch, task.topic, config, self.reference_time)
            self._quick_screens[screen_key] = screen
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
        self._quick_records += batch.record_count
        return BatchSummary.of(task.topic, task.partition, task.segment, task.base_offset, batch, True, control)

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
            # Batches whose records pass the screen are not decoded record by record (fast path).
            screen_key = (batch.magic, batch.attributes & (CONTROL_FLAG_MASK | TIMESTAMP_TYPE_MASK))
            if screen_key in self._screens:
                screen = self._screens[screen_key]
            else:
                screen = self._screens[screen_key] = record_screen(
                    batch, self.task.topic, self.config, self.reference_time
                )
            decoded = segment.records(batch, with_data=is_control, screen=screen)
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
            # An exception, not a RecordValidationException: the broker's answer names no record
            # (KIP-467 record_errors empty), so neither does the finding; details say where it stopped.
            violations += [
                Violation(p.check, p.message, details=_with_record(p.details, p.record_index))
                for p in decoded.problems
            ]
        elif not decoded.passed_screen:  # a screened batch has no record-level violation
            violations += validate_records(
                batch, decoded.records, self.task.topic, topic_partition, config, self.reference_time
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
