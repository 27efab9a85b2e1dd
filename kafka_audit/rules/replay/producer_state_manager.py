"""Kafka's ``ProducerStateManager`` (storage module, ``org.apache.kafka.storage.internals.log``,
Kafka 3.6) for the replay: the producer map, expiry and snapshot loading.

- :class:`ProducerStates` is one map of entries, appended to one batch at a time as
  ``prepareUpdate`` / ``ProducerAppendInfo.append`` / ``update`` do for an :class:`AppendOrigin`
  (the checks: :class:`kafka_audit.rules.replay.producer_append_info.ProducerAppendInfo`). A producer id with
  no entry is accepted at any sequence, as ``checkSequence`` does when
  ``currentEntry.producerEpoch()`` is ``NO_PRODUCER_EPOCH`` (brokers since 2.5). A producer known
  only from an end marker has an epoch and no batch metadata: its next data batch must start at
  sequence 0 (``ProducerStateManagerTest.testAppendTxnMarkerWithNoProducerState``).
- :class:`ProducerStateManager` holds the replay's two maps: the leader's (``CLIENT``, or
  ``COORDINATOR`` in coordinator-written topics), which judges each batch, and the one the broker
  that wrote the log rebuilt (``REPLICATION``: what its ``.snapshot`` files capture). They are one
  map until the leader rejects a batch the log holds (a fenced write, a duplicate, a fenced
  coordinator's marker); the written one is a copy from then on. It also keeps which producers
  expired (``removeExpiredProducers``, by batch timestamps) and which re-synchronise after a batch
  that cannot be trusted (see :mod:`kafka_audit.rules.replay.partition_replay`).
"""

from __future__ import annotations

from collections.abc import Collection

from kafka_audit.log.producer_snapshot import ProducerSnapshotEntry
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.replay.producer_append_info import ProducerAppendInfo
from kafka_audit.rules.replay.producer_state_entry import AppendOrigin, BatchMetadata, ProducerStateEntry, Rejection, in_sequence

_REPLICATION = AppendOrigin.REPLICATION  # read once per batch: a module name is read fastest


class ProducerStates:
    """A partition's producer entries as appends of one :class:`AppendOrigin` build them
    (``ProducerStateManager`` with ``prepareUpdate`` / ``ProducerAppendInfo`` / ``update``)."""

    def __init__(self, topic_partition: str, origin: AppendOrigin) -> None:
        self.tp = topic_partition
        self.origin = origin
        self.entries: dict[int, ProducerStateEntry] = {}
        self._checks = ProducerAppendInfo(topic_partition)

    def get(self, producer_id: int) -> ProducerStateEntry | None:
        return self.entries.get(producer_id)

    def copy(self, origin: AppendOrigin) -> ProducerStates:
        """These entries, copied, to be appended to as ``origin`` from now on."""
        states = ProducerStates(self.tp, origin)
        states.entries = {pid: entry.copy() for pid, entry in self.entries.items()}
        return states

    def touch(self, producer_id: int) -> None:
        """``update`` of an append that appended nothing: the producer id gets an (empty) entry."""
        self.entries.setdefault(producer_id, ProducerStateEntry(producer_id))

    def load(self, entry: ProducerSnapshotEntry) -> None:
        """ProducerStateManager.loadProducerEntry."""
        self.entries[entry.producer_id] = ProducerStateEntry.from_snapshot(entry)

    def expire(self, producer_id: int, now_ms: int, expiration_ms: int) -> ProducerStateEntry | None:
        """removeExpiredProducers for one producer id: removed (and returned) when it has no
        ongoing transaction and ``now - lastTimestamp >= producer.id.expiration.ms``
        (``isProducerExpired``)."""
        entry = self.entries.get(producer_id)
        if (
            entry is None
            or now_ms - entry.last_timestamp < expiration_ms
            or entry.current_txn_first_offset >= 0
            or entry.last_timestamp < 0
            or now_ms < 0
        ):
            return None
        return self.entries.pop(producer_id)

    def append_data(self, batch: BatchSummary, origin: AppendOrigin | None = None) -> Rejection | None:
        """A data batch (``appendDataBatch``, after the duplicate check for ``CLIENT``).

        ``origin`` overrides this map's origin for
        one batch (the replay records a batch the log holds after a client check failed)."""
        origin = origin or self.origin
        pid = batch.producer_id
        entry = self.entries.get(pid)
        epoch = batch.producer_epoch
        if entry is None:
            entry = self.entries[pid] = ProducerStateEntry(pid)
        elif origin is not _REPLICATION:
            metadata = entry.batch_metadata
            # A batch of the same epoch that goes on at the next sequence passes every check (a
            # retained range never starts after the last sequence): the common case, tested first.
            if not (
                metadata
                and epoch == entry.producer_epoch
                and (batch.base_sequence == metadata[-1].last_seq + 1 or in_sequence(metadata[-1].last_seq, batch.base_sequence))
            ):
                rejection = self._checks.validate_data(batch, entry, origin)
                if rejection is not None:
                    return rejection
        last_offset = batch.last_offset
        entry.add_batch(epoch, batch.last_sequence, last_offset, last_offset - batch.base_offset, batch.max_timestamp)
        if batch.is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = batch.base_offset  # began a new transaction (TxnMetadata)
        return None

    def append_marker(self, batch: BatchSummary, origin: AppendOrigin | None = None, transaction_version: int = 0) -> Rejection | None:
        """An end marker (``appendEndTxnMarker``): epoch and coordinator epoch checks (for the
        producer's ``transaction_version``), then the transaction ends. Whether it completed a
        transaction is read from the entry before."""
        origin = origin or self.origin
        pid = batch.producer_id
        current = self.entries.get(pid)
        if origin is not _REPLICATION and current is not None:
            rejection = self._checks.validate_marker(batch, current, transaction_version)
            if rejection is not None:
                return rejection
        entry = current if current is not None else self.entries.setdefault(pid, ProducerStateEntry(pid))
        entry.end_transaction(batch.producer_epoch, batch.coordinator_epoch, batch.max_timestamp)
        return None


class ProducerStateManager:
    """The replay's producer maps (the leader's and the written one), expiry and snapshot loading."""

    def __init__(self, topic_partition: str, origin: AppendOrigin, expiration_ms: int) -> None:
        self.client = ProducerStates(topic_partition, origin)
        self._written: ProducerStates | None = None  # None: the client's map (see written)
        self.expiration_ms = expiration_ms
        # Producers whose next batch re-synchronises them after an invalid batch, and the last
        # valid offset before the first invalid batch (None: no invalid batch yet).
        self._resync: set[int] = set()
        self.invalid_after: int | None = None
        self._expired: set[int] = set()
        # Each producer's last batch in the log, where a snapshot finding points.
        self._last_batches: dict[int, BatchSummary] = {}

    # -- the maps ---------------------------------------------------------------------------------

    @property
    def written(self) -> ProducerStates:
        """The state as the broker that wrote the log rebuilt it (``AppendOrigin.REPLICATION``):
        the client's map itself until the client rejects a batch the log holds."""
        return self._written if self._written is not None else self.client

    def states(self) -> tuple[ProducerStates, ...]:
        """The distinct producer-state maps (the client's, and the written one once forked)."""
        return (self.client,) if self._written is None else (self.client, self._written)

    @property
    def producers(self) -> int:
        return len(self.client.entries)

    def entry(self, pid: int) -> ProducerStateEntry | None:
        """The client's entry for ``pid``."""
        return self.client.entries.get(pid)

    def written_entry(self, pid: int) -> ProducerStateEntry | None:
        return self.written.entries.get(pid)

    def fork_written(self) -> ProducerStates:
        """Give the written state a map of its own, a copy of the client's (they are equal until
        the client rejects a batch the log holds); from then on every batch updates both."""
        if self._written is None:
            self._written = self.client.copy(_REPLICATION)
        return self._written

    def written_holds(self, batch: BatchSummary) -> None:
        """The client rejected ``batch``, which the log holds: a written state still shared with
        the client forks here (the client's state before the batch) and appends it (a forked one
        did already, in :meth:`replicate`)."""
        if self._written is None:
            written = self.fork_written()
            if batch.is_control:
                written.append_marker(batch)
            else:
                written.append_data(batch)

    def replicate(self, batch: BatchSummary) -> None:
        """A forked written map records the batch as written, before the client judges it."""
        written = self._written
        if written is not None:
            if batch.is_control:
                written.append_marker(batch)
            else:
                written.append_data(batch)

    def touch(self, pid: int) -> None:
        for states in self.states():
            states.touch(pid)

    def end_as_written(self, batch: BatchSummary) -> None:
        """A fenced coordinator's marker still ends the transaction the log shows; its lower
        coordinator epoch is not taken over, so each of its markers is reported."""
        entry = self.client.entries[batch.producer_id]
        entry.end_transaction(batch.producer_epoch, entry.coordinator_epoch, batch.max_timestamp)

    # -- expiry, snapshots, re-synchronisation -----------------------------------------------------

    def expire(self, batch: BatchSummary) -> ProducerStateEntry | None:
        """producer.id.expiration.ms: the client's entry removed as ``batch`` comes (None: kept)."""
        pid, timestamp = batch.producer_id, batch.max_timestamp
        removed = self.client.expire(pid, timestamp, self.expiration_ms)
        if self._written is not None:
            self._written.expire(pid, timestamp, self.expiration_ms)
        if removed is not None:
            self._expired.add(pid)
            self._resync.discard(pid)
        return removed

    def was_expired(self, pid: int) -> bool:
        return pid in self._expired

    def load(self, entry: ProducerSnapshotEntry) -> None:
        """loadProducerEntry into both maps: the producer is known again."""
        for states in self.states():
            states.load(entry)
        self.settled(entry.producer_id)

    def adopt_sequences(self, entry: ProducerSnapshotEntry) -> None:
        """A producer known only from a marker: the snapshot knows the sequences the log no longer shows."""
        for states in self.states():
            state = states.get(entry.producer_id)
            if state is not None and not state.batch_metadata and state.producer_epoch == entry.producer_epoch:
                state.batch_metadata.append(BatchMetadata(entry.last_sequence, entry.last_offset, entry.offset_delta, entry.timestamp))

    def settled(self, pid: int) -> None:
        """The producer's batch was judged: no longer expired, no longer re-synchronising."""
        self._expired.discard(pid)
        self._resync.discard(pid)

    def untrusted(self, last_valid_offset: int) -> None:
        """A batch that cannot be trusted: every producer known re-synchronises by its next batch."""
        if self.invalid_after is None:
            self.invalid_after = last_valid_offset
        self._resync.update(self.client.entries)

    def resync_view(self) -> Collection[int]:
        """The producers whose next batch re-synchronises them (the live set, to read only)."""
        return self._resync

    def awaiting_resync(self, pid: int) -> bool:
        return pid in self._resync

    def resyncing(self, pid: int) -> bool:
        """Whether the producer's next batch re-synchronises it (never before an invalid batch)."""
        return self.invalid_after is not None and (pid in self._resync or self.client.get(pid) is None)

    def note_batch(self, batch: BatchSummary) -> None:
        self._last_batches[batch.producer_id] = batch

    def last_batch(self, pid: int) -> BatchSummary | None:
        return self._last_batches.get(pid)
