"""Engines that distribute the audit's tasks: in one process, on Spark (classic or Connect),
with the executor preflight, the session set-up and Spark's error lines.

Engines only distribute (each an ``engine.AuditEngine``: one plan in, one ``plan.finish`` out):
every decision about a finding is made in ``audit`` and ``rules``.
May use: ``audit`` and everything below it.
"""
