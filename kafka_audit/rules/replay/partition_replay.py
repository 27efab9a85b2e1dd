"""The producer-state replay of one partition (``ProducerStateManager`` over the log, in order).

A pure function of the partition's batch summaries (in log order), its ``.snapshot`` files, its
log start offset and its ``.txnindex`` entries; it returns findings and timeline events. No
Spark, no I/O.

Its parts follow Kafka's seams, each owning its state: :class:`ProducerStateManager` (the producer
maps, expiry, snapshot loading), ``ProducerAppendInfo`` (one batch's checks),
:class:`TransactionTracker`, :class:`EpochBumps` (the reasons of epoch bumps) and
:class:`SnapshotComparer`; they write to one :class:`ReplayOutput`. The replay runs the one state
machine twice:

- as the leader validating each batch as a client append (``AppendOrigin.CLIENT``;
  ``COORDINATOR`` in the coordinator-written topics, where sequences are not checked): a batch
  that fails a check is a finding. A zombie write (fenced epoch) or a duplicate changes nothing,
  as the broker rejects it, so the real producer's next batch is judged as the broker judged it;
  a batch with a sequence anomaly is then recorded as the log holds it (one gap, one finding);
- as the broker that wrote the log rebuilds its state (``AppendOrigin.REPLICATION``): that is
  what its ``.snapshot`` files capture, and each later snapshot is compared with it
  (``snapshot_mismatch``; see :mod:`kafka_audit.rules.replay.snapshot_compare`). A client append that
  succeeds updates an entry exactly as a replicated one does, so this second state is the first
  one itself until the client rejects a batch that the log holds (a fenced write, a duplicate, a
  fenced coordinator's marker); it becomes a copy at that first rejection
  (``ProducerStateManager.written``).

On top of Kafka's checks the audit says what an offline copy of the log shows:

- a producer id with no state and a first sequence != 0: ``unknown_producer_id`` (log starting
  at 0) or ``retention_gap`` (data deleted before the log start offset), warnings: brokers since
  2.5 accept the batch;
- producer-id expiration (``ProducerStateManager.removeExpiredProducers``, by batch timestamps):
  an idle producer writing again is ``producer_expired`` and then unknown, any sequence accepted;
- ``epoch_bump`` with the reason the epoch rose; transactions (open, hanging, orphan markers,
  the ``.txnindex``: :mod:`kafka_audit.rules.replay.transaction_tracker`);
- compacted topics: the cleaner removes whole batches, so forward sequence gaps, a new epoch
  starting above 0 and a producer's first sequence above 0 are not reported;
- an invalid batch (CRC mismatch, truncated, undecodable: ``BatchSummary.valid`` False) cannot be
  trusted. Kafka's recovery (``LogSegment.recover``, ``UnifiedLog.recoverLog``) truncates the log
  at the first invalid batch, so no broker ever builds state past it. The audit goes on reading,
  but no finding may follow from the batch's absence: every producer known at that point, and
  every producer first seen after it, is re-synchronised by its next batch (epoch checked,
  sequence and transaction state taken as written), snapshots adopted rather than compared for
  them, and their transactions left open across it are not judged.

Control batches carry no sequence; non-idempotent batches (producer id -1), data batches with a
producer id and no sequence (``invalid_producer_fields``), KRaft control batches and v0/v1 batches
take no part.

Timeline events (:class:`kafka_audit.rules.events.Event`), in log order, on
:attr:`ProducerStateReplay.events`: ``log_start_moved`` (the log starts above 0), ``snapshot``
(each snapshot compared), ``producer_expired``, ``epoch_bump`` (with its reason),
``transaction_begin`` / ``transaction_commit`` / ``transaction_abort``; only with
``ReplaySettings.timeline`` (the findings are the same without).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafka_audit.check_ids import CheckId
from kafka_audit.log.log_names import COORDINATOR_TOPICS
from kafka_audit.log.producer_snapshot import ProducerSnapshot
from kafka_audit.log.transaction_index import AbortedTxn
from kafka_audit.record.record_batch import MAGIC_VALUE_V2, ControlRecordType
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.events import Event, EventKind
from kafka_audit.rules.findings import Finding
from kafka_audit.rules.replay.epoch_bumps import EpochBumps
from kafka_audit.rules.replay.producer_append_info import ProducerAppendInfo
from kafka_audit.rules.replay.producer_state_entry import (
    NO_PRODUCER_EPOCH,
    AppendOrigin,
    ProducerStateEntry,
    Rejection,
    in_sequence,
    next_sequence,
)
from kafka_audit.rules.replay.producer_state_manager import ProducerStateManager
from kafka_audit.rules.replay.replay_output import ReplayOutput
from kafka_audit.rules.replay.snapshot_compare import SnapshotComparer
from kafka_audit.rules.replay.transaction_tracker import TransactionTracker
from kafka_audit.rules.replay.transaction_version import CoordinatorFacts, TransactionVersions

__all__ = ["PartitionLog", "ProducerStateReplay", "ReplaySettings", "ReplayStats", "in_sequence", "replay_partition"]

ABORT = ControlRecordType.ABORT
COMMIT = ControlRecordType.COMMIT
DEFAULT_TRANSACTION_TIMEOUT_MS = 900000
# Broker producer.id.expiration.ms default (1 day).
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86400000


@dataclass(frozen=True, slots=True)
class ReplaySettings:
    """How the replay judges one partition, decided by ``kafka_audit.audit`` and carried whole from
    ``PartitionMeta``. ``compacted``: ``cleanup.policy=compact``. ``reference_time``: the broker's
    "now" for transaction ages (None: the partition's newest timestamp). ``timeline``: build the
    timeline events. ``producer_facts``: a scanned __transaction_state's facts per producer id
    (transaction version, timeout). ``transaction_version_feature``: the transaction.version feature
    level of __cluster_metadata / bootstrap.checkpoint (None: unknown)."""

    transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS
    compacted: bool = False
    producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS
    reference_time: int | None = None
    timeline: bool = True
    producer_facts: Mapping[int, CoordinatorFacts] = field(default_factory=dict)
    transaction_version_feature: int | None = None


@dataclass
class PartitionLog:
    """Everything the replay needs about one partition, besides the batches.

    ``log_start_offset``: from ``log-start-offset-checkpoint`` or the first segment's base offset
    (the caller decides). ``snapshots``: parsed ``.snapshot`` files, any order. ``aborted_txns``:
    the ``.txnindex`` entries per segment (keyed like ``BatchSummary.segment``); segments without a
    ``.txnindex`` file are absent. ``settings``: :class:`ReplaySettings`.
    """

    topic: str
    partition: int
    log_start_offset: int
    snapshots: list[ProducerSnapshot] = field(default_factory=list)
    aborted_txns: dict[str, list[AbortedTxn]] = field(default_factory=dict)
    settings: ReplaySettings = field(default_factory=ReplaySettings)


@dataclass(slots=True)
class ReplayStats:
    """Counts for the summary panel."""

    producers: int = 0
    transactions_committed: int = 0
    transactions_aborted: int = 0
    transactions_open: int = 0
    # producer id -> (committed, aborted, open): the same transactions per producer.
    transactions_by_producer: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    batches_replayed: int = 0
    snapshots_compared: int = 0



class ProducerStateReplay:
    """Feed batches in log order with :meth:`append`, then call :meth:`finish` for the findings;
    :attr:`events` holds the timeline events."""

    def __init__(self, log: PartitionLog) -> None:
        self.log = log
        settings = log.settings
        self.out = ReplayOutput(log.topic, log.partition, settings.timeline)
        self.tp = self.out.tp
        origin = AppendOrigin.COORDINATOR if log.topic in COORDINATOR_TOPICS else AppendOrigin.CLIENT
        self.producers = ProducerStateManager(self.out.tp, origin, settings.producer_id_expiration_ms)
        self.transactions = TransactionTracker(self.out, ProducerAppendInfo(self.out.tp))
        self.versions = TransactionVersions(settings.producer_facts, settings.transaction_version_feature)
        self.bumps = EpochBumps(self.out, self.versions, settings.transaction_timeout_ms)
        self.snapshots = SnapshotComparer(log.snapshots, self.out, self.producers, self.transactions)
        self.stats = ReplayStats()
        self.newest_timestamp = -1
        self.log_end_offset: int | None = None
        self.last_valid_offset = -1
        self._started = False
        self._finished = False
        if log.log_start_offset > 0:
            self.out.event(
                EventKind.LOG_START_MOVED,
                None,
                f"Log of partition {self.tp} starts at offset {log.log_start_offset}: earlier data was deleted",
                offset=log.log_start_offset,
            )

    @property
    def started(self) -> bool:
        """Whether a batch was replayed (the first one seeds the state from the snapshots)."""
        return self._started

    @property
    def findings(self) -> list[Finding]:
        return self.out.findings

    @property
    def events(self) -> list[Event]:
        return self.out.events

    def _reject(self, rejection: Rejection, batch: BatchSummary) -> None:
        if batch.is_control and rejection.check == CheckId.FENCED_EPOCH_WRITE:
            rejection.details["marker"] = ControlRecordType(batch.control_type).name
        self.out.finding(rejection.check, rejection.message, batch, rejection.details)

    # -- batches ----------------------------------------------------------------------------------

    def append(self, batch: BatchSummary) -> None:
        """Replay one batch (``ProducerStateManager.prepareUpdate`` + ``ProducerAppendInfo.append`` + ``update``)."""
        if not batch.valid:
            self.untrusted()
            return
        if batch.magic < MAGIC_VALUE_V2:
            return
        base_offset = batch.base_offset
        if base_offset >= self.snapshots.next_due:  # always true for the first batch
            if not self._started:
                self._started = True
                self.snapshots.start(base_offset)
            self.snapshots.compare_due(base_offset)
        self.stats.batches_replayed += 1
        last_offset = batch.last_offset
        self.last_valid_offset = max(self.last_valid_offset, last_offset)
        timestamp = batch.max_timestamp
        self.newest_timestamp = max(self.newest_timestamp, timestamp)
        if self.log_end_offset is None or last_offset >= self.log_end_offset:
            self.log_end_offset = last_offset + 1
        pid = batch.producer_id
        if pid < 0:
            return
        producers = self.producers
        producers.note_batch(batch)
        if batch.is_control:
            if batch.control_type not in (ABORT, COMMIT):
                # An empty control batch (its transaction cleaned away) appends nothing, but
                # ProducerStateManager.update still records the producer id (testAppendEmptyControlBatch).
                producers.touch(pid)
                return
        elif batch.base_sequence < 0 and producers.client.origin is AppendOrigin.CLIENT:
            return  # a client's producer id without a sequence: rejected by the batch checks (87)
        # producer.id.expiration.ms: the broker forgot a producer idle that long.
        removed = producers.expire(batch)
        if removed is not None:
            self._expired(batch, removed)
        before = producers.entry(pid)  # the client's entry as the batch finds it
        producers.replicate(batch)
        if batch.is_control:
            self._append_marker(batch, before)
        else:
            self._append_data(batch, before)

    def untrusted(self) -> None:
        """A batch that cannot be trusted here (``valid`` False, or bytes the caller could not
        read as batches): re-synchronise every producer (see the module docstring)."""
        self.producers.untrusted(self.last_valid_offset)
        self.transactions.untrusted()

    def _expired(self, batch: BatchSummary, removed: ProducerStateEntry) -> None:
        """``producer_expired``: the client's entry was removed as the batch came."""
        pid = batch.producer_id
        expiration = self.log.settings.producer_id_expiration_ms
        idle = batch.max_timestamp - removed.last_timestamp
        expected = next_sequence(removed.last_seq)
        message = (
            f"Producer {pid} wrote again at offset {batch.base_offset} in partition {self.tp} after {idle} ms idle, "
            f"longer than producer.id.expiration.ms {expiration}: the broker had forgotten it and accepts any "
            f"sequence (expected {expected}, got {batch.base_sequence})"
        )
        self.out.finding(CheckId.PRODUCER_EXPIRED, message, batch, {"idle_ms": idle, "expected_sequence": expected})
        self.out.event(EventKind.PRODUCER_EXPIRED, batch, message)

    def _append_data(self, batch: BatchSummary, before: ProducerStateEntry | None) -> None:
        """ProducerAppendInfo.appendDataBatch as a client append, then the transaction state."""
        pid = batch.producer_id
        producers = self.producers
        resyncing = producers.resyncing(pid)
        previous_epoch = before.producer_epoch if before is not None else NO_PRODUCER_EPOCH
        rejection = producers.client.append_data(batch, AppendOrigin.COORDINATOR if resyncing else None)
        if rejection is not None:
            if rejection.check in (CheckId.FENCED_EPOCH_WRITE, CheckId.DUPLICATE_SEQUENCE):
                producers.written_holds(batch)
                self._reject(rejection, batch)
                return
            if not self._compaction_explains(rejection, batch, before):
                self._reject(rejection, batch)
            # The log holds the batch: go on from what was written.
            producers.client.append_data(batch, AppendOrigin.REPLICATION)
        elif (
            (before is None or before.producer_epoch == NO_PRODUCER_EPOCH)
            and batch.base_sequence != 0
            and not self._unknown_tolerated(pid, resyncing)
        ):
            self._unknown_producer(batch)
        producers.settled(pid)
        if previous_epoch != NO_PRODUCER_EPOCH and batch.producer_epoch > previous_epoch:
            self.bumps.data_bump(batch, previous_epoch)
        else:
            self.bumps.next_batch(batch)
        self.transactions.on_data(batch, resyncing)

    def _compaction_explains(self, rejection: Rejection, batch: BatchSummary, before: ProducerStateEntry | None) -> bool:
        """The cleaner removes whole batches: a new epoch or a sequence that starts ahead."""
        if not self.log.settings.compacted:
            return False
        if rejection.check == CheckId.NEW_EPOCH_NONZERO_SEQUENCE:
            return True
        return rejection.check == CheckId.OUT_OF_ORDER_SEQUENCE and before is not None and batch.base_sequence > before.last_seq

    def _unknown_tolerated(self, pid: int, resyncing: bool) -> bool:
        return (
            resyncing
            or self.producers.was_expired(pid)
            or self.log.settings.compacted
            or self.producers.client.origin is AppendOrigin.COORDINATOR
        )

    def _unknown_producer(self, batch: BatchSummary) -> None:
        """UnknownProducerId: a first batch with sequence != 0 and no state to check it against."""
        pid = batch.producer_id
        seq = batch.base_sequence
        known = self.snapshots.older_entry(pid, batch.base_offset)
        missing = [0, seq - 1]
        if known is not None and known.producer_epoch == batch.producer_epoch and known.last_offset >= 0:
            if in_sequence(known.last_sequence, seq):
                return  # an older snapshot shows the sequences go on: the producer only expired
            if seq > known.last_sequence:
                missing = [next_sequence(known.last_sequence), seq - 1]
        start = self.log.log_start_offset
        details = {"log_start_offset": start, "missing_sequences": missing, "in_snapshot": known is not None}
        head = (
            f"Found no record of producerId={pid} at offset {batch.base_offset} in partition {self.tp}: its "
            f"first batch has sequence {seq}"
        )
        if start > 0:
            message = (
                f"{head}, so sequences {missing[0]} to {missing[1]} were written before the log start offset "
                f"{start} and deleted (retention or DeleteRecords)"
            )
            self.out.finding(CheckId.RETENTION_GAP, message, batch, details)
        else:
            self.out.finding(CheckId.UNKNOWN_PRODUCER_ID, f"{head}, not 0, and the log starts at offset 0", batch, details)

    def _append_marker(self, batch: BatchSummary, before: ProducerStateEntry | None) -> None:
        """ProducerAppendInfo.appendEndTxnMarker as a client append, then close the transaction."""
        pid = batch.producer_id
        producers = self.producers
        resyncing = producers.resyncing(pid)
        previous_epoch = before.producer_epoch if before is not None else NO_PRODUCER_EPOCH
        rejection = producers.client.append_marker(batch, transaction_version=self.versions.version(pid) or 0)
        if rejection is not None:
            producers.written_holds(batch)
            self._reject(rejection, batch)
            if rejection.check == CheckId.FENCED_EPOCH_WRITE:
                return
            producers.end_as_written(batch)
        producers.settled(pid)
        txn, uncertain = self.transactions.close(pid)
        self.versions.observe_marker(pid, batch.control_type, batch.producer_epoch, txn.epoch if txn is not None else None)
        if previous_epoch != NO_PRODUCER_EPOCH and batch.producer_epoch > previous_epoch:
            self.bumps.marker_bump(batch, previous_epoch, txn)
        else:
            self.bumps.next_batch(batch)
        self.transactions.end(batch, txn, judged=not (resyncing or uncertain or self._marker_retry(batch, before, txn)))

    def _marker_retry(self, batch: BatchSummary, before: ProducerStateEntry | None, txn: object) -> bool:
        """A TV2 marker written again at the current epoch with no transaction open: the retry of
        a marker already written (KAFKA-19999: coordinator recovery or a lost WriteTxnMarkers
        answer), legal and no orphan."""
        return (
            txn is None
            and before is not None
            and before.producer_epoch == batch.producer_epoch
            and self.versions.is_tv2(batch.producer_id)
        )

    # -- end of log -------------------------------------------------------------------------------

    def finish(self) -> list[Finding]:
        if self._finished:
            return self.findings
        self._finished = True
        if not self._started:
            self.snapshots.start(None)
        self.snapshots.compare_due(None, self.log_end_offset)
        self.bumps.finish()
        log_end = self.log_end_offset if self.log_end_offset is not None else self.log.log_start_offset
        reference = self.log.settings.reference_time if self.log.settings.reference_time is not None else self.newest_timestamp
        found, judged = self.transactions.open_findings(self._last_timestamp, reference, self.log.settings.transaction_timeout_ms, log_end)
        self.out.extend(found)
        self.out.extend(
            self.transactions.index_findings(
                self.log.aborted_txns, self.log.settings.compacted, self.log.log_start_offset, self.producers.invalid_after
            )
        )
        stats = self.stats
        stats.producers = self.producers.producers
        stats.transactions_committed = self.transactions.committed
        stats.transactions_aborted = self.transactions.aborted
        stats.transactions_open = judged
        stats.transactions_by_producer = self.transactions.counts_by_producer()
        stats.snapshots_compared = self.snapshots.compared
        return self.findings

    def _last_timestamp(self, pid: int) -> int | None:
        entry = self.producers.entry(pid)
        return entry.last_timestamp if entry is not None else None


def replay_partition(log: PartitionLog, batches: Iterable[BatchSummary]) -> list[Finding]:
    """Replay one partition's batches (in log order: by segment base offset, then position).

    Returns the producer-state findings of SPEC section 2, offsets absolute."""
    replay = ProducerStateReplay(log)
    for batch in batches:
        replay.append(batch)
    return replay.finish()
