"""Bytes to batches and records: the v0/v1 message and v2 batch formats, their encoders beside
their decoders, the codecs, control records and the C accelerator.

Module names follow Kafka's ``org.apache.kafka.common.record`` package. May use: ``kafka_audit.io``
(ranged reads of a segment) and the standard library. No rules, no Spark, no printing.
"""
