"""Transactions seen by the producer-state replay: open ones, aborted ones, and the ``.txnindex``.

Kafka counterparts:

- ``TxnMetadata`` (storage ``internals.log``): an ongoing transaction, keyed by its first offset;
  :class:`OpenTxn` adds the first batch's timestamp and epoch, which the audit needs to age it and
  to see a transactional write under another epoch.
- ``CompletedTxn``: what ``ProducerAppendInfo.appendEndTxnMarker`` returns for a non-empty
  transaction; an ABORT one becomes an ``AbortedTxn`` entry in the ``TransactionIndex`` of the
  segment the marker is appended to (``LogSegment.updateTxnIndex`` / ``LogSegment.recover``).
  :class:`DerivedAbortedTxn` is that entry as the log says it should be.

The replay's transaction state is :class:`kafka_audit.rules.replay.transaction_tracker.TransactionTracker`.
Everything here is pure: no I/O, no Spark.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from kafka_audit.check_ids import CheckId
from kafka_audit.log.transaction_index import AbortedTxn
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.findings import Finding, make_finding, partition_label

# How many aborted transactions a per-segment finding lists in its details.
_LISTED = 20


class Anchor(NamedTuple):
    """A stand-in for a batch in :func:`make_finding` where the state comes from a snapshot."""

    position: int | None
    base_offset: int
    last_offset: int
    magic: int
    producer_id: int
    producer_epoch: int
    base_sequence: int | None
    segment: str | None = None
    max_timestamp: int = -1
    # The batch's size on disk: unknown where the state comes from a snapshot.
    size: int | None = None


@dataclass(slots=True)
class OpenTxn:
    """An ongoing transaction of one producer (``TxnMetadata`` plus what the audit needs).

    ``batch`` is the transaction's first batch (a BatchSummary), or an :class:`Anchor` when the
    transaction was already open in the snapshot that seeded the replay; ``first_timestamp`` is
    then the snapshot entry's timestamp, the best age estimate there is. ``last_timestamp`` is the
    producer's last batch's (``ProducerStateEntry.lastTimestamp``), by which
    ``kafka-transactions.sh find-hanging`` ages a transaction.
    """

    producer_id: int
    first_offset: int
    first_timestamp: int
    epoch: int
    batch: BatchSummary | Anchor
    last_timestamp: int = -1


class DerivedAbortedTxn(NamedTuple):
    """An aborted transaction found in the log: ``AbortedTxn`` without the last stable offset.

    ``last_offset`` is the ABORT marker's offset and ``segment`` the segment holding the marker,
    where ``LogSegment`` registers it in the transaction index.
    """

    producer_id: int
    first_offset: int
    last_offset: int
    segment: str
    marker: BatchSummary


def aborted_txn_key(entry: AbortedTxn) -> tuple[int, int, int]:
    """``(producer_id, first_offset, last_offset)`` of an ``AbortedTxn`` read from a ``.txnindex``."""
    return (entry.producer_id, entry.first_offset, entry.last_offset)


def compare_txn_index(
    topic: str,
    partition: int,
    derived: Iterable[DerivedAbortedTxn],
    index: Mapping[str, Iterable[AbortedTxn]],
    empty_aborts: Iterable[tuple[str, int, int]] = (),
    compacted: bool = False,
    log_start_offset: int = 0,
    trusted_until: int | None = None,
) -> list[Finding]:
    """``txn_index_mismatch`` findings: aborted transactions of the log vs the ``.txnindex`` files.

    ``index`` maps a segment (as in ``BatchSummary.segment``) to the ``AbortedTxn`` entries of its
    ``.txnindex``; segments without a ``.txnindex`` file are absent. The last stable offset is not
    compared: it depends on the other producers' transactions open at the time, including ones
    whose data is gone.

    ``empty_aborts`` holds ``(segment, producer_id, marker_offset)`` of ABORT markers that closed
    no transaction: brokers before 2.8 (the Scala ``ProducerAppendInfo.appendEndTxnMarker``)
    registered those as ``AbortedTxn(pid, marker_offset, marker_offset)``, so such an index entry
    is accepted, and not required either.

    In a compacted topic the cleaner rewrites segments and carries index entries over to the
    cleaned segment holding the transaction's remaining data (``Cleaner`` /
    ``CleanedTransactionMetadata``), and may remove the aborted data altogether; there only an
    aborted transaction missing from every ``.txnindex`` of the partition is reported.

    An index entry whose first offset lies below ``log_start_offset`` is correct when the log holds
    its ABORT marker: retention (or DeleteRecords) deleted the start of the transaction, and the
    entry keeps the first offset the broker saw (``LogSegment.updateTxnIndex``); the replay then
    saw the transaction from its first retained batch on, or not at all. ``trusted_until``: the
    last offset before the partition's first invalid batch (None: none); an index entry ending
    past it is not reported as unknown, since the invalid batch may be the data it names.
    """
    findings: list[Finding] = []
    tp = partition_label(topic, partition)
    derived = list(derived)
    by_segment: dict[str, list[DerivedAbortedTxn]] = defaultdict(list)
    for txn in derived:
        by_segment[txn.segment].append(txn)
    tolerated = set(empty_aborts)
    index_keys = _index_keys(index, derived, tolerated, log_start_offset)

    if compacted:
        everywhere = {key for keys in index_keys.values() for key in keys}
        for segment, txns in by_segment.items():
            for txn in txns:
                if (txn.producer_id, txn.first_offset, txn.last_offset) not in everywhere:
                    findings.append(_missing_entry(topic, partition, tp, txn, segment in index_keys))
        return findings

    for segment, txns in by_segment.items():
        if segment in index_keys:
            continue
        findings.append(_missing_index_file(topic, partition, tp, segment, txns))

    for segment, keys in index_keys.items():
        expected = by_segment.get(segment, [])
        findings.extend(_segment_findings(topic, partition, segment, expected, keys, tolerated, trusted_until))
    return findings


def _segment_findings(
    topic: str,
    partition: int,
    segment: str,
    expected: list[DerivedAbortedTxn],
    keys: list[tuple[int, int, int]],
    tolerated: set[tuple[str, int, int]],
    trusted_until: int | None,
) -> list[Finding]:
    """One segment's ``.txnindex`` against the aborted transactions whose marker it holds."""
    tp = partition_label(topic, partition)
    findings = []
    expected_keys = {(t.producer_id, t.first_offset, t.last_offset) for t in expected}
    present = set(keys)
    for txn in expected:
        if (txn.producer_id, txn.first_offset, txn.last_offset) not in present:
            findings.append(_missing_entry(topic, partition, tp, txn, True))
    for pid, first, last in keys:
        if (pid, first, last) in expected_keys:
            continue
        if first == last and (segment, pid, last) in tolerated:
            continue
        if trusted_until is not None and last > trusted_until:
            continue
        findings.append(_unknown_entry(topic, partition, tp, segment, (pid, first, last)))
    return findings


def _index_keys(
    index: Mapping[str, Iterable[AbortedTxn]],
    derived: list[DerivedAbortedTxn],
    tolerated: set[tuple[str, int, int]],
    log_start_offset: int,
) -> dict[str, list[tuple[int, int, int]]]:
    """Each segment's index entries as keys; after retention, as the replay can know them (see
    :func:`_below_log_start`)."""
    index_keys = {segment: [aborted_txn_key(e) for e in entries] for segment, entries in index.items()}
    if log_start_offset <= 0:
        return index_keys
    by_marker = {(t.producer_id, t.last_offset): t for t in derived}
    orphan_aborts = {(pid, offset) for _, pid, offset in tolerated}
    return {
        segment: [
            kept for key in keys if (kept := _below_log_start(key, log_start_offset, by_marker, orphan_aborts)) is not None
        ]
        for segment, keys in index_keys.items()
    }


def _missing_index_file(topic: str, partition: int, tp: str, segment: str, txns: list[DerivedAbortedTxn]) -> Finding:
    first = txns[0]
    return make_finding(
        CheckId.TXN_INDEX_MISMATCH,
        f"Segment {segment} of partition {tp} holds the ABORT markers of {len(txns)} aborted "
        f"transaction(s) but has no transaction index (.txnindex): read_committed consumers "
        f"fetching from it would not filter the aborted records",
        topic=topic,
        partition=partition,
        segment=segment,
        batch=first.marker,
        details={
            "reason": "missing_index_file",
            **_entry_details(first),
            "aborted_transactions": len(txns),
            "entries": [_entry_details(t) for t in txns[:_LISTED]],
        },
    )


def _unknown_entry(topic: str, partition: int, tp: str, segment: str, key: tuple[int, int, int]) -> Finding:
    pid, first, last = key
    return make_finding(
        CheckId.TXN_INDEX_MISMATCH,
        f"Transaction index of segment {segment} lists an aborted transaction of producer "
        f"{pid} (offsets {first} to {last}) in partition {tp} that the log does not show",
        topic=topic,
        partition=partition,
        segment=segment,
        offset=first,
        details={"reason": "unknown_index_entry", "producer_id": pid, "first_offset": first, "last_offset": last},
    )


def _below_log_start(
    key: tuple[int, int, int],
    log_start_offset: int,
    by_marker: Mapping[tuple[int, int], DerivedAbortedTxn],
    orphan_aborts: set[tuple[int, int]],
) -> tuple[int, int, int] | None:
    """An index entry that starts below the log start offset, as the replay can know it: the
    transaction the replay saw end at the same ABORT marker, or None (nothing to compare) when
    the replay saw only that marker."""
    pid, first, last = key
    if first >= log_start_offset:
        return key
    seen = by_marker.get((pid, last))
    if seen is not None:
        return (seen.producer_id, seen.first_offset, seen.last_offset)
    if (pid, last) in orphan_aborts:
        return None
    return key


def _entry_details(txn: DerivedAbortedTxn) -> dict[str, int]:
    return {"producer_id": txn.producer_id, "first_offset": txn.first_offset, "last_offset": txn.last_offset}


def _missing_entry(topic: str, partition: int, tp: str, txn: DerivedAbortedTxn, has_index: bool) -> Finding:
    return make_finding(
        CheckId.TXN_INDEX_MISMATCH,
        f"Aborted transaction of producer {txn.producer_id} (offsets {txn.first_offset} to "
        f"{txn.last_offset}) in partition {tp} is missing from the transaction index of segment "
        f"{txn.segment}",
        topic=topic,
        partition=partition,
        segment=txn.segment,
        batch=txn.marker,
        details={"reason": "missing_index_entry", **_entry_details(txn), "index_file": has_index},
    )


def open_transaction_findings(
    topic: str,
    partition: int,
    open_txns: Iterable[OpenTxn],
    reference_time: int,
    transaction_timeout_ms: int,
    log_end_offset: int,
    stable_from: int,
) -> list[Finding]:
    """``hanging_transaction`` / ``open_transaction`` for the transactions open at the end of the log.

    As ``kafka-transactions.sh find-hanging`` (``FindHangingTransactions``) judges it: a
    transaction is hanging when ``reference_time`` (``--reference-time``, else the partition's
    newest timestamp) is more than ``transaction_timeout_ms`` after its producer's last batch
    (``ProducerStateEntry.lastTimestamp``): the coordinator would have aborted it by then. Without
    timestamps (-1) its age is unknown and it is reported as open. ``stable_from`` is the partition's
    last stable offset (the first offset of its earliest open transaction), which the hanging
    transaction pins: ``records_blocked`` offsets up to ``log_end_offset`` stay invisible to
    read_committed consumers. ``coordinator_state`` stays null until ``__transaction_state`` is read.
    """
    tp = partition_label(topic, partition)
    findings = []
    for txn in sorted(open_txns, key=lambda t: t.first_offset):
        last = txn.last_timestamp if txn.last_timestamp >= 0 else txn.first_timestamp
        known = last >= 0 and reference_time >= 0
        age = reference_time - last if known else None
        hanging = age is not None and age > transaction_timeout_ms
        details: dict[str, Any] = {
            "first_offset": txn.first_offset,
            "age_ms": age,
            "transaction_timeout_ms": transaction_timeout_ms,
            "last_stable_offset": stable_from,
            "log_end_offset": log_end_offset,
            "records_blocked": log_end_offset - stable_from,
        }
        segment = getattr(txn.batch, "segment", None)
        if hanging:
            # details.remedy: rules/remedies.py, once the coordinator's transactional id is joined in.
            details["coordinator_state"] = None
        message = _open_message(txn, tp, age, hanging, transaction_timeout_ms, stable_from)
        findings.append(
            make_finding(
                CheckId.HANGING_TRANSACTION if hanging else CheckId.OPEN_TRANSACTION,
                message,
                topic=topic,
                partition=partition,
                segment=segment,
                offset=txn.first_offset,
                batch=txn.batch,
                details=details,
            )
        )
    return findings


def _open_message(txn: OpenTxn, tp: str, age: int | None, hanging: bool, timeout_ms: int, stable_from: int) -> str:
    head = f"Transaction of producer {txn.producer_id} starting at offset {txn.first_offset} in partition {tp}"
    if hanging:
        return (
            f"{head} is still open at the end of the log, its producer's last batch {age} ms old "
            f"(transaction timeout {timeout_ms} ms): it pins the last stable offset at {stable_from}"
        )
    age_text = f"its producer's last batch {age} ms old" if age is not None else "of unknown age"
    return f"{head} is open at the end of the log ({age_text})"
