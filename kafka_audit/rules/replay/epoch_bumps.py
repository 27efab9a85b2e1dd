"""``epoch_bump``: why a producer id's epoch rose (SPEC section 2, ``details.reason``).

The log shows the new epoch, not who asked for it; the reason is read from what the batch is and
what the producer writes next:

- a data batch under a higher epoch: ``fenced`` when it is transactional (a new instance's
  ``InitProducerId`` bumped the epoch, the old instance gets ProducerFencedException), else
  ``idempotent_bump`` (KIP-360: an idempotent producer bumps its own epoch after a delivery
  timeout or an UnknownProducerId, and sees no error);
- an end marker under a higher epoch (only the coordinator writes markers): a COMMIT is
  ``transaction_end`` (transactions v2, Kafka 4: every end marker bumps the epoch); an ABORT is
  decided by the producer's next batch: data under a still higher epoch means a new instance's
  ``InitProducerId`` fenced the old one and aborted its transaction (``fenced``;
  ``TransactionCoordinator.handleInitProducerId`` bumps once to abort, once more for the new
  instance); data or a marker that goes on under the marker's epoch is ``transaction_end``; no
  later batch means the coordinator aborted on timeout (``timeout_abort``,
  ``TransactionCoordinator.abortTimedOutTransactions`` bumps the epoch of the abort).

Transactions v2 (Kafka 4.x, :mod:`kafka_audit.rules.replay.transaction_version`): the coordinator bumps the
epoch before every end marker (``TransactionMetadata.prepareAbortOrCommit``;
``TransactionMetadataTest.testEpochBumpOnEndTxn``), so a TV2 producer's marker at its transaction's
epoch + 1 is a transaction end: a ``timeline`` event, never a finding. Among those ends:

- an ABORT whose transaction had run at least the transaction timeout when the marker was
  written (``TransactionCoordinator.abortTimedOutTransactions`` aborts once ``txnStartTimestamp +
  txnTimeoutMs`` has passed; the timeout is ``__transaction_state``'s ``TransactionTimeoutMs``
  when scanned) is ``timeout_abort``; the producer's re-initialisation after it is part of it;
- an ABORT followed by data at a still higher epoch is the +2 jump of a new instance's
  ``InitProducerId`` aborting the open transaction (``TransactionCoordinator.handleInitProducerId``,
  ``TransactionMetadata.prepareFenceProducerEpoch``;
  ``TransactionCoordinatorTest.shouldAbortTransactionOnHandleInitPidWhenExistingTransactionInOngoingState``):
  one ``fenced`` finding, at the marker;
- data at a higher epoch than the producer's last here is a new instance (``fenced``) only when
  ``__transaction_state`` holds the InitProducerId (an Empty record) at that epoch: otherwise
  the epoch moved on with transactions that ended in other partitions (their markers go only to
  the transaction's partitions), a timeline event. Without ``__transaction_state`` such a rise
  is not called a fencing.

Only ``fenced`` has a client outcome (``fatal``, ProducerFencedException for the old instance).
Each finding's details say which broker rule applied (``broker_rule``) for TV2 producers.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, NamedTuple

from kafka_audit.check_ids import CheckId
from kafka_audit.record.record_batch import ControlRecordType
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.events import EventKind
from kafka_audit.rules.replay.replay_output import ReplayOutput
from kafka_audit.rules.replay.transaction_version import RULE_4X, TV_2, TransactionVersions
from kafka_audit.rules.replay.transactions import OpenTxn

FENCED, TIMEOUT_ABORT, TRANSACTION_END, IDEMPOTENT_BUMP = "fenced", "timeout_abort", "transaction_end", "idempotent_bump"
_FENCED_EXCEPTION = "ProducerFencedException"
_ELSEWHERE = "transaction ends in other partitions"
_LAST_EPOCH = 32767  # Short.MAX_VALUE: the epoch of the end marker that exhausts a producer id


class _Held(NamedTuple):
    """An ABORT marker's bump waiting for the producer's next batch."""

    batch: BatchSummary
    previous: int
    aborted: OpenTxn | None
    tv2: bool


class EpochBumps:
    """Reports the epoch bumps of one replay, holding an ABORT marker's bump until the producer's
    next batch (or the end of the log) tells its reason."""

    def __init__(self, output: ReplayOutput, versions: TransactionVersions, default_timeout_ms: int) -> None:
        self._out = output
        self._versions = versions
        self._default_timeout_ms = default_timeout_ms
        self._pending: dict[int, _Held] = {}
        # TV2 producers whose transaction the coordinator aborted on timeout: their next bump is
        # the re-initialisation that follows.
        self._timed_out: set[int] = set()

    def data_bump(self, batch: BatchSummary, previous: int) -> None:
        pid = batch.producer_id
        held = self._pending.pop(pid, None)
        if held is not None and held.tv2:
            if self._new_instance(batch) is False:
                self._end(held)
                self._event(batch, previous, None, _ELSEWHERE)
                return
            # TV2 +2: the coordinator's ABORT at E + 1 for a new instance that got E + 2.
            self._report(held.batch, held.previous, held.aborted, FENCED, {"new_instance_epoch": batch.producer_epoch})
            self._event(batch, previous, None, "the new instance's first batch")
            return
        if held is not None:
            self._report(held.batch, held.previous, held.aborted, FENCED)
        if pid in self._timed_out:
            self._timed_out.discard(pid)
            self._event(batch, previous, None, "re-initialised after the timeout abort")
            return
        if batch.is_transactional and self._versions.is_tv2(pid) and not self._new_instance(batch):
            self._event(batch, previous, None, _ELSEWHERE)
            return
        self._report(batch, previous, None, FENCED if batch.is_transactional else IDEMPOTENT_BUMP)

    def _new_instance(self, batch: BatchSummary) -> bool | None:
        """Whether a TV2 producer's data at a higher epoch is a new instance's (InitProducerId:
        ``__transaction_state`` holds an Empty record at that epoch), or only the epoch its
        transactions in other partitions ended at (every end bumps it; the markers go only to
        the transaction's partitions). None: ``__transaction_state`` not scanned."""
        facts = self._versions.facts(batch.producer_id)
        if facts is None or not facts.init_epochs:
            return None
        return batch.producer_epoch in facts.init_epochs

    def marker_bump(self, batch: BatchSummary, previous: int, txn: OpenTxn | None) -> None:
        self.next_batch(batch)
        pid = batch.producer_id
        abort = batch.control_type == ControlRecordType.ABORT
        if self._versions.is_tv2(pid) and (txn is None or batch.producer_epoch == txn.epoch + 1):
            if abort and txn is not None:
                timing = self._timeout(batch, txn)
                if timing is not None:
                    self._timed_out.add(pid)
                    self._report(batch, previous, txn, TIMEOUT_ABORT, timing)
                else:
                    self._pending[pid] = _Held(batch, previous, txn, True)
            else:
                self._event(batch, previous, None, self._end_reason(batch))
        elif abort:
            self._pending[pid] = _Held(batch, previous, txn, False)
        else:
            self._report(batch, previous, None, TRANSACTION_END)

    def held_view(self) -> Collection[int]:
        """The producer ids whose ABORT marker's bump waits for their next batch (the live keys,
        to read only)."""
        return self._pending.keys()

    def next_batch(self, batch: BatchSummary) -> None:
        """A batch of the producer that keeps its epoch: an ABORT's bump was a transaction end."""
        if not self._pending:
            return
        held = self._pending.pop(batch.producer_id, None)
        if held is None:
            return
        if not held.tv2 and not batch.is_control and held.aborted is not None:
            self._versions.observe_restart(
                batch.producer_id, held.batch.producer_epoch, batch.producer_epoch, batch.base_sequence
            )
        self._end(held)

    def finish(self) -> None:
        for pid in list(self._pending):
            held = self._pending.pop(pid)
            if held.tv2:
                self._end(held)
            else:
                self._report(held.batch, held.previous, held.aborted, TIMEOUT_ABORT)

    def _end(self, held: _Held) -> None:
        """An ABORT's bump that was a transaction end: a finding under the 3.x rules, an event for TV2."""
        if held.tv2 or self._versions.is_tv2(held.batch.producer_id):
            self._event(held.batch, held.previous, held.aborted, TRANSACTION_END)
        else:
            self._report(held.batch, held.previous, held.aborted, TRANSACTION_END)

    def _end_reason(self, batch: BatchSummary) -> str:
        """A TV2 transaction end; at the last epoch (Short.MAX_VALUE) the transactional id goes on
        under ``NextProducerId`` at epoch 0 (``TransactionMetadata.prepareAbortOrCommit`` /
        ``prepareComplete``; ``TransactionMetadataTest.testEpochBumpOnEndTxnOverflow``)."""
        facts = self._versions.facts(batch.producer_id)
        if batch.producer_epoch < _LAST_EPOCH or facts is None or facts.next_producer_id < 0:
            return TRANSACTION_END
        return (
            f"{TRANSACTION_END}; epochs exhausted: transactional id {facts.transactional_id} goes on as producer "
            f"{facts.next_producer_id} at epoch 0"
        )

    def _timeout(self, batch: BatchSummary, txn: OpenTxn) -> dict[str, Any] | None:
        """The timing of a TV2 ABORT when its transaction had outlived the transaction timeout:
        from ``__transaction_state``'s PrepareAbort record at the marker's epoch when scanned (the
        transaction's start in every partition, the time the coordinator decided), else from the
        log (the transaction's first batch here, the marker's time)."""
        facts = self._versions.facts(batch.producer_id)
        timing = facts.abort_timing(batch.producer_epoch) if facts is not None else None
        start, abort = timing if timing is not None else (txn.first_timestamp, batch.max_timestamp)
        timeout = self._versions.timeout_ms(batch.producer_id, self._default_timeout_ms)
        if start < 0 or abort < 0 or abort - start < timeout:
            return None
        return {
            "transaction_start": start,
            "abort_time": abort,
            "transaction_timeout_ms": timeout,
            "duration_ms": abort - start,
            "timing_from": "__transaction_state" if timing is not None else "log",
        }

    def _message(self, batch: BatchSummary, previous: int, aborted: OpenTxn | None, reason: str) -> str:
        message = (
            f"Epoch of producer {batch.producer_id} rose from {previous} to {batch.producer_epoch} at offset "
            f"{batch.base_offset} in partition {self._out.tp}"
        )
        if batch.is_control:
            message += f" with its {ControlRecordType(batch.control_type).name} marker"
        if aborted is not None:
            message += f", aborting its open transaction that started at offset {aborted.first_offset}"
        return message + f" ({reason.replace('_', ' ', 1)})"

    def _event(self, batch: BatchSummary, previous: int, aborted: OpenTxn | None, reason: str) -> None:
        """A TV2 epoch bump that is normal operation: a timeline event only."""
        if self._out.timeline:
            self._out.event(EventKind.EPOCH_BUMP, batch, self._message(batch, previous, aborted, reason))

    def _report(self, batch: BatchSummary, previous: int, aborted: OpenTxn | None, reason: str, extra: dict[str, Any] | None = None) -> None:
        message = self._message(batch, previous, aborted, reason)
        details: dict[str, Any] = {"previous_epoch": previous, "open_transaction_aborted": aborted is not None, "reason": reason}
        if self._versions.is_tv2(batch.producer_id):
            details.update(transaction_version=TV_2, broker_rule=RULE_4X, **self._versions.evidence(batch.producer_id))
            details.update(extra or {})
        self._out.finding(
            CheckId.EPOCH_BUMP, message, batch, details, exception=_FENCED_EXCEPTION if reason == FENCED else None
        )
        self._out.event(EventKind.EPOCH_BUMP, batch, message)
