"""The one catalogue of Kafka errors and audit checks that the rules and the reports share.

``ERRORS`` follows ``org.apache.kafka.common.protocol.Errors`` (code, name, exception class)
with the KIP-691 classification of what a producer does when it gets that error
(:class:`ClientOutcome`). ``CHECKS`` is the SPEC section 2 catalogue: check id (:class:`CheckId`, defined in
``kafka_audit.check_ids`` so that every layer may name a check) to severity, the error a broker
answers, report group. Control record types live beside the record format
(``record.record_batch.ControlRecordType``, Kafka's ``ControlRecordType``).
"""

from __future__ import annotations

from dataclasses import dataclass

# CheckId is defined below the layers (record/ and log/ name their problems by it) and re-exported
# here, beside the catalogue that describes each check (an explicit re-export for mypy --strict).
from kafka_audit.check_ids import CheckId as CheckId  # noqa: PLC0414
from kafka_audit.check_ids import ValueEnum


class Severity(ValueEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}
SEVERITIES = (Severity.ERROR, Severity.WARNING, Severity.INFO)


class ClientOutcome(ValueEnum):
    """KIP-691: what a producer does with an error."""

    RETRIABLE = "retriable"  # the producer retries on its own (a RetriableException)
    ABORTABLE = "abortable"  # the batch fails; a transactional producer aborts and goes on
    FATAL = "fatal"  # the producer instance cannot go on and must be closed
    NONE = "none"  # the producer sees no error


RETRIABLE, ABORTABLE, FATAL, NONE = (ClientOutcome.RETRIABLE, ClientOutcome.ABORTABLE, ClientOutcome.FATAL, ClientOutcome.NONE)


@dataclass(frozen=True, slots=True)
class KafkaError:
    code: int
    name: str
    exception: str
    client_outcome: ClientOutcome


ERRORS: dict[str, KafkaError] = {
    e.name: e
    for e in (
        # CorruptRecordException is a RetriableException: the producer retries until delivery.timeout.ms.
        KafkaError(2, "CORRUPT_MESSAGE", "CorruptRecordException", RETRIABLE),
        KafkaError(10, "MESSAGE_TOO_LARGE", "RecordTooLargeException", ABORTABLE),
        # UnifiedLog.append: a batch larger than segment.bytes.
        KafkaError(18, "RECORD_LIST_TOO_LARGE", "RecordBatchTooLargeException", ABORTABLE),
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


class Group(ValueEnum):
    """The report's table groups (SPEC section 3)."""

    CULPRIT_RECORDS = "Culprit records"
    FENCED_EPOCHS = "Fenced epochs"
    SEQUENCE_ANOMALIES = "Sequence anomalies"
    UNKNOWN_PRODUCER_GAPS = "UnknownProducerId gaps"
    TRANSACTIONS = "Transactions"
    INDEXES = "Indexes"
    FILES = "Files"
    BROKER_LOG = "Broker log"
    TIERED_STORAGE = "Tiered storage"
    REPLICAS = "Replicas"


CULPRIT_RECORDS, FENCED_EPOCHS, SEQUENCE_ANOMALIES = Group.CULPRIT_RECORDS, Group.FENCED_EPOCHS, Group.SEQUENCE_ANOMALIES
UNKNOWN_PRODUCER_GAPS, TRANSACTIONS, INDEXES = Group.UNKNOWN_PRODUCER_GAPS, Group.TRANSACTIONS, Group.INDEXES
GROUPS = tuple(Group)


@dataclass(frozen=True, slots=True)
class Check:
    id: CheckId
    severity: Severity
    error: KafkaError | None
    group: Group
    # The client exception the finding maps to when the broker answers no error code
    # (e.g. the fenced instance behind an epoch bump gets ProducerFencedException).
    exception: str | None = None

    @property
    def client_exception(self) -> str | None:
        return self.error.exception if self.error else self.exception

    @property
    def client_outcome(self) -> ClientOutcome:
        if self.error:
            return self.error.client_outcome
        return FATAL if self.exception == "ProducerFencedException" else NONE


def _check(check_id: CheckId, severity: Severity, error: str | None, group: Group, exception: str | None = None) -> Check:
    return Check(check_id, severity, ERRORS[error] if error else None, group, exception)


E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO  # noqa: E741 - the table's one-letter severities
C = CheckId

CHECKS: dict[str, Check] = {
    str(c.id): c
    for c in (
        # Record and batch validation (LogValidator and the batch checks it calls).
        _check(C.CRC_MISMATCH, E, "CORRUPT_MESSAGE", CULPRIT_RECORDS),
        _check(C.TRUNCATED_BATCH, E, "CORRUPT_MESSAGE", CULPRIT_RECORDS),
        _check(C.INVALID_BATCH_SIZE, E, "CORRUPT_MESSAGE", CULPRIT_RECORDS),
        _check(C.UNKNOWN_MAGIC, E, "CORRUPT_MESSAGE", CULPRIT_RECORDS),
        _check(C.DECOMPRESSION_FAILED, E, "CORRUPT_MESSAGE", CULPRIT_RECORDS),
        _check(C.NESTED_COMPRESSION, E, "INVALID_RECORD", CULPRIT_RECORDS),
        _check(C.INNER_MAGIC_MISMATCH, E, "INVALID_RECORD", CULPRIT_RECORDS),
        _check(C.MISSING_KEY_COMPACTED, E, "INVALID_RECORD", CULPRIT_RECORDS),
        _check(C.NON_MONOTONIC_OFFSETS, E, "INVALID_RECORD", CULPRIT_RECORDS),
        _check(C.INVALID_CONTROL_BATCH, E, "INVALID_RECORD", CULPRIT_RECORDS),
        _check(C.INVALID_PRODUCER_FIELDS, E, "INVALID_RECORD", CULPRIT_RECORDS),
        _check(C.TIMESTAMP_OUT_OF_RANGE, E, "INVALID_TIMESTAMP", CULPRIT_RECORDS),
        _check(C.INVALID_TIMESTAMP_TYPE, E, "INVALID_TIMESTAMP", CULPRIT_RECORDS),
        # MESSAGE_TOO_LARGE against max.message.bytes; a finding over segment.bytes carries
        # RECORD_LIST_TOO_LARGE instead (make_finding's ``error``).
        _check(C.RECORD_TOO_LARGE, E, "MESSAGE_TOO_LARGE", CULPRIT_RECORDS),
        _check(C.OFFSET_OVERLAP, E, None, CULPRIT_RECORDS),
        _check(C.OFFSET_GAP, W, None, CULPRIT_RECORDS),
        _check(C.INDEX_MISMATCH, W, None, INDEXES),
        _check(C.UNREADABLE_SEGMENT, E, None, Group.FILES),
        _check(C.SKIPPED_FILE, I, None, Group.FILES),
        # Producer-state replay (ProducerStateManager / ProducerAppendInfo).
        _check(C.EPOCH_BUMP, I, None, FENCED_EPOCHS, exception="ProducerFencedException"),
        _check(C.FENCED_EPOCH_WRITE, E, "INVALID_PRODUCER_EPOCH", FENCED_EPOCHS),
        _check(C.NEW_EPOCH_NONZERO_SEQUENCE, E, "OUT_OF_ORDER_SEQUENCE_NUMBER", SEQUENCE_ANOMALIES),
        _check(C.OUT_OF_ORDER_SEQUENCE, E, "OUT_OF_ORDER_SEQUENCE_NUMBER", SEQUENCE_ANOMALIES),
        # A broker answers a retry of one of the last 5 batches with NONE: a copy in the log is
        # duplicated data no broker writes, and no producer saw an error.
        _check(C.DUPLICATE_SEQUENCE, E, None, SEQUENCE_ANOMALIES),
        # Brokers since 2.5 accept a batch from a producer they have no state for.
        _check(C.UNKNOWN_PRODUCER_ID, W, None, UNKNOWN_PRODUCER_GAPS),
        _check(C.RETENTION_GAP, W, None, UNKNOWN_PRODUCER_GAPS),
        _check(C.SNAPSHOT_MISMATCH, W, None, UNKNOWN_PRODUCER_GAPS),
        _check(C.PRODUCER_EXPIRED, I, None, UNKNOWN_PRODUCER_GAPS),
        _check(C.HANGING_TRANSACTION, E, None, TRANSACTIONS),
        _check(C.OPEN_TRANSACTION, I, None, TRANSACTIONS),
        _check(C.TRANSACTION_STATE_VIOLATION, E, "INVALID_TXN_STATE", TRANSACTIONS),
        _check(C.ORPHAN_MARKER, I, None, TRANSACTIONS),
        _check(C.COORDINATOR_EPOCH_REGRESSION, E, "TRANSACTION_COORDINATOR_FENCED", TRANSACTIONS),
        _check(C.TXN_INDEX_MISMATCH, W, None, TRANSACTIONS),
        # The error code is the one in the broker's log line (make_finding's ``error``).
        _check(C.BROKER_REJECTION, W, None, Group.BROKER_LOG),
        # Tiered storage (SPEC section 5): __remote_log_metadata against the remote objects.
        _check(C.REMOTE_SEGMENT_INCOMPLETE, W, None, Group.TIERED_STORAGE),
        _check(C.REMOTE_SEGMENT_OVERLAP, E, None, Group.TIERED_STORAGE),
        _check(C.REMOTE_LOG_GAP, W, None, Group.TIERED_STORAGE),
        _check(C.REMOTE_SEGMENT_MISSING, E, None, Group.TIERED_STORAGE),
        _check(C.REMOTE_TXN_INDEX_FLAG, I, None, Group.TIERED_STORAGE),
        # Replicas side by side (SPEC section 6): what a follower's fetcher would truncate.
        _check(C.REPLICA_DIVERGENCE, E, None, Group.REPLICAS),
        _check(C.REPLICA_TRUNCATION, E, None, Group.REPLICAS),
        _check(C.REPLICA_LAG, I, None, Group.REPLICAS),
        # A live log dir (SPEC section 2): LogSegment.recover truncates an incomplete tail; its
        # severity is info when the file changed during the scan (INCOMPLETE_TAIL_LIVE).
        _check(C.INCOMPLETE_TAIL, W, None, Group.FILES),
        _check(C.SEGMENT_CHANGED, W, None, Group.FILES),
        # Info for a checkpoint case on a copy of a running broker (MISSING_SEGMENT_LIVE).
        _check(C.MISSING_SEGMENT, W, None, Group.FILES),
    )
}

# One line per check (SPEC section 2's "when"), for reports that describe the catalogue (SARIF rules).
DESCRIPTIONS: dict[str, str] = {
    CheckId.CRC_MISMATCH: "A batch's (or v0/v1 message's) CRC differs from the one stored with it.",
    CheckId.TRUNCATED_BATCH: "The file ends inside a batch, or a size field points past its end.",
    CheckId.INVALID_BATCH_SIZE: "A size or length field is below the format's minimum header size.",
    CheckId.UNKNOWN_MAGIC: "A magic byte that is not 0, 1 or 2.",
    CheckId.DECOMPRESSION_FAILED: "An unknown codec id, or a payload that does not decompress.",
    CheckId.NESTED_COMPRESSION: "A v0/v1 wrapper's inner message has a codec of its own.",
    CheckId.INNER_MAGIC_MISMATCH: "A v0/v1 wrapper's inner message has another magic.",
    CheckId.MISSING_KEY_COMPACTED: "A record without a key in a compacted topic.",
    CheckId.NON_MONOTONIC_OFFSETS: "Inner offsets or offset deltas that are not 0, 1, 2, ..., or a record count that disagrees.",
    CheckId.INVALID_CONTROL_BATCH: "A control batch or control record that is not well-formed.",
    CheckId.INVALID_PRODUCER_FIELDS: "Producer fields a broker's batch validation rejects.",
    CheckId.TIMESTAMP_OUT_OF_RANGE: "A CREATE_TIME timestamp outside the allowed range around the reference time.",
    CheckId.INVALID_TIMESTAMP_TYPE: "A timestamp-type bit set where the format forbids it.",
    CheckId.RECORD_TOO_LARGE: "A batch larger than max.message.bytes or segment.bytes: a poison pill.",
    CheckId.OFFSET_OVERLAP: "A batch whose base offset is not above the previous batch's last offset.",
    CheckId.OFFSET_GAP: "Offsets skip values in a topic that is not compacted.",
    CheckId.INDEX_MISMATCH: "An .index or .timeindex entry that does not agree with the log.",
    CheckId.UNREADABLE_SEGMENT: "A segment that was found but could not be read in full.",
    CheckId.SKIPPED_FILE: "A file or folder that is not part of a Kafka log.",
    CheckId.EPOCH_BUMP: "A producer id's epoch rises for a reason worth a look (fenced, timeout abort, KIP-360 bump).",
    CheckId.FENCED_EPOCH_WRITE: "A data batch under an epoch below the producer's current one: a zombie write.",
    CheckId.NEW_EPOCH_NONZERO_SEQUENCE: "The first batch of a new epoch does not start at sequence 0.",
    CheckId.OUT_OF_ORDER_SEQUENCE: "A base sequence that does not follow the producer's last sequence.",
    CheckId.DUPLICATE_SEQUENCE: "A retry of one of the producer's last 5 batches written again: duplicated data.",
    CheckId.UNKNOWN_PRODUCER_ID: "A producer's first batch has a non-zero sequence and no earlier state: its earlier batches are missing.",
    CheckId.RETENTION_GAP: "A producer's earlier batches were deleted by retention: the UnknownProducerId gap.",
    CheckId.SNAPSHOT_MISMATCH: "A .snapshot entry disagrees with the state replayed from the log.",
    CheckId.HANGING_TRANSACTION: "A transaction open past the transaction timeout: it pins the last stable offset.",
    CheckId.OPEN_TRANSACTION: "A transaction open at the end of the log, younger than the timeout.",
    CheckId.TRANSACTION_STATE_VIOLATION: "A batch that breaks its producer's open transaction.",
    CheckId.ORPHAN_MARKER: "A COMMIT/ABORT marker for a producer with no open transaction here.",
    CheckId.COORDINATOR_EPOCH_REGRESSION: "A marker whose coordinator epoch is below the previous marker's.",
    CheckId.TXN_INDEX_MISMATCH: "Aborted transactions in the log disagree with the .txnindex files.",
    CheckId.PRODUCER_EXPIRED: "A producer idle longer than producer.id.expiration.ms writes again.",
    CheckId.BROKER_REJECTION: "A produce error in a broker log, explained against the log.",
    CheckId.REMOTE_SEGMENT_INCOMPLETE: "A remote segment left in COPY_SEGMENT_STARTED or DELETE_SEGMENT_STARTED.",
    CheckId.REMOTE_SEGMENT_OVERLAP: "Remote segments of one partition whose offset ranges overlap.",
    CheckId.REMOTE_LOG_GAP: "Offsets in no remote segment, or between the remote segments and the local log start.",
    CheckId.REMOTE_SEGMENT_MISSING: "A remote segment COPY_SEGMENT_FINISHED whose object is absent or of another size.",
    CheckId.REMOTE_TXN_INDEX_FLAG: "TxnIndexEmpty disagrees with the transaction index in remote storage (KAFKA-16780).",
    CheckId.REPLICA_DIVERGENCE: "Replicas of one partition hold different batches at the same offset.",
    CheckId.REPLICA_TRUNCATION: "Records a replica holds that Kafka truncates when it follows the kept replica.",
    CheckId.REPLICA_LAG: "A replica whose log is a prefix of the kept replica's and ends earlier.",
    CheckId.INCOMPLETE_TAIL: "The newest segment ends inside its last batch: a write in progress, an unclean stop or a copy taken mid-write.",
    CheckId.SEGMENT_CHANGED: "A file the scan listed was deleted, swapped or shrunk before it was read in full.",
    CheckId.MISSING_SEGMENT: "Sidecars or checkpoints name offsets whose segment is not there.",
}
assert set(DESCRIPTIONS) == set(CHECKS), "every check has a description"

# The one case whose severity and error are not its check's (SPEC non_monotonic_offsets): Kafka 3.6
# assigns an uncompressed v2 batch's offsets in place and never reads its records' offset deltas
# (LogValidator.assignOffsetsNonCompressed), so non-consecutive deltas there are accepted and
# stored as sent: a warning that no producer saw as an error. ``make_finding(..., spec=...)``.
UNCOMPRESSED_OFFSET_DELTAS = _check(C.NON_MONOTONIC_OFFSETS, W, None, CULPRIT_RECORDS)
# SPEC replica_truncation: a warning when the records dropped were above every high watermark
# checkpointed by a replica holding them (acks=1 writes, or never acknowledged).
TRUNCATION_ABOVE_HIGH_WATERMARK = _check(C.REPLICA_TRUNCATION, W, None, Group.REPLICAS)
# SPEC incomplete_tail: info when the file changed while the scan ran (a write in progress on a
# live broker); SPEC missing_segment: info for a checkpoint case on a copy of a running broker.
INCOMPLETE_TAIL_LIVE = _check(C.INCOMPLETE_TAIL, I, None, Group.FILES)
MISSING_SEGMENT_LIVE = _check(C.MISSING_SEGMENT, I, None, Group.FILES)
del E, W, I, C
