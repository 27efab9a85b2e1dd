"""kafka-audit: a forensic auditor for Apache Kafka's on-disk logs."""

__version__ = "0.1.0"
