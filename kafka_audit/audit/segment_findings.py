"""The findings of one segment task that are not a batch's own, after Kafka's FileLogInputStream
and LogSegment.recover: a segment that cannot be opened, bytes that hold no batch, a cut-off tail, a
bad CRC, a read that failed or a file that changed under the walk; and the one maker of a task's
findings (:meth:`SegmentFindings._finding`).
"""

from __future__ import annotations

from kafka_audit.audit.segment_task import SegmentStats, SegmentTask
from kafka_audit.io.local_file import FileChanged
from kafka_audit.io.rsm_objects import EncryptedSegment
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.record.file_records import FileRecords
from kafka_audit.record.problem import Problem
from kafka_audit.record.record_batch import RecordBatch
from kafka_audit.rules.catalogue import INCOMPLETE_TAIL_LIVE, Check, CheckId
from kafka_audit.rules.findings import Finding, make_finding
from kafka_audit.rules.validation.batch_validation import validate_batch_size
from kafka_audit.rules.validation.log_validator import ValidationConfig

# Problems of a batch's framing: at position 0 they may show a file that is no segment at all.
_FRAMING_CHECKS = frozenset({CheckId.TRUNCATED_BATCH, CheckId.INVALID_BATCH_SIZE, CheckId.UNKNOWN_MAGIC})
_INT_MAX = (1 << 31) - 1


class SegmentFindings:
    """The finding makers of :class:`~kafka_audit.audit.segment_audit.SegmentAuditor`, its base;
    the state they read is the auditor's (set in its ``__init__``)."""

    task: SegmentTask
    config: ValidationConfig
    storage: StorageContext
    stats: SegmentStats
    topic_partition: str
    # The newest batch timestamp read so far (see SegmentAuditor).
    _last_timestamp: int | None

    def _open(self) -> FileRecords | Finding | None:
        """The task's segment opened; when it cannot be, a ``segment_changed`` finding or None (the
        segment is counted among the unread ones, with the reason)."""
        task = self.task
        try:
            return FileRecords(task.file.path, task.file.size or None, task.file.file_id, self.storage)
        except FileChanged as exc:
            # Deleted by retention or swapped in by the cleaner since the listing (SPEC segment_changed).
            self.stats.segments = 0
            return self._changed_finding(exc, task.start, task.byte_count)
        except EncryptedSegment as exc:
            # A tiered-storage segment this process cannot decrypt (SPEC 5: reason ``encrypted``).
            self.stats.unread[task.file.display_path] = exc.reason
            self.stats.segments = 0
            return None
        except OSError as exc:
            # Permission, I/O error, vanished since discovery, or not visible on this executor.
            self.stats.unread[task.file.display_path] = f"cannot read ({exc.strerror or exc})"
            self.stats.segments = 0  # counted among segments_unreadable instead
            return None

    def _not_a_segment_finding(self, problem: Problem) -> Finding:
        """The finding of a file whose first bytes hold no batch (see :meth:`_not_a_segment`)."""
        return self._finding(
            problem.check,
            f"Not a Kafka segment: the file does not start with a record batch ({problem.message})",
            None,
            position=0,
            details={"not_a_segment": True},
        )

    def _on_problem(
        self, problem: Problem, segment: FileRecords, next_offset: int | None, pending: list[Problem]
    ) -> tuple[Finding, ...]:
        """The finding of a problem met between batches: a cut-off tail a broker may be writing, or
        the problem itself; a bad CRC waits in ``pending`` for its batch, which follows at once."""
        if problem.incomplete and self.task.newest and self._could_be_written(problem):
            return (self._incomplete_tail(problem, segment, next_offset),)
        if problem.check == CheckId.CRC_MISMATCH:
            pending.append(problem)
            return ()
        return (self._problem_finding(problem, None),)

    def _pending_findings(self, batch: RecordBatch, pending: list[Problem]) -> list[Finding]:
        """The findings of a batch whose CRC is wrong. The size comes before the CRC
        (validate_batch_size): an oversized batch with a bad CRC is answered MESSAGE_TOO_LARGE."""
        oversized = validate_batch_size(batch, self.topic_partition, self.config)
        if oversized is not None:
            return [self._finding(oversized.check, oversized.message, batch, details=oversized.details)]
        return [self._problem_finding(problem, batch) for problem in pending]

    def _changed_mid_walk(self, exc: FileChanged, walked: int, stop: int) -> Finding:
        """Shrunk, deleted or swapped under the walk: pread came back short (SPEC segment_changed);
        the bytes from the batch it stopped in are not read (nor counted as read)."""
        self.stats.bytes -= stop - walked
        self.stats.bytes_read[self.task.file.display_path] -= stop - walked
        return self._changed_finding(exc, walked, stop - walked)

    def _read_failed(self, exc: OSError, walked: int, stop: int) -> Finding:
        """A ranged read of an object in a store failed part way (network, object gone): what was
        read is audited, the rest is said to be unread (SPEC section 1)."""
        return self._finding(
            CheckId.UNREADABLE_SEGMENT,
            f"Reading {self.task.file.display_path} failed after byte {walked}: {exc.strerror or exc}; "
            f"the bytes from there to {stop} are not audited",
            None,
            position=walked,
            details={"unread_bytes": stop - walked},
        )

    def _could_be_written(self, problem: Problem) -> bool:
        """Whether a cut-off batch's size field is one a broker writes: FileLogInputStream.nextBatch
        throws CorruptRecordException for a size above max.message.bytes before it looks at the
        end of the file, so such a size is corruption, not a write in progress."""
        return int(problem.details.get("size", 0)) <= self.config.max_message_bytes

    def _changed_finding(self, exc: FileChanged, position: int, not_read: int) -> Finding:
        """A ``segment_changed`` finding: what was listed and not read (counted as not read)."""
        self.stats.changed[self.task.file.display_path] = exc.reason
        return self._finding(
            CheckId.SEGMENT_CHANGED,
            f"{self.task.file.display_path} {exc.reason} during the scan ({exc.strerror}): {not_read:,} bytes from "
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
        return offset is None or not 0 <= offset - self.task.file.base_offset <= _INT_MAX

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
            segment=self.task.file.display_path,
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
        if self.task.file.state != "live":
            return {**details, "segment_state": self.task.file.state}
        return details
