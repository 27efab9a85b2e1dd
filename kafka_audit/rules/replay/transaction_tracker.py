"""The transactions of one partition's replay: which producer has one open, which ended how.

Kafka keeps an ongoing transaction as the entry's ``currentTxnFirstOffset`` plus a ``TxnMetadata``
in ``ProducerStateManager.ongoingTxns``; an end marker completes it (``CompletedTxn``) and an
ABORT one becomes an ``AbortedTxn`` in the segment's ``.txnindex``. :class:`TransactionTracker`
keeps the same, with what the audit adds: each transaction's first batch and epoch (to age it and
to see a write under another epoch), the markers that closed no transaction (``orphan_marker``),
and the transactions whose end may have been an untrusted batch (not judged).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from kafka_audit.check_ids import CheckId
from kafka_audit.log.transaction_index import AbortedTxn
from kafka_audit.record.record_batch import ControlRecordType
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.events import EventKind
from kafka_audit.rules.findings import Finding
from kafka_audit.rules.replay.producer_append_info import ProducerAppendInfo
from kafka_audit.rules.replay.replay_output import ReplayOutput
from kafka_audit.rules.replay.transactions import DerivedAbortedTxn, OpenTxn, compare_txn_index, open_transaction_findings

_ABORT = ControlRecordType.ABORT


class TransactionTracker:
    """Open transactions per producer id, the aborted ones, and the counts of ended ones."""

    def __init__(self, output: ReplayOutput, checks: ProducerAppendInfo) -> None:
        self._out = output
        self._checks = checks
        self._open: dict[int, OpenTxn] = {}
        self._aborted: list[DerivedAbortedTxn] = []
        self._empty_aborts: set[tuple[str, int, int]] = set()
        self._uncertain: set[int] = set()
        # The producer ids whose transaction is open at the end, judged (open_findings sets it).
        self.open_judged: set[int] = set()
        self.committed = 0
        self.aborted = 0
        # producer id -> [committed, aborted]: the one count of ended transactions, Kafka's
        # CompletedTxn: a marker that closed a transaction this replay saw open. A marker with
        # none open (its data cleaned away or below the log start) completes nothing
        # (ProducerStateManagerTest.testSkipEmptyTransactions) and is an orphan_marker.
        self.ended: dict[int, list[int]] = {}

    def counts_by_producer(self) -> dict[int, tuple[int, int, int]]:
        """(committed, aborted, open) per producer id: the transactions it completed, and whether
        a judged transaction of it is open at the end (after :meth:`open_findings`)."""
        pids = set(self.ended) | self.open_judged
        return {
            pid: (*self.ended.get(pid, (0, 0)), int(pid in self.open_judged))
            for pid in pids
        }

    def open_view(self) -> Mapping[int, OpenTxn]:
        """The transactions open, by producer id: the tracker's own map, to read only (the
        partition step's fast path, rules.replay.replay_runs, reads it once per batch)."""
        return self._open

    def open_transactions(self) -> dict[int, OpenTxn]:
        """The transactions open now, by producer id (a copy)."""
        return dict(self._open)

    def aborted_transactions(self) -> list[DerivedAbortedTxn]:
        """The aborted transactions seen so far, in log order (a copy)."""
        return list(self._aborted)

    def on_data(self, batch: BatchSummary, resyncing: bool) -> None:
        """After a data batch (``ProducerAppendInfo.appendDataBatch`` starting a ``TxnMetadata``):
        a transactional batch opens a transaction; a batch of a producer with one open is checked
        (``InvalidTxnStateException``: ``transaction_state_violation``, except while the producer
        re-synchronises)."""
        pid = batch.producer_id
        txn = self._open.get(pid)
        if txn is None:
            if batch.is_transactional:
                self._begin(batch)
            return
        txn.last_timestamp = batch.max_timestamp
        if not batch.is_transactional and resyncing:
            # The invalid batch may have been this transaction's end marker.
            del self._open[pid]
            self._uncertain.discard(pid)
            return
        rejection = self._checks.check_txn_state(batch, txn.first_offset, txn.epoch)
        if rejection is None:
            return
        if not resyncing:
            self._out.finding(rejection.check, rejection.message, batch, rejection.details)
        if batch.is_transactional:
            txn.epoch = batch.producer_epoch

    def _begin(self, batch: BatchSummary) -> None:
        pid = batch.producer_id
        self._open[pid] = OpenTxn(pid, batch.base_offset, batch.max_timestamp, batch.producer_epoch, batch, batch.max_timestamp)
        self._uncertain.discard(pid)
        if self._out.timeline:
            self._out.event(
                EventKind.TRANSACTION_BEGIN,
                batch,
                f"Producer {pid} began a transaction at offset {batch.base_offset} in partition {self._out.tp}",
            )

    def close(self, pid: int) -> tuple[OpenTxn | None, bool]:
        """An end marker came: the transaction it ends (None: none open), and whether that
        transaction was uncertain (open across an untrusted batch)."""
        uncertain = pid in self._uncertain
        self._uncertain.discard(pid)
        return self._open.pop(pid, None), uncertain

    def end(self, batch: BatchSummary, txn: OpenTxn | None, judged: bool) -> None:
        """The marker ``batch`` ended ``txn`` (``CompletedTxn``), or none: ``orphan_marker`` when ``judged``."""
        pid = batch.producer_id
        out = self._out
        if txn is None:
            if judged:
                kind = ControlRecordType(batch.control_type).name
                out.finding(
                    CheckId.ORPHAN_MARKER,
                    f"{kind} marker for producer {pid} at offset {batch.base_offset} in partition {out.tp} with no "
                    f"open transaction",
                    batch,
                    {"marker": kind, "coordinator_epoch": batch.coordinator_epoch},
                )
            if batch.control_type == _ABORT:
                self._empty_aborts.add((batch.segment, pid, batch.base_offset))
            return
        abort = batch.control_type == _ABORT
        self.count_end(pid, abort)
        if abort:
            self._aborted.append(DerivedAbortedTxn(pid, txn.first_offset, batch.base_offset, batch.segment, batch))
            verb, kind_event = "aborted", EventKind.TRANSACTION_ABORT
        else:
            verb, kind_event = "committed", EventKind.TRANSACTION_COMMIT
        if out.timeline:
            out.event(
                kind_event,
                batch,
                f"Producer {pid} {verb} its transaction of offsets {txn.first_offset} to {batch.base_offset} in "
                f"partition {out.tp}",
            )

    def count_end(self, pid: int, abort: bool) -> None:
        """A transaction of ``pid`` completed (aborted or committed): the counts of :meth:`end`."""
        counts = self.ended.setdefault(pid, [0, 0])
        if abort:
            self.aborted += 1
            counts[1] += 1
        else:
            self.committed += 1
            counts[0] += 1

    def untrusted(self) -> None:
        """An untrusted batch: every open transaction may have ended in it."""
        self._uncertain.update(self._open)

    def adopt(self, txn: OpenTxn) -> None:
        """A transaction open in a snapshot the replay loads, unless one is open already."""
        self._open.setdefault(txn.producer_id, txn)

    def open_findings(
        self,
        last_timestamp: Callable[[int], int | None],
        reference_time: int,
        transaction_timeout_ms: int,
        log_end_offset: int,
    ) -> tuple[list[Finding], int]:
        """``hanging_transaction`` / ``open_transaction`` at the end of the log, and how many open
        transactions were judged. ``last_timestamp``: the producer's last batch's timestamp
        (``ProducerStateEntry.lastTimestamp``), by which a transaction ages."""
        judged = [txn for pid, txn in self._open.items() if pid not in self._uncertain]
        self.open_judged = {txn.producer_id for txn in judged}
        for txn in judged:
            last = last_timestamp(txn.producer_id)
            if last is not None and last > txn.last_timestamp:
                txn.last_timestamp = last
        out = self._out
        findings = open_transaction_findings(
            out.topic,
            out.partition,
            judged,
            reference_time,
            transaction_timeout_ms,
            log_end_offset,
            stable_from=min((txn.first_offset for txn in self._open.values()), default=log_end_offset),
        )
        return findings, len(judged)

    def index_findings(
        self, index: Mapping[str, Iterable[AbortedTxn]], compacted: bool, log_start_offset: int, trusted_until: int | None
    ) -> list[Finding]:
        """``txn_index_mismatch``: the aborted transactions seen against the ``.txnindex`` files."""
        return compare_txn_index(
            self._out.topic,
            self._out.partition,
            self._aborted,
            index,
            self._empty_aborts,
            compacted=compacted,
            log_start_offset=log_start_offset,
            trusted_until=trusted_until,
        )
