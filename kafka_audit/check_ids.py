"""SPEC section 2's check ids: the one enum every layer names a check by.

It sits below the layers (it imports nothing of the package) because ``record/`` and ``log/``
already name a check when they meet bad bytes (a ``Problem``), under the catalogue that gives each
check its severity, Kafka error and report group (``rules/catalogue.py``, which re-exports
:class:`CheckId`). A check id is written through this enum, never as a raw string
(tests/test_catalogue.py holds the package to it).
"""

from __future__ import annotations

from enum import Enum


class ValueEnum(str, Enum):
    """A str enum whose str() and format() are its value on every Python this package supports.

    ``enum.StrEnum`` needs Python 3.11, and a plain ``(str, Enum)`` member formats as
    ``CheckId.CRC_MISMATCH`` in f-strings from Python 3.12 on: reports would change with the
    interpreter. json, csv and pyarrow read a member as the str it is."""

    def __str__(self) -> str:
        return str.__str__(self)

    __format__ = str.__format__  # type: ignore[assignment]  # f-strings print the value, as str does


class CheckId(ValueEnum):
    """Every check id of SPEC section 2."""


    CRC_MISMATCH = "crc_mismatch"
    TRUNCATED_BATCH = "truncated_batch"
    INVALID_BATCH_SIZE = "invalid_batch_size"
    UNKNOWN_MAGIC = "unknown_magic"
    DECOMPRESSION_FAILED = "decompression_failed"
    NESTED_COMPRESSION = "nested_compression"
    INNER_MAGIC_MISMATCH = "inner_magic_mismatch"
    MISSING_KEY_COMPACTED = "missing_key_compacted"
    NON_MONOTONIC_OFFSETS = "non_monotonic_offsets"
    INVALID_CONTROL_BATCH = "invalid_control_batch"
    INVALID_PRODUCER_FIELDS = "invalid_producer_fields"
    TIMESTAMP_OUT_OF_RANGE = "timestamp_out_of_range"
    INVALID_TIMESTAMP_TYPE = "invalid_timestamp_type"
    RECORD_TOO_LARGE = "record_too_large"
    OFFSET_OVERLAP = "offset_overlap"
    OFFSET_GAP = "offset_gap"
    INDEX_MISMATCH = "index_mismatch"
    UNREADABLE_SEGMENT = "unreadable_segment"
    SKIPPED_FILE = "skipped_file"
    EPOCH_BUMP = "epoch_bump"
    FENCED_EPOCH_WRITE = "fenced_epoch_write"
    NEW_EPOCH_NONZERO_SEQUENCE = "new_epoch_nonzero_sequence"
    OUT_OF_ORDER_SEQUENCE = "out_of_order_sequence"
    DUPLICATE_SEQUENCE = "duplicate_sequence"
    UNKNOWN_PRODUCER_ID = "unknown_producer_id"
    RETENTION_GAP = "retention_gap"
    SNAPSHOT_MISMATCH = "snapshot_mismatch"
    HANGING_TRANSACTION = "hanging_transaction"
    OPEN_TRANSACTION = "open_transaction"
    TRANSACTION_STATE_VIOLATION = "transaction_state_violation"
    ORPHAN_MARKER = "orphan_marker"
    COORDINATOR_EPOCH_REGRESSION = "coordinator_epoch_regression"
    TXN_INDEX_MISMATCH = "txn_index_mismatch"
    PRODUCER_EXPIRED = "producer_expired"
    BROKER_REJECTION = "broker_rejection"
    REMOTE_SEGMENT_INCOMPLETE = "remote_segment_incomplete"
    REMOTE_SEGMENT_OVERLAP = "remote_segment_overlap"
    REMOTE_LOG_GAP = "remote_log_gap"
    REMOTE_SEGMENT_MISSING = "remote_segment_missing"
    REMOTE_TXN_INDEX_FLAG = "remote_txn_index_flag"
    REPLICA_DIVERGENCE = "replica_divergence"
    REPLICA_TRUNCATION = "replica_truncation"
    REPLICA_LAG = "replica_lag"
    INCOMPLETE_TAIL = "incomplete_tail"
    SEGMENT_CHANGED = "segment_changed"
    MISSING_SEGMENT = "missing_segment"
