"""The options that shape a scan (SPEC section 1): :class:`ScanOptions`, built by :func:`scan_options`,
the one place the CLI and ``kafka_audit.scan()`` build them (defaults are the rules' named
constants), and the check that refuses options a PATH cannot honour (:func:`reference_time_problem`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from kafka_audit.io import storage
from kafka_audit.io.broker_log import BrokerLog
from kafka_audit.log.feature_levels import ClusterLevels
from kafka_audit.rules.replay.partition_replay import DEFAULT_PRODUCER_ID_EXPIRATION_MS, DEFAULT_TRANSACTION_TIMEOUT_MS
from kafka_audit.rules.validation.log_validator import ValidationConfig

# Segments above 1.5x this size are split into byte ranges of about this size.
DEFAULT_SPLIT_BYTES = 64 * 1024 * 1024


@dataclass(slots=True)
class ScanOptions:
    """The ``scan`` options that shape an audit (SPEC section 1)."""

    validation: ValidationConfig = field(default_factory=ValidationConfig)
    reference_time: int | None = None
    transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS
    producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS
    # Collect the replay's timeline events (PartitionTotals.events); only `timeline` needs them.
    timeline: bool = False
    split_bytes: int = DEFAULT_SPLIT_BYTES
    # Spark partitions of the shuffle to the partition step; None: twice the default parallelism.
    shuffle_partitions: int | None = None
    # --broker-log files, read on the driver; each partition's lines travel in its PartitionMeta.
    broker_log: BrokerLog | None = None
    # The Kafka version each scanned cluster records (with_log_dir_facts sets it).
    written_by: ClusterLevels = field(default_factory=ClusterLevels)
    # Where the clusters' versions give different broker defaults: each partition folder's own
    # validation, by display path.
    validation_by_replica: dict[str, ValidationConfig] = field(default_factory=dict)
    # --baseline: the fingerprints of known findings (marked ``baseline``, never failing the gate).
    baseline: frozenset[str] = frozenset()

    @property
    def validations(self) -> Validations:
        """The validation of each partition folder, alone (what a segment task needs)."""
        return Validations(self.validation, self.validation_by_replica)


@dataclass(frozen=True, slots=True)
class Validations:
    """The scan's validation, and each partition folder's where clusters of several versions differ."""

    default: ValidationConfig
    by_replica: dict[str, ValidationConfig]

    def of(self, replica: str) -> ValidationConfig:
        """The validation of a partition folder (display path): its cluster's."""
        return self.by_replica.get(replica, self.default)


_VALIDATION = frozenset(f.name for f in fields(ValidationConfig))
# What :func:`scan_options` takes: the fields of ScanOptions and of its ValidationConfig.
SETTINGS = _VALIDATION | frozenset(f.name for f in fields(ScanOptions) if f.name != "validation")


def scan_options(**settings: Any) -> ScanOptions:
    """The :class:`ScanOptions` of the ``scan`` options (SPEC section 1), by the names of its
    fields and of its :class:`ValidationConfig`'s (:data:`SETTINGS`): the one place the CLI and
    ``kafka_audit.scan()`` build them (the topics a broker always compacts need no naming:
    ``ValidationConfig.is_compacted``); every default is the named constant of the rule it sets."""
    validation = {name: settings.pop(name) for name in _VALIDATION if name in settings}
    validation["compacted_topics"] = frozenset(validation.get("compacted_topics") or ())
    return ScanOptions(validation=ValidationConfig(**validation), **settings)


def reference_time_problem(paths: list[str], options: ScanOptions) -> str | None:
    """Why these timestamp checks cannot run, or None. Without ``--reference-time`` a segment's
    checks take its file's modification time as the broker's now (when the broker last appended);
    an object in a store has no such time (its time is the upload's), so remote inputs with
    timestamp bounds need an explicit reference time rather than a guess."""
    bounds = options.validation.timestamp_before_max_ms, options.validation.timestamp_after_max_ms
    if bounds == (None, None) or options.reference_time is not None:
        return None
    remote = [p for p in paths if storage.is_remote(p)]
    if not remote:
        return None
    return (
        f"--timestamp-before-max-ms/--timestamp-after-max-ms on {remote[0]} need --reference-time: an "
        "object in a store keeps no broker modification time (its time is the upload's)"
    )
