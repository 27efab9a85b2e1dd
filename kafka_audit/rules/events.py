"""Timeline events (SPEC section 3, ``timeline``): what happened to a producer or a partition, at
which offset and time, in one sentence. The producer-state replay emits them as it applies each
batch in log order (as ``ProducerStateManager`` would see them); the timeline view only sorts and
filters them."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from kafka_audit.check_ids import ValueEnum


class EventKind(ValueEnum):
    EPOCH_BUMP = "epoch_bump"
    TRANSACTION_BEGIN = "transaction_begin"
    TRANSACTION_COMMIT = "transaction_commit"
    TRANSACTION_ABORT = "transaction_abort"
    FINDING = "finding"
    LOG_START_MOVED = "log_start_moved"
    SNAPSHOT = "snapshot"
    PRODUCER_EXPIRED = "producer_expired"
    BROKER_LOG = "broker_log"


@dataclass(slots=True)
class Event:
    """One timeline row: the fields of SPEC section 3 ``timeline`` (``time`` is derived)."""

    kind: EventKind
    topic: str
    partition: int
    offset: int | None
    timestamp: int | None
    producer_id: int | None
    producer_epoch: int | None
    message: str
    check: str | None = None

    def to_dict(self) -> dict[str, Any]:
        from kafka_audit.rules.findings import iso_time

        data = asdict(self)
        data["kind"] = str(self.kind)
        data["time"] = iso_time(self.timestamp)
        return data
