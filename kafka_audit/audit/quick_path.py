"""The segment audit's quick paths, after Kafka's LogValidator: a batch with nothing to report
summed up in one pass (:meth:`QuickPath._quick_summary`) and the compiled walk's runs of such
batches folded into the counts (:meth:`QuickPath._fold_run`).

Each skips only work whose answer is known to be empty: a batch any stage might report something
about goes to :meth:`SegmentAuditor._audit_batch <kafka_audit.audit.segment_audit.SegmentAuditor>`.
"""

from __future__ import annotations

from kafka_audit.audit.segment_task import SegmentStats, SegmentTask
from kafka_audit.record.batch_walk import BatchColumns, CompiledWalk
from kafka_audit.record.control_record import parse_control_key_value
from kafka_audit.record.record_batch import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    MAGIC_VALUE_V2,
    TIMESTAMP_TYPE_MASK,
    RecordBatch,
    codec_label,
)
from kafka_audit.record.record_screen import RecordScreen, screen_payload
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.validation.batch_validation import validate_appended_size, validate_batch_header
from kafka_audit.rules.validation.control_batch import control_record_violation
from kafka_audit.rules.validation.log_validator import ValidationConfig, control_record_screen, record_screen

# The summary panel's format labels (magic byte to label), built once.
FORMAT_LABELS = {0: "v0", 1: "v1", 2: "v2"}


class QuickPath:
    """The quick paths of :class:`~kafka_audit.audit.segment_audit.SegmentAuditor`, its base: the
    state they read is the auditor's (set in its ``__init__``), their counts are folded into
    ``stats`` by :meth:`_fold_quick_counts` when the walk ends."""

    task: SegmentTask
    config: ValidationConfig
    reference_time: int | None
    stats: SegmentStats
    topic_partition: str
    compacted: bool
    # The quick path's screens, by the attribute bits they depend on (control, timestamp type).
    _quick_screens: dict[int, RecordScreen]
    # The quick path's counts, folded into ``stats`` when the walk ends: v2 batches per codec id.
    _quick_codecs: list[int]
    _quick_records: int
    # The newest batch timestamp read so far (see SegmentAuditor).
    _last_timestamp: int | None

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
        return BatchSummary.of(task.topic, task.partition, task.file.display_path, task.file.base_offset, batch, True, control)

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
                stats.formats[FORMAT_LABELS[MAGIC_VALUE_V2]] += count
                stats.codecs[codec_label(codec)] += count
        stats.records += self._quick_records
        self._quick_codecs = [0] * (COMPRESSION_CODEC_MASK + 1)
        self._quick_records = 0
