"""A finding: one JSON object with the fields of SPEC section 2."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime, timezone
from typing import Any, Protocol, cast

from kafka_audit.record.record_batch import MAGIC_VALUE_V2, NO_TIMESTAMP
from kafka_audit.rules.catalogue import CHECKS, ERRORS, Check, Severity


class BatchFields(Protocol):
    """What a finding reads of its batch (:func:`make_finding`): a decoded
    :class:`~kafka_audit.record.record_batch.RecordBatch`, a
    :class:`~kafka_audit.rules.batch_summary.BatchSummary`, or the replay's
    :class:`~kafka_audit.rules.replay.transactions.Anchor` for a state read from a snapshot."""

    @property
    def position(self) -> int | None: ...
    @property
    def base_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def magic(self) -> int: ...
    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def base_sequence(self) -> int | None: ...
    @property
    def max_timestamp(self) -> int: ...
    @property
    def size(self) -> int | None: ...


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
    # SPEC section 2: set for a scan's findings by assign_fingerprints.
    fingerprint: str = ""
    baseline: bool = False
    # The enclosing batch's size on disk, log overhead included (SARIF's region ends there). Not a
    # field of SPEC section 2: to_dict and FIELD_NAMES leave it out.
    batch_size: int | None = field(default=None, metadata={"report": False})

    def to_dict(self) -> dict[str, Any]:
        """The finding as SPEC section 2's JSON object."""
        data = asdict(self)
        del data["batch_size"]
        return data

    @property
    def sort_key(self) -> tuple[str, int, int, str, str, int, int]:
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

    def fails_gate(self, fail_on: str) -> bool:
        """``--fail-on``: a finding at or above that severity (``never``: none) that no
        ``--baseline`` lists makes the exit code 1 (SPEC section 1)."""
        return fail_on != "never" and not self.baseline and self.at_least(fail_on)


FIELD_NAMES = tuple(f.name for f in fields(Finding) if f.metadata.get("report", True))
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
    batch: BatchFields | None = None,
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
        batch_size=batch.size if batch is not None else None,
    )


# partialFingerprints key of SARIF and the version of the fingerprint recipe below: a change of the
# recipe is a new version, so that baselines written by an older one are not silently misread.
FINGERPRINT_VERSION = "kafkaAudit/v1"
# The fields that tell one anomaly from another and stay the same across runs, machines and copies
# of a log dir. Not the segment's path (only its file name: the folders above it differ between
# machines), not ``timestamp``/``time`` (a finding without a batch may take its time from a file's
# modification time), not ``message``/``details`` (they may name paths or the reference time).
_IDENTITY_FIELDS = (
    "check", "topic", "partition", "offset", "record_index", "batch_base_offset", "batch_last_offset",
    "position", "producer_id", "producer_epoch", "sequence", "error_code",
)
# Details that tell findings apart where the fields above may not (a broker log line has no batch).
# A replica_* finding's broker (SPEC section 6: its fingerprint includes the node id).
_IDENTITY_DETAILS = ("log_line", "node_id", "kept_replica")


def segment_file_name(segment: str | None) -> str | None:
    """The last part of a segment's path or URI (``00000000000000000000.log``)."""
    if segment is None:
        return None
    return segment.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def fingerprint_identity(finding: Finding) -> str:
    """The canonical text a finding's fingerprint hashes (SPEC section 2)."""
    identity: dict[str, Any] = {name: getattr(finding, name) for name in _IDENTITY_FIELDS}
    identity["segment_file"] = segment_file_name(finding.segment)
    identity.update({f"details.{k}": finding.details[k] for k in _IDENTITY_DETAILS if k in finding.details})
    return json.dumps([FINGERPRINT_VERSION, identity], sort_keys=True, default=str, ensure_ascii=True)


def assign_fingerprints(findings: Iterable[Finding], baseline: Collection[str] = ()) -> None:
    """Give each finding of one scan its fingerprint and mark those ``baseline`` lists. Findings
    come in SPEC order; when two share an identity (no field tells them apart), the later ones get
    their rank among them hashed in, so that no two findings of a scan share a fingerprint and the
    same log gives the same fingerprints again."""
    seen: Counter[str] = Counter()
    for finding in findings:
        identity = fingerprint_identity(finding)
        rank = seen[identity]
        seen[identity] += 1
        text = identity if rank == 0 else f"{identity}#{rank}"
        finding.fingerprint = hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
        finding.baseline = finding.fingerprint in baseline


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
