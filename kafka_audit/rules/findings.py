"""A finding: one JSON object with the fields of SPEC section 2."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime, timezone
from typing import Any, cast

from kafka_audit.record.record_batch import MAGIC_VALUE_V2, NO_TIMESTAMP, RecordBatch
from kafka_audit.rules.catalogue import CHECKS, ERRORS, Check, Severity


@dataclass(slots=True)
class Finding:
    check: str
    severity: str
    topic: str | None
    partition: int | None
    segment: str | None
    position: int | None
    offset: int | None
    batch_base_offset: int | None
    batch_last_offset: int | None
    record_index: int | None
    producer_id: int | None
    producer_epoch: int | None
    sequence: int | None
    transactional_id: str | None
    timestamp: int | None
    time: str | None
    error_code: int | None
    error_name: str | None
    client_outcome: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Finding":
        return cls(**{f.name: data[f.name] for f in fields(cls)})

    @property
    def sort_key(self) -> tuple:
        """SPEC section 3: findings are ordered by topic, partition, offset, check."""
        return (
            self.topic or "",
            self.partition if self.partition is not None else -1,
            self.offset if self.offset is not None else -1,
            self.check,
            self.segment or "",
            self.position if self.position is not None else -1,
            self.record_index if self.record_index is not None else -1,
        )

    def at_least(self, severity: str) -> bool:
        return Severity(self.severity).rank >= Severity(severity).rank


FIELD_NAMES = tuple(f.name for f in fields(Finding))
# make_finding's ``exception`` when the catalogue's client exception applies.
CATALOGUE = object()


def make_finding(
    check: str,
    message: str,
    *,
    topic: str | None = None,
    partition: int | None = None,
    segment: str | None = None,
    position: int | None = None,
    offset: int | None = None,
    batch: RecordBatch | None = None,
    record_index: int | None = None,
    details: dict[str, Any] | None = None,
    timestamp: int | None = None,
    error: str | None = None,
    spec: Check | None = None,
    exception: str | None | object = CATALOGUE,
) -> Finding:
    """Build a finding, taking severity, error and client outcome from the catalogue and the
    batch fields (base/last offset, producer id/epoch, base sequence, max timestamp) from
    ``batch``. ``error`` names another Kafka error than the catalogue's for checks whose error
    depends on the case (record_too_large over segment.bytes, broker_rejection). ``spec`` replaces
    the check's catalogue entry by one of the catalogue's named variants (``catalogue.UNCOMPRESSED_OFFSET_DELTAS``).
    ``exception`` names another client exception than the catalogue's (None: the client sees none)
    for checks without an error code whose client outcome depends on the case (``epoch_bump``: only
    a fenced instance gets ProducerFencedException)."""
    spec = spec or CHECKS[check]
    if exception is not CATALOGUE:
        spec = replace(spec, exception=cast("str | None", exception))
    kafka_error = ERRORS[error] if error else spec.error
    details = dict(details or {})
    if spec.client_exception:
        details.setdefault("client_exception", spec.client_exception)
    producer = batch if batch is not None and batch.magic >= MAGIC_VALUE_V2 else None
    if timestamp is None and batch is not None and batch.max_timestamp != NO_TIMESTAMP:
        timestamp = batch.max_timestamp
    return Finding(
        check=str(spec.id),
        severity=str(spec.severity),
        topic=topic,
        partition=partition,
        segment=segment,
        position=position if position is not None or batch is None else batch.position,
        offset=offset if offset is not None or batch is None else batch.base_offset,
        batch_base_offset=batch.base_offset if batch is not None else None,
        batch_last_offset=batch.last_offset if batch is not None else None,
        record_index=record_index,
        producer_id=producer.producer_id if producer is not None else None,
        producer_epoch=producer.producer_epoch if producer is not None else None,
        sequence=producer.base_sequence if producer is not None else None,
        transactional_id=None,
        timestamp=timestamp,
        time=iso_time(timestamp),
        error_code=kafka_error.code if kafka_error else None,
        error_name=kafka_error.name if kafka_error else None,
        client_outcome=str(kafka_error.client_outcome if kafka_error else spec.client_outcome),
        message=message,
        details=details,
    )


def partition_label(topic: str | None, partition: int | None) -> str:
    """``<topic>-<partition>`` as Kafka names a partition; for segments found in a folder not named
    that way (audited as partition -1), the folder's name and what it is."""
    if partition is None or partition < 0:
        return f"{topic} (folder not named <topic>-<partition>)"
    return f"{topic}-{partition}"


def iso_time(timestamp: int | None) -> str | None:
    """Epoch ms as ISO-8601 UTC with milliseconds (``2026-11-23T08:59:15.792Z``); None for none or
    a value outside what a date can hold."""
    if timestamp is None or timestamp < 0:
        return None
    try:
        moment = datetime.fromtimestamp(timestamp / 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{timestamp % 1000:03d}Z"
