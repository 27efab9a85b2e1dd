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

Only ``fenced`` has a client outcome (``fatal``, ProducerFencedException for the old instance).
"""

from __future__ import annotations

from typing import Any

from kafka_audit.record.record_batch import ControlRecordType
from kafka_audit.rules.events import EventKind
from kafka_audit.rules.replay_output import ReplayOutput
from kafka_audit.rules.transactions import OpenTxn

FENCED, TIMEOUT_ABORT, TRANSACTION_END, IDEMPOTENT_BUMP = "fenced", "timeout_abort", "transaction_end", "idempotent_bump"
_FENCED_EXCEPTION = "ProducerFencedException"


class EpochBumps:
    """Reports the epoch bumps of one replay, holding an ABORT marker's bump until the producer's
    next batch (or the end of the log) tells its reason."""

    def __init__(self, output: ReplayOutput) -> None:
        self._out = output
        # producer id -> (marker batch, previous epoch, transaction it aborted)
        self._pending: dict[int, tuple[Any, int, OpenTxn | None]] = {}

    def data_bump(self, batch, previous: int) -> None:
        self._resolve(batch.producer_id, FENCED)
        self._report(batch, previous, None, FENCED if batch.is_transactional else IDEMPOTENT_BUMP)

    def marker_bump(self, batch, previous: int, txn: OpenTxn | None) -> None:
        self.next_batch(batch)
        aborted = txn if batch.control_type == ControlRecordType.ABORT else None
        if batch.control_type == ControlRecordType.COMMIT:
            self._report(batch, previous, None, TRANSACTION_END)
        else:
            self._pending[batch.producer_id] = (batch, previous, aborted)

    def next_batch(self, batch) -> None:
        """A batch of the producer that keeps its epoch: an ABORT's bump was a transaction end."""
        if self._pending:
            self._resolve(batch.producer_id, TRANSACTION_END)

    def finish(self) -> None:
        for pid in list(self._pending):
            self._resolve(pid, TIMEOUT_ABORT)

    def _resolve(self, pid: int, reason: str) -> None:
        held = self._pending.pop(pid, None)
        if held is not None:
            self._report(*held, reason)

    def _report(self, batch, previous: int, aborted: OpenTxn | None, reason: str) -> None:
        out = self._out
        message = (
            f"Epoch of producer {batch.producer_id} rose from {previous} to {batch.producer_epoch} at offset "
            f"{batch.base_offset} in partition {out.tp}"
        )
        if batch.is_control:
            message += f" with its {ControlRecordType(batch.control_type).name} marker"
        if aborted is not None:
            message += f", aborting its open transaction that started at offset {aborted.first_offset}"
        message += f" ({reason.replace('_', ' ')})"
        out.finding(
            "epoch_bump",
            message,
            batch,
            {"previous_epoch": previous, "open_transaction_aborted": aborted is not None, "reason": reason},
            exception=_FENCED_EXCEPTION if reason == FENCED else None,
        )
        out.event(EventKind.EPOCH_BUMP, batch, message)
