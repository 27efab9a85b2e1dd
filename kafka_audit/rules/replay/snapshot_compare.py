"""The replay's ``.snapshot`` files: seeding the state and ``snapshot_mismatch``.

``ProducerStateManager.readSnapshot`` / ``loadProducerEntry``: a snapshot's file name is the
offset after the state it captures. The replay starts from the newest usable snapshot at or before
its first batch (state survives deleted data, KIP-360) and compares each later one, when the
replay reaches its offset, with the state the broker rebuilt from the log as written
(``AppendOrigin.REPLICATION``, the replay's ``written`` map): epoch, last sequence and last offset
(``ProducerStateEntry.lastSeq`` / ``lastDataOffset``: the last *data* batch's, both -1 after an end
marker changed the epoch, which clears the batch metadata), coordinator epoch and the current
transaction's first offset.

A producer missing from a snapshot is no mismatch (``removeExpiredProducers`` drops idle ones).
A producer the snapshot knows and the replay does not (its data was deleted), or whose state the
replay cannot vouch for (known only from a marker, re-synchronising after an invalid batch), is
adopted from the snapshot instead of compared.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_audit.check_ids import CheckId
from kafka_audit.log.producer_snapshot import ProducerSnapshot, ProducerSnapshotEntry
from kafka_audit.rules.events import EventKind
from kafka_audit.rules.replay.producer_state_entry import decrement_sequence
from kafka_audit.rules.replay.producer_state_manager import ProducerStateManager
from kafka_audit.rules.replay.replay_output import ReplayOutput
from kafka_audit.rules.replay.transaction_tracker import TransactionTracker
from kafka_audit.rules.replay.transactions import Anchor, OpenTxn


def _usable(snapshot: ProducerSnapshot) -> bool:
    """A snapshot the broker would load: an offset in its name and no read error
    (CorruptSnapshotException)."""
    return snapshot.offset is not None and snapshot.valid


def _offset(snapshot: ProducerSnapshot) -> int:
    """The offset in a usable snapshot's name (every snapshot the comparer keeps has one)."""
    offset = snapshot.offset
    return offset if offset is not None else -1


class SnapshotComparer:
    """Seeds the replay's producer state from a snapshot and compares the later ones with it."""

    def __init__(
        self,
        snapshots: Iterable[ProducerSnapshot],
        output: ReplayOutput,
        producers: ProducerStateManager,
        transactions: TransactionTracker,
    ) -> None:
        self._out = output
        self._producers = producers
        self._txns = transactions
        self.compared = 0
        self.snapshots = sorted((s for s in snapshots if _usable(s)), key=_offset)
        self._entries: dict[int, dict[int, ProducerSnapshotEntry]] = {}
        self._pending: list[ProducerSnapshot] = []
        # The offset of the next snapshot to compare, for the replay's per-batch test: inf when
        # none is left, -inf before :meth:`start` (the first batch starts the comparison).
        self.next_due: float = float("-inf")
        self.anchors: dict[int, Anchor] = {}

    def entries(self, snapshot: ProducerSnapshot) -> dict[int, ProducerSnapshotEntry]:
        cached = self._entries.get(id(snapshot))
        if cached is None:
            cached = self._entries[id(snapshot)] = {e.producer_id: e for e in snapshot.entries}
        return cached

    def older_entry(self, pid: int, offset: int) -> ProducerSnapshotEntry | None:
        """The producer's entry in the newest snapshot at or before ``offset`` that knows it."""
        known = None
        for snapshot in self.snapshots:
            if _offset(snapshot) > offset:
                break
            known = self.entries(snapshot).get(pid, known)
        return known

    def start(self, first_offset: int | None) -> None:
        """Seed from the newest snapshot at or before the first batch; queue the later ones."""
        seed = None
        later = []
        for snapshot in self.snapshots:
            if first_offset is None or _offset(snapshot) <= first_offset:
                seed = snapshot
            else:
                later.append(snapshot)
        self._pending = later[::-1]  # pop() from the end gives the lowest offset
        self.next_due = _offset(self._pending[-1]) if self._pending else float("inf")
        if seed is not None:
            for entry in self.entries(seed).values():
                self._adopt(entry, _offset(seed))

    def compare_due(self, offset: int | None, log_end_offset: int | None = None) -> None:
        """Compare the snapshots whose offset is at most ``offset`` (all remaining when None, up
        to ``log_end_offset``)."""
        pending = self._pending
        while pending and (offset is None or _offset(pending[-1]) <= offset):
            snapshot = pending.pop()
            if offset is None and log_end_offset is not None and _offset(snapshot) > log_end_offset:
                # Beyond the end of the log (truncated tail): Kafka deletes such snapshots on load
                # (ProducerStateManager.truncateAndReload); nothing to compare them with.
                continue
            self._compare(snapshot)
        self.next_due = _offset(pending[-1]) if pending else float("inf")

    def _adopt(self, entry: ProducerSnapshotEntry, offset: int) -> None:
        """loadProducerEntry into both maps; an open transaction becomes the replay's too."""
        pid = entry.producer_id
        self._producers.load(entry)
        anchor_offset = entry.last_offset if entry.last_offset >= 0 else offset
        anchor = Anchor(
            None,
            anchor_offset,
            anchor_offset,
            2,
            pid,
            entry.producer_epoch,
            decrement_sequence(entry.last_sequence, entry.offset_delta) if entry.last_sequence >= 0 else None,
            None,
            entry.timestamp,
        )
        self.anchors[pid] = anchor
        if entry.current_txn_first_offset >= 0:
            txn_anchor = anchor._replace(base_offset=entry.current_txn_first_offset)
            self._txns.adopt(
                OpenTxn(pid, entry.current_txn_first_offset, entry.timestamp, entry.producer_epoch, txn_anchor, entry.timestamp)
            )

    def _compare(self, snapshot: ProducerSnapshot) -> None:
        producers, out = self._producers, self._out
        self.compared += 1
        offset = _offset(snapshot)
        mismatched = 0
        for pid, entry in sorted(self.entries(snapshot).items()):
            written = producers.written_entry(pid)
            if written is None or producers.entry(pid) is None or producers.awaiting_resync(pid):
                self._adopt(entry, offset)
                continue
            replayed = {
                "epoch": written.producer_epoch,
                "coordinator_epoch": written.coordinator_epoch,
                "current_txn_first_offset": written.current_txn_first_offset,
            }
            stored = {
                "epoch": entry.producer_epoch,
                "coordinator_epoch": entry.coordinator_epoch,
                "current_txn_first_offset": entry.current_txn_first_offset,
            }
            stored_seq = entry.last_sequence if entry.last_offset >= 0 else -1
            if written.batch_metadata or stored_seq < 0 or entry.producer_epoch != written.producer_epoch:
                replayed["last_sequence"] = written.last_seq
                replayed["last_offset"] = written.last_data_offset
                stored["last_sequence"] = stored_seq
                stored["last_offset"] = entry.last_offset
            else:
                # Known only from a marker: the snapshot knows the sequences the log no longer shows.
                producers.adopt_sequences(entry)
            diffs = {k: {"snapshot": stored[k], "replayed": replayed[k]} for k in stored if stored[k] != replayed[k]}
            if not diffs:
                continue
            mismatched += 1
            parts = ", ".join(
                f"{k.replace('_', ' ')} {v['snapshot']} (snapshot) vs {v['replayed']} (log)" for k, v in diffs.items()
            )
            anchor = producers.last_batch(pid) or self.anchors.get(pid)
            out.finding(
                CheckId.SNAPSHOT_MISMATCH,
                f"Producer state snapshot at offset {offset} of partition {out.tp} disagrees with the log for "
                f"producer {pid}: {parts}",
                anchor,
                {"snapshot_offset": offset, "snapshot": snapshot.path, "producer_id": pid, "fields": diffs},
                offset=offset,
            )
        out.event(
            EventKind.SNAPSHOT,
            None,
            f"Producer state snapshot {snapshot.path} at offset {offset} of partition {out.tp}: "
            f"{len(snapshot.entries)} producer(s), {mismatched} disagreeing with the log",
            offset=offset,
        )

