"""Corruption as data: a typed problem found while decoding, at a byte position.

The reader never raises on bad input. Every problem it meets comes back as a
:class:`Problem` whose ``check`` is a check id of the SPEC catalogue (``crc_mismatch``,
``truncated_batch``, ...), so that ``kafka_audit.rules`` can turn it into a finding
without re-deriving what went wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Problem:
    """One decoding problem.

    ``position`` is the byte position in the segment of the batch (or top-level legacy
    message) concerned, or in the sidecar file; None for a problem of a text file (a checkpoint,
    ``meta.properties``), which names its line in ``details`` instead. ``record_index`` is the record's index inside its batch (the
    KIP-467 ``error_records`` index) for record-level problems, else None.
    """

    check: str
    position: int | None
    message: str
    record_index: int | None = None
    offset: int | None = None
    details: dict[str, Any] = field(default_factory=dict)
    # The walk's last problem is a batch cut off by the end of the bytes read, or one that fails
    # its CRC with only zeros after it (a write cut off in a preallocated file): in a partition's
    # newest segment an incomplete tail that LogSegment.recover truncates (SPEC incomplete_tail).
    incomplete: bool = False
