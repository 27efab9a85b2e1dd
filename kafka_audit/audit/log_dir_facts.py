"""What the log dirs say about auditing them, decided once before any step runs: the topics
compacted (``cleaner-offset-checkpoint``) and the broker defaults of the Kafka version that wrote
each cluster (``metadata.version``)."""

from __future__ import annotations

from dataclasses import replace

from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.log.discovery import Discovery
from kafka_audit.log.feature_levels import WrittenBy, read_written_by
from kafka_audit.rules.validation.log_validator import ValidationConfig

# ServerLogConfigs.LOG_MESSAGE_TIMESTAMP_AFTER_MAX_MS_DEFAULT of Kafka 4 (Long.MAX_VALUE, off, in 3.x).
KAFKA_4_TIMESTAMP_AFTER_MAX_MS = 3_600_000


def with_inferred_compaction(options: ScanOptions, discovery: Discovery) -> ScanOptions:
    """SPEC section 2: a topic is compacted when ``--compacted-topic`` names it, when it is
    ``__consumer_offsets`` / ``__transaction_state`` (``ValidationConfig.is_compacted``), or when
    its log dir's ``cleaner-offset-checkpoint`` lists a partition of it (``LogCleanerManager``
    checkpoints only the logs the cleaner compacts; ``cleanup.policy`` is a topic setting). The
    result's ``validation.compacted_topics`` is then the one answer for every step of the scan."""
    listed = {p.topic for p in discovery.partitions if p.cleaner_checkpointed}
    named = options.validation.compacted_topics
    if listed <= named:
        return options
    return replace(options, validation=replace(options.validation, compacted_topics=named | listed))


def with_log_dir_facts(options: ScanOptions, discovery: Discovery) -> ScanOptions:
    """What the log dirs say about auditing them, decided once for every step of the scan: the
    compacted topics (:func:`with_inferred_compaction`) and the Kafka version that wrote each log
    dir's cluster (:func:`read_written_by`), whose broker defaults apply where no option is given
    (SPEC section 1): ``log.message.timestamp.after.max.ms`` is 3600000 on Kafka 4.x
    (``ServerLogConfigs.LOG_MESSAGE_TIMESTAMP_AFTER_MAX_MS_DEFAULT``), off (Long.MAX_VALUE) on 3.x
    and when the version is unknown; ``...before.max.ms`` is off on both. The default bound is
    checked against each segment's modification time, at or after the broker's last append.
    Clusters of different versions scanned together each keep their own defaults."""
    options = with_inferred_compaction(options, discovery)
    written_by = read_written_by(discovery)
    by_cluster = {cluster: _broker_defaults(options.validation, w) for cluster, w in written_by.clusters.items()}
    if len(set(by_cluster.values())) <= 1:
        validation = next(iter(by_cluster.values()), options.validation)
        return replace(options, validation=validation, written_by=written_by)
    by_replica = {replica: by_cluster[cluster] for replica, cluster in written_by.cluster_of.items()}
    return replace(options, written_by=written_by, validation_by_replica=by_replica)


def _broker_defaults(validation: ValidationConfig, written_by: WrittenBy) -> ValidationConfig:
    """``validation`` with the unset timestamp bound at the broker default of that version."""
    if not written_by.kafka_4 or validation.timestamp_after_max_ms is not None:
        return validation
    return replace(
        validation,
        timestamp_after_max_ms=KAFKA_4_TIMESTAMP_AFTER_MAX_MS,
        timestamp_rule=(
            f"Kafka 4.x broker default log.message.timestamp.after.max.ms={KAFKA_4_TIMESTAMP_AFTER_MAX_MS} "
            f"(the log dir's metadata.version is {written_by.metadata_version})"
        ),
    )
