"""The checks that need a whole partition in log order: offsets, indexes, producer state.

Runs after the shuffle, once per Kafka partition, in one pass over the batch summaries:
each summary feeds the offset-continuity observer, is buffered per segment for the index
verification of that segment, and flows on into the producer-state replay.

:func:`audit_partition` returns the partition's findings and its :class:`PartitionTotals`; with
``PartitionMeta.replay.timeline`` the totals also carry the replay's timeline events
(``PartitionTotals.events``: :class:`kafka_audit.rules.events.Event`, in log order per partition,
merged across partitions by :meth:`PartitionTotals.merge`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from kafka_audit.audit.partition_runs import PartitionRuns
from kafka_audit.audit.partition_sidecars import IndexVerifier, read_sidecars, sidecar_paths
from kafka_audit.audit.replica_sets import digest_batches
from kafka_audit.audit.segment_coverage import Coverage
from kafka_audit.audit.segment_indexes import (
    SegmentFiles,
    unreadable_with_sidecars,
)
from kafka_audit.check_ids import CheckId
from kafka_audit.io.broker_log_lines import BrokerLogLine
from kafka_audit.io.storage import StorageSettings
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.producer_snapshot import ProducerSnapshot
from kafka_audit.log.sidecar_file import MAX_SIDECAR_BYTES, SidecarEntries
from kafka_audit.rules.batch_summary import BatchSummary, RunSlice, SummaryColumns, flatten
from kafka_audit.rules.events import Event
from kafka_audit.rules.findings import Finding, partition_label
from kafka_audit.rules.partition.missing_segments import checkpoint_findings
from kafka_audit.rules.partition.offset_continuity import OffsetContinuity
from kafka_audit.rules.rejection.broker_rejection import BrokerRejections
from kafka_audit.rules.replay.partition_replay import PartitionLog, ProducerStateReplay, ReplaySettings
from kafka_audit.rules.replay.producer_activity import ProducerActivityLog
from kafka_audit.rules.replay.replay_runs import RunTaker
from kafka_audit.rules.replication.replica_compare import ReplicaDigest


@dataclass(slots=True)
class PartitionMeta:
    """What the partition step needs besides the batches: only paths and settings travel."""

    topic: str
    partition: int
    log_start_offset: int
    # How the producer-state replay judges the partition, taken whole by its PartitionLog.
    replay: ReplaySettings
    segments: dict[str, SegmentFiles] = field(default_factory=dict)
    # (path to open, display path) of each .snapshot file.
    snapshots: list[tuple[str, str]] = field(default_factory=list)
    # The request's storage settings, to read URIs with.
    storage_options: StorageSettings = field(default=StorageSettings(), repr=False)
    # The --broker-log lines about this partition.
    broker_lines: tuple[BrokerLogLine, ...] = ()
    # The folder's live segments below the first one scanned, which the user did not pass.
    unscanned_segments: list[str] = field(default_factory=list)
    # A history joined from remote and local storage (log.tiered_history): the remote segments,
    # whose batches at or above the local log's first offset are the local ones and not replayed.
    remote_segments: frozenset[str] = frozenset()
    local_log_start: int | None = None
    # Remote sidecars the listing showed empty: read as no bytes without a request.
    empty_objects: frozenset[str] = frozenset()
    # Live segments whose indexes a task of their own checks (segment_indexes.IndexCheck).
    indexes_apart: frozenset[str] = frozenset()
    # A replica with peers (SPEC section 6): its set and its broker's facts, the digest to fill.
    replica_set: tuple | None = None
    replica: ReplicaDigest | None = None
    # SPEC missing_segment's checkpoint cases (rules.missing_segments), for a partition without
    # tiered segments: the checkpointed log start and recovery point, the first local segment's
    # base offset, and per checkpoint file whether it was written after the newest segment.
    checkpoints: dict[str, Any] | None = None

    @classmethod
    def from_discovery(cls, found, options, storage_options: StorageSettings | None = None) -> PartitionMeta:
        """Build from a discovered partition. The log start offset is the broker's
        ``log-start-offset-checkpoint`` entry when present (UnifiedLog.logStartOffset),
        else the first live segment's base offset: of the folder, not of the files given,
        when only some of its segments were passed (the others were not scanned, not deleted)."""
        cutoff = found.local_log_start
        # Remote copies of segments still kept locally are audited but not replayed twice.
        live = [
            s for s in found.segments
            if s.state == "live" and not (s.remote_id and cutoff is not None and s.base_offset >= cutoff)
        ]
        first_base = min((s.base_offset for s in live), default=0)
        newest = max((s.base_offset for s in live), default=None)
        if found.folder_first_offset is not None:
            first_base = min(first_base, found.folder_first_offset)
        checkpointed = found.checkpointed_log_start
        log_start = max(first_base, checkpointed) if checkpointed is not None else first_base
        return cls(
            topic=found.topic,
            partition=found.partition,
            log_start_offset=log_start,
            replay=ReplaySettings(
                transaction_timeout_ms=options.transaction_timeout_ms,
                compacted=options.validation.is_compacted(found.topic),
                producer_id_expiration_ms=options.producer_id_expiration_ms,
                reference_time=options.reference_time,
                timeline=options.timeline,
                transaction_version_feature=options.written_by.of(found.display_path).transaction_version,
            ),
            segments={
                s.display_path: SegmentFiles(
                    s.display_path, s.base_offset, s.index, s.time_index, s.txn_index, s.path, s.size,
                    s.base_offset == newest and (found.folder_last_offset or 0) <= newest, s.file_id,
                )
                for s in live
            },
            snapshots=[(snap.path, snap.display_path) for snap in found.snapshots],
            storage_options=storage_options if storage_options is not None else StorageSettings(),
            broker_lines=options.broker_log.for_partition(found.topic, found.partition) if options.broker_log else (),
            unscanned_segments=list(found.unscanned_segments),
            remote_segments=frozenset(s.display_path for s in live if s.remote_id),
            local_log_start=cutoff,
            empty_objects=frozenset(found.empty_objects),
            checkpoints=None if found.remote or cutoff is not None else _checkpoints(found, live, first_base),
        )


def _checkpoints(found, live: list, first_base: int) -> dict[str, Any]:
    """What :func:`checkpoint_findings` needs of a discovered partition (``PartitionDir``)."""
    newest_mtime = max((s.mtime_ms for s in live if s.mtime_ms is not None), default=None)
    return {
        "log_start": found.checkpointed_log_start,
        "first_local_offset": first_base if live else None,
        "recovery_point": found.checkpointed_recovery_point,
        "written_after": {
            name: mtime is not None and newest_mtime is not None and mtime > newest_mtime
            for name, mtime in found.checkpoint_mtimes.items()
        },
    }


@dataclass(slots=True)
class PartitionTotals:
    """Counts for the summary panel and the ``producers`` rows, merged across partitions."""

    producers: set[int] = field(default_factory=set)
    committed: int = 0
    aborted: int = 0
    open: int = 0
    producer_rows: list[dict] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    # Requests to an object store and the bytes fetched, where a Spark task counts them.
    requests: int = 0
    bytes_fetched: int = 0
    # A replica with peers: its set and digest, compared once the set is complete (replica_sets).
    replica_set: tuple | None = None
    digest: ReplicaDigest | None = None

    def merge(self, other: PartitionTotals) -> PartitionTotals:
        self.producers |= other.producers
        self.committed += other.committed
        self.aborted += other.aborted
        self.open += other.open
        self.producer_rows.extend(other.producer_rows)
        self.events.extend(other.events)
        self.requests += other.requests
        self.bytes_fetched += other.bytes_fetched
        return self


def audit_partition(
    meta: PartitionMeta, summaries: Iterable[BatchSummary | SummaryColumns], storage: StorageContext | None = None
) -> tuple[list[Finding], PartitionTotals]:
    """All partition-level findings for one partition, and its totals, from its batch summaries
    in log order (each a :class:`BatchSummary`, or a run of them as :class:`SummaryColumns`). Its
    files are read under ``storage`` (the request's; none: one of ``meta.storage_options``), its
    sidecars in a store a few at once, ahead of the checks that read them."""
    storage = storage if storage is not None else StorageContext(meta.storage_options)
    with storage.prefetching(sidecar_paths(meta), MAX_SIDECAR_BYTES + 1, meta.empty_objects):
        return _audit_partition(meta, summaries, storage)


# The partition step's one pass per batch, every per-batch step bound to a local and called inline
# (bench/partition_step.py measures it); what runs once per segment or partition is in helpers.
def _audit_partition(
    meta: PartitionMeta, items: Iterable[BatchSummary | SummaryColumns], storage: StorageContext
) -> tuple[list[Finding], PartitionTotals]:
    findings: list[Finding] = []
    totals = PartitionTotals()
    continuity = OffsetContinuity(meta.replay.compacted)
    activity = ProducerActivityLog(meta.topic, meta.partition)
    segment_batches: list[BatchSummary | RunSlice] = []
    current_segment: str | None = None
    indexes = IndexVerifier(meta, storage, findings)
    verify, changed = indexes.verify, indexes.changed
    unreadable = {files.segment for files in meta.segments.values() if unreadable_with_sidecars(files, storage)}
    snapshots, txn_indexes = read_sidecars(meta, unreadable, storage, findings)
    replay = ProducerStateReplay(_partition_log(meta, snapshots, txn_indexes))
    coverage = Coverage(meta.segments)
    live = meta.segments
    producers = totals.producers
    # --broker-log: the broker's produce errors joined with this replay's batches (broker_rejection).
    rejections = broker_rejections(meta, snapshots)
    runs = _runs(meta, rejections, RunTaker(replay, activity, producers), (coverage, continuity))
    summaries = _watched(meta, flatten(items), rejections, totals) if runs is None else runs.summaries(items)
    # One pass: each summary is buffered for its segment's index verification, observed for the
    # offsets, the counts and the producer activity, and replayed (methods bound once: the loop
    # runs once per batch).
    buffer = segment_batches.append
    observe_offsets, observe_activity = continuity.observe, activity.observe
    gap_before, append = coverage.gap_before, replay.append
    remote, cutoff = meta.remote_segments, meta.local_log_start
    for summary in summaries:
        if summary.segment != current_segment:
            if summary.segment not in live:
                continue  # deleted/cleaned/swap files: audited record by record, not replayed
            if current_segment is not None:
                verify(current_segment, segment_batches)
                if current_segment in changed:
                    # Its bytes after the last batch read were not read (segment_changed): the
                    # offsets up to this segment are not missing, only unread.
                    continuity.unreadable.append((None, summary.segment_base_offset - 1))
            current_segment, segment_batches = summary.segment, []
            buffer = segment_batches.append
            if runs is not None:
                runs.buffered = segment_batches
        buffer(summary)
        if cutoff is not None and summary.base_offset >= cutoff and summary.segment in remote:
            gap_before(summary)  # covered: the local log holds these batches and replays them
            continue
        found = observe_offsets(summary)
        if found:
            findings.extend(found)
        if summary.valid and summary.producer_id >= 0:
            producers.add(summary.producer_id)
            observe_activity(summary)
        if gap_before(summary):
            replay.untrusted()
        append(summary)
    if current_segment is not None:
        verify(current_segment, segment_batches)
    indexes.verify_unread(unreadable)
    _finish(meta, replay, (coverage, continuity, activity), rejections, findings, totals)
    return findings, totals


def _runs(
    meta: PartitionMeta, rejections: BrokerRejections | None, taker: RunTaker, observers: tuple[Coverage, OffsetContinuity]
) -> PartitionRuns | None:
    """The fast path over runs of batches as columns; None where every batch takes the
    per-summary path: with timeline events, a broker log to join or a replica to digest."""
    if meta.replay.timeline or rejections is not None or meta.replica is not None:
        return None
    apart = meta.remote_segments if meta.local_log_start is not None else frozenset()
    return PartitionRuns(meta.segments, apart, taker, *observers)


def _watched(
    meta: PartitionMeta, summaries: Iterable[BatchSummary], rejections: BrokerRejections | None,
    totals: PartitionTotals,
) -> Iterable[BatchSummary]:
    """The summaries, watched by the broker log's join (live segments only) and, for a replica of
    a replica set, digested for the comparison of replicas on their way to the replay."""
    if rejections is not None:
        summaries = rejections.watch(summary for summary in summaries if summary.segment in meta.segments)
    if meta.replica is not None:
        totals.replica_set = meta.replica_set
        totals.digest = replace(meta.replica, log_start_offset=meta.log_start_offset, batches=[], segments=[])
        summaries = digest_batches(totals.digest, meta.segments, summaries)
    return summaries


def _partition_log(
    meta: PartitionMeta, snapshots: list[ProducerSnapshot], txn_indexes: dict[str, SidecarEntries]
) -> PartitionLog:
    """What the producer-state replay knows of the partition besides its batches."""
    return PartitionLog(
        topic=meta.topic,
        partition=meta.partition,
        log_start_offset=meta.log_start_offset,
        snapshots=snapshots,
        aborted_txns={segment: parsed.entries for segment, parsed in txn_indexes.items()},
        settings=meta.replay,
    )


def _finish(
    meta: PartitionMeta,
    replay: ProducerStateReplay,
    observers: tuple[Coverage, OffsetContinuity, ProducerActivityLog],
    rejections: BrokerRejections | None,
    findings: list[Finding],
    totals: PartitionTotals,
) -> None:
    """The end-of-log findings (the replay's, the checkpoints') and the partition's totals, after
    its last batch."""
    coverage, continuity, activity = observers
    live = meta.segments
    if coverage.gap_at_end():
        replay.untrusted()
    if meta.checkpoints is not None and any(files.newest for files in live.values()):
        end = _log_end(live, continuity.previous)
        findings.extend(checkpoint_findings(meta.topic, meta.partition, log_end_offset=end, **meta.checkpoints))
    replayed = replay.finish()
    findings.extend(_not_scanned(meta, f) for f in replayed)
    # One count of transactions, the replay's (TransactionTracker, Kafka's CompletedTxn): completed
    # by a marker that closed an open one, or judged open at the end; an orphan marker completes none.
    stats = replay.stats
    totals.committed, totals.aborted, totals.open = (
        stats.transactions_committed, stats.transactions_aborted, stats.transactions_open
    )
    if meta.replay.timeline:
        totals.events = replay.events
    totals.producer_rows = activity.rows(stats.transactions_by_producer)
    if rejections is not None:
        findings.extend(rejections.findings())
        if meta.replay.timeline:
            totals.events.extend(rejections.events())


def broker_rejections(meta: PartitionMeta, snapshots) -> BrokerRejections | None:
    """The join of the partition's broker log lines with its batches; None without lines. Its
    ``events()`` go to the timeline: log start moves, segment deletions, explained rejections."""
    if not meta.broker_lines:
        return None
    return BrokerRejections(
        meta.topic,
        meta.partition,
        meta.broker_lines,
        log_start_offset=meta.log_start_offset,
        expiration_ms=meta.replay.producer_id_expiration_ms,
        snapshots=snapshots,
    )


# The replay's findings on a producer with no earlier state: with earlier segments not scanned,
# its earlier batches may simply lie there.
_NO_EARLIER_STATE = frozenset({CheckId.UNKNOWN_PRODUCER_ID, CheckId.RETENTION_GAP})


def _log_end(live: dict[str, SegmentFiles], last: BatchSummary | None) -> int | None:
    """The log end offset, where the newest segment was read whole as batches (UnifiedLog's
    logEndOffset: after its last batch, or its base offset when empty); None where its end is
    not known (its tail did not read as batches: the segment step reported why)."""
    newest = next((files for files in live.values() if files.newest), None)
    if newest is None or newest.size is None:
        return None
    if newest.size == 0:
        return newest.base_offset
    if last is None or last.segment != newest.segment or last.position + last.size < newest.size:
        return None
    return last.last_offset + 1


# The unscanned segments a message names before it says how many more.
_NAMES_SHOWN = 3


def _not_scanned(meta: PartitionMeta, finding: Finding) -> Finding:
    """A producer without earlier state in a partition whose earlier segments were not passed:
    say so, instead of claiming its batches were deleted or lost (``details.unscanned_segments``)."""
    if not meta.unscanned_segments or finding.check not in _NO_EARLIER_STATE:
        return finding
    names = meta.unscanned_segments
    shown = ", ".join(names[:_NAMES_SHOWN]) + (f" and {len(names) - _NAMES_SHOWN} more" if len(names) > _NAMES_SHOWN else "")
    finding.message = (
        f"Found no record of producerId={finding.producer_id} at offset {finding.offset} in the segments scanned "
        f"of partition {partition_label(finding.topic, finding.partition)}: the folder's {len(names)} earlier segment(s) "
        f"({shown}) were not scanned, so its earlier batches were not checked (not deleted); scan the "
        f"partition folder to audit them"
    )
    finding.details = {**finding.details, "unscanned_segments": names}
    return finding
