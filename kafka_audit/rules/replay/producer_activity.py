"""What each producer id wrote to a partition: the rows of ``kafka-audit producers`` (SPEC
section 3).

A pure accumulator fed the partition's batch summaries in log order by the partition step. It
counts; it does not judge: the producer-state replay (``producer_state.py``) is the one home of
the rules a broker applies to these batches. Batches that cannot be trusted (``valid`` False)
and batches without a producer id (magic < 2, producer id -1) are not counted.

Per (topic, partition, producer id): the epochs seen (data batches and markers, in order of first
appearance), the first and last offset and the oldest and newest batch timestamp of its batches
(markers included: a coordinator writes them for the producer), each epoch's first base sequence
and last sequence in log order, the data batches and records, and its transactions as the replay
counts them (``TransactionTracker``: completed by a marker that closed one the replay saw open,
or judged open at the end of the log; a marker with none open is an ``orphan_marker``), the one
count the summary shows too.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kafka_audit.record.record_batch import MAGIC_VALUE_V2
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.findings import Finding


@dataclass(slots=True)
class ProducerActivity:
    """One producer id's activity in one partition."""

    topic: str
    partition: int
    producer_id: int
    epochs: list[int] = field(default_factory=list)
    first_offset: int | None = None
    last_offset: int | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    # epoch -> [first base sequence, last sequence] of its data batches, in log order.
    sequences: dict[int, list[int]] = field(default_factory=dict)
    batches: int = 0
    records: int = 0
    # Set from the replay's one count of transactions (rows()).
    committed: int = 0
    aborted: int = 0
    open: int = 0

    def to_row(self) -> dict[str, Any]:
        """The SPEC section 3 ``producers`` row; ``transactional_id`` and ``findings`` are filled by
        the driver, which holds ``__transaction_state`` and every finding."""
        return {
            "topic": self.topic,
            "partition": self.partition,
            "producer_id": self.producer_id,
            "transactional_id": None,
            "epochs": list(self.epochs),
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
            "first_timestamp": self.first_timestamp,
            "last_timestamp": self.last_timestamp,
            "sequences": {str(epoch): list(span) for epoch, span in self.sequences.items()},
            "batches": self.batches,
            "records": self.records,
            "transactions": {"committed": self.committed, "aborted": self.aborted, "open": self.open},
            "findings": {"error": 0, "warning": 0, "info": 0},
        }


class ProducerActivityLog:
    """Every producer id's activity in one partition, fed in log order."""

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.producers: dict[int, ProducerActivity] = {}

    def observe(self, batch: BatchSummary) -> None:
        if not batch.valid or batch.magic < MAGIC_VALUE_V2 or batch.producer_id < 0:
            return
        activity = self.producers.get(batch.producer_id)
        if activity is None:
            activity = self.producers[batch.producer_id] = ProducerActivity(self.topic, self.partition, batch.producer_id)
        epoch = batch.producer_epoch
        if epoch not in activity.epochs:
            activity.epochs.append(epoch)
        if activity.first_offset is None:
            activity.first_offset = batch.base_offset
        activity.last_offset = batch.last_offset
        timestamp = batch.max_timestamp
        if timestamp >= 0:
            if activity.first_timestamp is None or timestamp < activity.first_timestamp:
                activity.first_timestamp = timestamp
            if activity.last_timestamp is None or timestamp > activity.last_timestamp:
                activity.last_timestamp = timestamp
        if batch.is_control:
            return
        activity.batches += 1
        activity.records += batch.record_count
        if batch.base_sequence >= 0:
            span = activity.sequences.get(epoch)
            if span is None:
                activity.sequences[epoch] = [batch.base_sequence, batch.last_sequence]
            else:
                span[1] = batch.last_sequence

    def rows(self, transactions: dict[int, tuple[int, int, int]]) -> list[dict[str, Any]]:
        """The rows, with each producer's transactions as the replay counted them
        (``ReplayStats.transactions_by_producer``: committed, aborted, open)."""
        rows = []
        for pid in sorted(self.producers):
            activity = self.producers[pid]
            activity.committed, activity.aborted, activity.open = transactions.get(pid, (0, 0, 0))
            rows.append(activity.to_row())
        return rows


def count_findings(rows: list[dict[str, Any]], findings: list[Finding]) -> None:
    """Set each row's ``findings`` to the count by severity of the findings of its producer id in
    its partition (in place)."""
    counts: dict[tuple[str | None, int | None, int], Counter[str]] = {}
    for finding in findings:
        if finding.producer_id is not None and finding.producer_id >= 0:
            counts.setdefault((finding.topic, finding.partition, finding.producer_id), Counter())[finding.severity] += 1
    for row in rows:
        found = counts.get((row["topic"], row["partition"], row["producer_id"]), Counter())
        row["findings"] = {severity: found.get(severity, 0) for severity in ("error", "warning", "info")}
