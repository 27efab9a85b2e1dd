"""Baselines (SPEC section 1, ``--write-baseline`` / ``--baseline``): the fingerprints of the
findings a team has accepted, so that a CI gate fails only on what is new.

The file is one JSON object::

    {
      "kafka_audit_baseline": 1,
      "fingerprint": "kafkaAudit/v1",
      "findings": [
        {"fingerprint": "6b19db35...", "check": "epoch_bump", "severity": "info",
         "topic": "test", "partition": 8, "offset": 120, "message": "..."}
      ]
    }

``kafka_audit_baseline`` is the format's version; ``fingerprint`` names the fingerprint recipe
(``rules.findings.FINGERPRINT_VERSION``). Only ``findings[].fingerprint`` is read back; the other
fields are there for the people who review the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from kafka_audit.errors import KafkaAuditError
from kafka_audit.rules.findings import FINGERPRINT_VERSION, Finding

BASELINE_VERSION = 1
_VERSION_KEY = "kafka_audit_baseline"
# What a reviewer needs to recognise each listed finding.
_SHOWN_FIELDS = ("check", "severity", "topic", "partition", "offset", "message")


class BaselineError(KafkaAuditError, ValueError):
    """A baseline that is not one this version reads; the message is one line naming the cause."""


def baseline_json(findings: Iterable[Finding]) -> str:
    """The baseline of ``findings`` (in their order), as the file's text."""
    listed = [{"fingerprint": f.fingerprint, **{name: getattr(f, name) for name in _SHOWN_FIELDS}} for f in findings]
    document = {_VERSION_KEY: BASELINE_VERSION, "fingerprint": FINGERPRINT_VERSION, "findings": listed}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def parse_baseline(text: str) -> frozenset[str]:
    """The fingerprints a baseline file lists; :class:`BaselineError` when it is not a baseline of
    this format and fingerprint version."""
    try:
        document: Any = json.loads(text)
    except ValueError as exc:
        raise BaselineError(f"not JSON ({exc})") from None
    if not isinstance(document, dict) or _VERSION_KEY not in document:
        raise BaselineError(f"not a kafka-audit baseline (no {_VERSION_KEY!r} field)")
    if document[_VERSION_KEY] != BASELINE_VERSION:
        raise BaselineError(f"baseline version {document[_VERSION_KEY]!r}; this kafka-audit reads {BASELINE_VERSION}")
    if document.get("fingerprint") != FINGERPRINT_VERSION:
        raise BaselineError(
            f"fingerprints of recipe {document.get('fingerprint')!r}; this kafka-audit makes {FINGERPRINT_VERSION!r}"
        )
    listed = document.get("findings")
    if not isinstance(listed, list):
        raise BaselineError("'findings' is not a list")
    fingerprints = set()
    for number, entry in enumerate(listed):
        fingerprint = entry.get("fingerprint") if isinstance(entry, dict) else None
        if not isinstance(fingerprint, str) or not fingerprint:
            raise BaselineError(f"findings[{number}] has no fingerprint string")
        fingerprints.add(fingerprint)
    return frozenset(fingerprints)
