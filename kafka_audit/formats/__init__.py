"""Bytes to batches, records and sidecar entries.

Pure Python, no Spark and no printing. Module names follow Kafka's own
``org.apache.kafka.common.record`` and ``org.apache.kafka.storage.internals.log``
packages so that a Kafka engineer finds the same concept under the same name.
"""
