"""Scan option sets that give the record screen different bounds: the defaults, timestamp bounds
around the fixtures' clock (a low and a high bound), and small size limits. The compiled paths
are held to the Python path under each (tests/test_quick_path.py, tests/test_batch_walk.py)."""

from __future__ import annotations

from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.rules.validation.log_validator import ValidationConfig
from tests.support.writer import TS_BASE

SCREEN_OPTIONS = [
    ScanOptions(),
    ScanOptions(
        validation=ValidationConfig(timestamp_before_max_ms=10**9, timestamp_after_max_ms=10**6),
        reference_time=TS_BASE + 5 * 10**5,
    ),
    ScanOptions(validation=ValidationConfig(max_message_bytes=300, segment_bytes=2000)),
]
