"""kafka-audit: a forensic auditor for Apache Kafka's on-disk logs.

``kafka_audit.scan(paths, spark=None, **options)`` runs the audit from Python (``kafka_audit.api``).
"""

__version__ = "0.1.0"
__all__ = ["AuditResult", "ExecutorEnvironmentError", "scan"]


def __getattr__(name: str):
    """``scan``, ``AuditResult`` and ``ExecutorEnvironmentError`` imported on first use: ``kafka-audit --version`` stays light."""
    if name in __all__:
        from kafka_audit import api

        return getattr(api, name)
    raise AttributeError(f"module 'kafka_audit' has no attribute {name!r}")
