"""Kafka's ``ProducerAppendInfo`` (storage module, ``org.apache.kafka.storage.internals.log``,
Kafka 3.6): the checks of one batch against its producer's entry before the append.

As ``ProducerAppendInfo.append`` does for an :class:`AppendOrigin`:

- ``CLIENT`` (a produce request on the leader) validates: the duplicate check of
  ``UnifiedLog.analyzeAndValidateProducerState`` (``ProducerStateEntry.findDuplicateBatch``, made
  before any other check), ``checkProducerEpoch`` (``InvalidProducerEpochException``),
  ``checkSequence`` (``OutOfOrderSequenceException``) and, for end markers,
  ``checkCoordinatorEpoch`` (``TransactionCoordinatorFencedException``). A batch that fails a check
  is answered with the error and changes nothing (:class:`Rejection`).
- ``COORDINATOR`` (the group/transaction coordinators' own appends) checks epochs only.
- ``REPLICATION`` (a follower, and log recovery) checks nothing.

and, after the data batch is recorded, ``appendDataBatch``'s transaction check
(``InvalidTxnStateException``): a non-transactional write while the producer's transaction is
open. A transactional write under another epoch than its open transaction is the audit's view of
the same state error. The checks keep no state between batches: the entry is the state.
"""

from __future__ import annotations

from kafka_audit.check_ids import CheckId
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.replay.producer_state_entry import (
    NO_PRODUCER_EPOCH,
    AppendOrigin,
    BatchMetadata,
    ProducerStateEntry,
    Rejection,
    in_sequence,
    next_sequence,
)
from kafka_audit.rules.replay.transaction_version import TV_2


class ProducerAppendInfo:
    """The checks of one batch of a partition (``tp``, for Kafka's messages) against its entry."""

    def __init__(self, topic_partition: str) -> None:
        self.tp = topic_partition

    def validate_data(self, batch: BatchSummary, current: ProducerStateEntry, origin: AppendOrigin) -> Rejection | None:
        """The duplicate check (CLIENT), checkProducerEpoch, then checkSequence (CLIENT)."""
        if origin is AppendOrigin.CLIENT:
            duplicate = current.find_duplicate_batch(batch.producer_epoch, batch.base_sequence, batch.last_sequence)
            if duplicate is not None:
                return self._duplicate(batch, duplicate)
        rejection = self.check_epoch(batch, current)
        if rejection is None and origin is AppendOrigin.CLIENT:
            rejection = self._check_sequence(batch, current)
        return rejection

    def validate_marker(self, batch: BatchSummary, current: ProducerStateEntry, transaction_version: int = 0) -> Rejection | None:
        """appendEndTxnMarker's checks: checkProducerEpoch for the marker's transaction version,
        then checkCoordinatorEpoch."""
        rejection = self.check_marker_epoch(batch, current, transaction_version)
        if rejection is None and batch.coordinator_epoch < current.coordinator_epoch:
            rejection = Rejection(
                CheckId.COORDINATOR_EPOCH_REGRESSION,
                f"Invalid coordinator epoch for producerId {batch.producer_id} at offset {batch.base_offset} in "
                f"partition {self.tp}: {batch.coordinator_epoch} (zombie), {current.coordinator_epoch} (current)",
                {"coordinator_epoch": batch.coordinator_epoch, "current_coordinator_epoch": current.coordinator_epoch},
            )
        return rejection

    def check_marker_epoch(self, batch: BatchSummary, current: ProducerStateEntry, transaction_version: int) -> Rejection | None:
        """checkProducerEpoch of a marker (Kafka 4.x ``ProducerAppendInfo``): TV0/1 markers carry
        the data's epoch, so ``epoch < current`` is fenced (as Kafka 3.x); a TV2 coordinator bumps
        the epoch before every marker, so ``epoch <= current`` is fenced, except a marker rewritten
        at the current epoch when no transaction is open, a retry of a marker already written
        (KAFKA-19999, ``checkProducerEpoch``'s "idempotent marker retry"). Kafka's tests:
        ``ProducerStateManagerTest.testOldEpochForControlRecord`` (TV0 and TV2)."""
        if transaction_version < TV_2:
            return self.check_epoch(batch, current)
        epoch, last = batch.producer_epoch, current.producer_epoch
        if epoch > last or (epoch == last and current.current_txn_first_offset < 0):
            return None
        return Rejection(
            CheckId.FENCED_EPOCH_WRITE,
            f"Epoch of producer {batch.producer_id} at offset {batch.base_offset} in {self.tp} is "
            f"{epoch}, which is <= the last seen epoch {last} (TV{transaction_version})",
            {
                "last_seen_epoch": last,
                "transaction_version": transaction_version,
                "broker_rule": "Kafka 4.x: a TV2 marker's epoch must be above the current epoch",
            },
        )

    def check_txn_state(self, batch: BatchSummary, txn_first_offset: int, txn_epoch: int) -> Rejection | None:
        """appendDataBatch with a transaction open since ``txn_first_offset`` under ``txn_epoch``:
        a non-transactional write is ``InvalidTxnStateException``; a transactional one under
        another epoch breaks the same state."""
        pid, epoch = batch.producer_id, batch.producer_epoch
        if not batch.is_transactional:
            return Rejection(
                CheckId.TRANSACTION_STATE_VIOLATION,
                f"Expected transactional write from producer {pid} at offset {batch.base_offset} in partition "
                f"{self.tp}",
                {"first_offset": txn_first_offset, "transaction_epoch": txn_epoch},
            )
        if epoch == txn_epoch:
            return None
        return Rejection(
            CheckId.TRANSACTION_STATE_VIOLATION,
            f"Transactional write from producer {pid} at offset {batch.base_offset} in partition "
            f"{self.tp} has epoch {epoch}, but its open transaction that started at offset "
            f"{txn_first_offset} has epoch {txn_epoch}",
            {"first_offset": txn_first_offset, "transaction_epoch": txn_epoch},
        )

    def _duplicate(self, batch: BatchSummary, original: BatchMetadata) -> Rejection:
        # UnifiedLog.analyzeAndValidateProducerState: the broker answers NONE with the original
        # batch's offsets and appends nothing, so a copy in the log is data no broker writes.
        return Rejection(
            CheckId.DUPLICATE_SEQUENCE,
            f"Duplicate sequence number for producer {batch.producer_id} at offset {batch.base_offset} in "
            f"partition {self.tp}: sequences {batch.base_sequence} to {batch.last_sequence} of epoch "
            f"{batch.producer_epoch} were already written at offset {original.first_offset}",
            {
                "original_offset": original.first_offset,
                "first_sequence": batch.base_sequence,
                "last_sequence": batch.last_sequence,
            },
        )

    def check_epoch(self, batch: BatchSummary, current: ProducerStateEntry) -> Rejection | None:
        """checkProducerEpoch (InvalidProducerEpochException)."""
        if batch.producer_epoch >= current.producer_epoch:
            return None
        return Rejection(
            CheckId.FENCED_EPOCH_WRITE,
            f"Epoch of producer {batch.producer_id} at offset {batch.base_offset} in {self.tp} is "
            f"{batch.producer_epoch}, which is smaller than the last seen epoch {current.producer_epoch}",
            {"last_seen_epoch": current.producer_epoch},
        )

    def _check_sequence(self, batch: BatchSummary, current: ProducerStateEntry) -> Rejection | None:
        """checkSequence against the entry before this batch (an empty updatedEntry)."""
        epoch, seq, pid = batch.producer_epoch, batch.base_sequence, batch.producer_id
        if epoch != current.producer_epoch:
            if seq != 0 and current.producer_epoch != NO_PRODUCER_EPOCH:
                return Rejection(
                    CheckId.NEW_EPOCH_NONZERO_SEQUENCE,
                    f"Invalid sequence number for new epoch of producer {pid} at offset {batch.base_offset} in "
                    f"partition {self.tp}: {epoch} (request epoch), {seq} (seq. number), "
                    f"{current.producer_epoch} (current producer epoch)",
                    {"previous_epoch": current.producer_epoch},
                )
            return None
        last = current.last_seq
        if current.producer_epoch == NO_PRODUCER_EPOCH or in_sequence(last, seq):
            return None
        return Rejection(
            CheckId.OUT_OF_ORDER_SEQUENCE,
            f"Out of order sequence number for producer {pid} at offset {batch.base_offset} in partition "
            f"{self.tp}: {seq} (incoming seq. number), {last} (current end sequence number)",
            {"expected_sequence": next_sequence(last)},
        )
