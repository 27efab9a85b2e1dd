"""The one table of Kafka errors and audit checks that the checks and the report share.

``ERRORS`` follows ``org.apache.kafka.common.protocol.Errors`` (code, name, exception class)
with the KIP-691 classification of what a producer does when it gets that error:

- ``retriable``: the producer retries on its own (the exception is a RetriableException);
- ``abortable``: the batch fails; a transactional producer aborts the transaction and goes on;
- ``fatal``: the producer instance cannot go on and must be closed;
- ``none``: the producer sees no error (e.g. DUPLICATE_SEQUENCE_NUMBER is treated as success).

``CHECKS`` is the SPEC catalogue: check id to severity, error, report group and title.
"""

from __future__ import annotations

from dataclasses import dataclass

RETRIABLE = "retriable"
ABORTABLE = "abortable"
FATAL = "fatal"
NONE = "none"

SEVERITIES = ("error", "warning", "info")
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


@dataclass(frozen=True, slots=True)
class KafkaError:
    code: int
    name: str
    exception: str
    client_outcome: str


ERRORS: dict[str, KafkaError] = {
    e.name: e
    for e in (
        # CorruptRecordException is a RetriableException: the producer retries until delivery.timeout.ms.
        KafkaError(2, "CORRUPT_MESSAGE", "CorruptRecordException", RETRIABLE),
        KafkaError(10, "MESSAGE_TOO_LARGE", "RecordTooLargeException", ABORTABLE),
        KafkaError(32, "INVALID_TIMESTAMP", "InvalidTimestampException", ABORTABLE),
        KafkaError(45, "OUT_OF_ORDER_SEQUENCE_NUMBER", "OutOfOrderSequenceException", ABORTABLE),
        # Sender completes a batch answered with DUPLICATE_SEQUENCE_NUMBER as a success.
        KafkaError(46, "DUPLICATE_SEQUENCE_NUMBER", "DuplicateSequenceException", NONE),
        KafkaError(47, "INVALID_PRODUCER_EPOCH", "InvalidProducerEpochException", ABORTABLE),
        # TransactionManager: INVALID_TXN_STATE and a fenced coordinator are fatal errors.
        KafkaError(48, "INVALID_TXN_STATE", "InvalidTxnStateException", FATAL),
        KafkaError(52, "TRANSACTION_COORDINATOR_FENCED", "TransactionCoordinatorFencedException", FATAL),
        # KIP-360: the producer bumps its epoch and resets sequences, aborting an open transaction.
        KafkaError(59, "UNKNOWN_PRODUCER_ID", "UnknownProducerIdException", ABORTABLE),
        KafkaError(87, "INVALID_RECORD", "InvalidRecordException", ABORTABLE),
        KafkaError(90, "PRODUCER_FENCED", "ProducerFencedException", FATAL),
    )
}

CULPRIT_RECORDS = "Culprit records"
FENCED_EPOCHS = "Fenced epochs"
SEQUENCE_ANOMALIES = "Sequence anomalies"
UNKNOWN_PRODUCER_GAPS = "UnknownProducerId gaps"
TRANSACTIONS = "Transactions"
INDEXES = "Indexes"
GROUPS = (CULPRIT_RECORDS, FENCED_EPOCHS, SEQUENCE_ANOMALIES, UNKNOWN_PRODUCER_GAPS, TRANSACTIONS, INDEXES)


@dataclass(frozen=True, slots=True)
class Check:
    id: str
    severity: str
    error: KafkaError | None
    group: str
    # The client exception the finding maps to when the broker answers no error code
    # (e.g. the fenced instance behind an epoch bump gets ProducerFencedException).
    exception: str | None = None

    @property
    def client_exception(self) -> str | None:
        return self.error.exception if self.error else self.exception

    @property
    def client_outcome(self) -> str:
        if self.error:
            return self.error.client_outcome
        return FATAL if self.exception == "ProducerFencedException" else NONE


def _check(check_id: str, severity: str, error: str | None, group: str, exception: str | None = None) -> Check:
    return Check(check_id, severity, ERRORS[error] if error else None, group, exception)


CHECKS: dict[str, Check] = {
    c.id: c
    for c in (
        # Record and batch validation (LogValidator and the batch checks it calls).
        _check("crc_mismatch", "error", "CORRUPT_MESSAGE", CULPRIT_RECORDS),
        _check("truncated_batch", "error", "CORRUPT_MESSAGE", CULPRIT_RECORDS),
        _check("invalid_batch_size", "error", "CORRUPT_MESSAGE", CULPRIT_RECORDS),
        _check("unknown_magic", "error", "CORRUPT_MESSAGE", CULPRIT_RECORDS),
        _check("decompression_failed", "error", "CORRUPT_MESSAGE", CULPRIT_RECORDS),
        _check("inner_magic_mismatch", "error", "INVALID_RECORD", CULPRIT_RECORDS),
        _check("missing_key_compacted", "error", "INVALID_RECORD", CULPRIT_RECORDS),
        _check("non_monotonic_offsets", "error", "INVALID_RECORD", CULPRIT_RECORDS),
        _check("invalid_control_batch", "error", "INVALID_RECORD", CULPRIT_RECORDS),
        _check("invalid_producer_fields", "error", "INVALID_RECORD", CULPRIT_RECORDS),
        _check("timestamp_out_of_range", "error", "INVALID_TIMESTAMP", CULPRIT_RECORDS),
        _check("invalid_timestamp_type", "error", "INVALID_TIMESTAMP", CULPRIT_RECORDS),
        _check("record_too_large", "error", "MESSAGE_TOO_LARGE", CULPRIT_RECORDS),
        _check("offset_overlap", "error", None, CULPRIT_RECORDS),
        _check("offset_gap", "warning", None, CULPRIT_RECORDS),
        _check("index_mismatch", "warning", None, INDEXES),
        # Producer-state replay (ProducerStateManager / ProducerAppendInfo).
        _check("epoch_bump", "info", None, FENCED_EPOCHS, exception="ProducerFencedException"),
        _check("fenced_epoch_write", "error", "INVALID_PRODUCER_EPOCH", FENCED_EPOCHS),
        _check("new_epoch_nonzero_sequence", "error", "OUT_OF_ORDER_SEQUENCE_NUMBER", SEQUENCE_ANOMALIES),
        _check("out_of_order_sequence", "error", "OUT_OF_ORDER_SEQUENCE_NUMBER", SEQUENCE_ANOMALIES),
        _check("duplicate_sequence", "error", "DUPLICATE_SEQUENCE_NUMBER", SEQUENCE_ANOMALIES),
        _check("unknown_producer_id", "error", "UNKNOWN_PRODUCER_ID", UNKNOWN_PRODUCER_GAPS),
        _check("retention_gap", "warning", "UNKNOWN_PRODUCER_ID", UNKNOWN_PRODUCER_GAPS),
        _check("snapshot_mismatch", "warning", None, UNKNOWN_PRODUCER_GAPS),
        _check("hanging_transaction", "error", None, TRANSACTIONS),
        _check("open_transaction", "info", None, TRANSACTIONS),
        _check("transaction_state_violation", "error", "INVALID_TXN_STATE", TRANSACTIONS),
        _check("orphan_marker", "info", None, TRANSACTIONS),
        _check("coordinator_epoch_regression", "error", "TRANSACTION_COORDINATOR_FENCED", TRANSACTIONS),
        _check("txn_index_mismatch", "warning", None, TRANSACTIONS),
    )
}
