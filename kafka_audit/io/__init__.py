"""Input: storage URIs (local paths and fsspec object stores), ranged reads, and the brokers'
own log4j files.

The one home of file access: every other package reads bytes through ``io.storage``. May use the
standard library and optional third-party clients only; no other kafka_audit package.
"""
