"""The log dir on disk: partition folders and file names, the sidecar files (offset, time and
transaction indexes, producer snapshots, checkpoints) and the schemas of the internal topics'
records.

Names follow Kafka's ``org.apache.kafka.storage.internals.log`` package. May use:
``kafka_audit.record`` and ``kafka_audit.io``. No rules, no Spark.
"""
