"""Renderers for people and machines: the scan report (table, json, ndjson, csv), Parquet
output, the producers and timeline views, progress lines and ``dump``.

May use: ``engines``, ``audit`` and everything below them.
"""
