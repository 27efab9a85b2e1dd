"""kafka-audit: a forensic auditor for Apache Kafka's on-disk logs.

``kafka_audit.scan(paths, spark=None, **options)`` runs the audit from Python (``kafka_audit.api``).
"""

# The one version source: pyproject.toml reads it (setuptools' dynamic version), `kafka-audit --version`
# prints it, the Spark preflight compares it with each executor's. CHANGELOG.md says what each release changed.
__version__ = "0.5.0"
__all__ = ["AuditResult", "ExecutorEnvironmentError", "KafkaAuditError", "scan"]

# The base of every error the package raises (a module that imports nothing: no cost at start-up).
from kafka_audit.errors import KafkaAuditError  # noqa: E402

_FROM_API = ("AuditResult", "ExecutorEnvironmentError", "scan")


def __getattr__(name: str):
    """``scan``, ``AuditResult`` and ``ExecutorEnvironmentError`` imported on first use: ``kafka-audit --version`` stays light."""
    if name in _FROM_API:
        from kafka_audit import api

        return getattr(api, name)
    raise AttributeError(f"module 'kafka_audit' has no attribute {name!r}")
