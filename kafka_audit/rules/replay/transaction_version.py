"""Which transaction version a producer's transactions run under (``TransactionVersion``, KIP-890).

Kafka 4 (``transaction.version`` 2, ``org.apache.kafka.server.common.TransactionVersion.TV_2``)
changes what the log shows: the coordinator bumps the producer epoch before it writes each end
marker (``TransactionMetadata.prepareAbortOrCommit``), so data at epoch E ends with a marker at
E + 1, and the next transaction's data runs at E + 1 from sequence 0. A TV0/TV1 marker carries the
data's epoch. Both kinds of producer may write to one log during an upgrade, so the version is
decided per producer id:

- from ``__transaction_state`` when it was scanned: the highest ``ClientTransactionVersion``
  (a tagged field of ``TransactionLogValue``, default 0) the coordinator recorded for the id;
- else from the log: a COMMIT marker at the open transaction's epoch + 1 (TV2; a TV0/1 commit
  never bumps), a marker at the transaction's own epoch (TV0/1), or an ABORT at epoch + 1 followed
  by data at the marker's epoch from sequence 0 (TV2; a TV0/1 abort at epoch + 1 is a fencing or
  a timeout, after which the producer has to re-initialise to a still higher epoch).

Until one of these is known the producer gets the Kafka 3.x rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka_audit.record.record_batch import ControlRecordType

TV_2 = 2
# The broker rule each version's producers are judged by, named in the findings' details.
RULE_3X = "Kafka 3.x (transaction version 0/1)"
RULE_4X = "Kafka 4.x (transaction version 2, KIP-890)"


@dataclass(frozen=True, slots=True)
class CoordinatorFacts:
    """What ``__transaction_state`` says about one producer id: its transactional id, the highest
    ``ClientTransactionVersion`` recorded (None: the field never written), the transaction timeout,
    and the producer id the transactional id continues under after epoch exhaustion
    (``NextProducerId``, -1: none)."""

    transactional_id: str
    client_transaction_version: int | None
    transaction_timeout_ms: int
    next_producer_id: int = -1
    # (epoch, TransactionStartTimestampMs, TransactionLastUpdateTimestampMs) of each PrepareAbort
    # record: when the aborted transaction began and when the coordinator decided the abort.
    prepare_aborts: tuple[tuple[int, int, int], ...] = ()
    # Epochs of the Empty records InitProducerId writes (TransactionMetadata.prepareIncrementProducerEpoch):
    # an instance (re)starting at that epoch.
    init_epochs: frozenset[int] = frozenset()

    def abort_timing(self, epoch: int) -> tuple[int, int] | None:
        """(start, abort time) of the abort the coordinator prepared at ``epoch`` (None: not recorded)."""
        for recorded, start, update in self.prepare_aborts:
            if recorded == epoch and start >= 0:
                return start, update
        return None


class TransactionVersions:
    """Per producer id: the transaction version, declared by the coordinator or seen in the log."""

    def __init__(self, facts: Mapping[int, CoordinatorFacts], feature_level: int | None = None) -> None:
        self._facts = facts
        self._seen: dict[int, int] = {}
        # The cluster's finalized transaction.version, named in the details as corroboration.
        self.feature_level = feature_level

    def evidence(self, pid: int) -> dict[str, Any]:
        """What says the producer runs transactions v2, for a finding's details."""
        facts = self._facts.get(pid)
        declared = facts.client_transaction_version if facts is not None else None
        return {
            "transaction_version_from": "__transaction_state" if declared is not None else "log",
            "transaction_version_feature": self.feature_level,
        }

    def facts(self, pid: int) -> CoordinatorFacts | None:
        return self._facts.get(pid)

    def version(self, pid: int) -> int | None:
        """The producer's transaction version (None: not known yet)."""
        facts = self._facts.get(pid)
        if facts is not None and facts.client_transaction_version is not None:
            return facts.client_transaction_version
        return self._seen.get(pid)

    def is_tv2(self, pid: int) -> bool:
        version = self.version(pid)
        return version is not None and version >= TV_2

    def declared(self, pid: int) -> bool:
        facts = self._facts.get(pid)
        return facts is not None and facts.client_transaction_version is not None

    def observe_marker(self, pid: int, control_type: int, marker_epoch: int, txn_epoch: int | None) -> None:
        """An end marker that closed a transaction of epoch ``txn_epoch`` (None: none open)."""
        if txn_epoch is None or pid in self._seen:
            return
        if marker_epoch == txn_epoch:
            self._seen[pid] = 0
        elif marker_epoch == txn_epoch + 1 and control_type == ControlRecordType.COMMIT:
            self._seen[pid] = TV_2

    def observe_restart(self, pid: int, marker_epoch: int, data_epoch: int, base_sequence: int) -> None:
        """Data after an ABORT at the aborted transaction's epoch + 1: at the marker's epoch from
        sequence 0, the producer goes on as only a TV2 producer can."""
        if pid not in self._seen and data_epoch == marker_epoch and base_sequence == 0:
            self._seen[pid] = TV_2

    def timeout_ms(self, pid: int, default: int) -> int:
        facts = self._facts.get(pid)
        return facts.transaction_timeout_ms if facts is not None else default
