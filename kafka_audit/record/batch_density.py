"""How densely a segment file is cut into batches, from its first batch headers alone: the mean
bytes per batch of its first few batches, hopping from one 12-byte log overhead (offset, size) to
the next as ``FileLogInputStream`` does, without reading a record. The planner uses it to expect a
segment's CPU cost, which follows its batch count far more than its bytes."""

from __future__ import annotations

import os
import struct

from kafka_audit.record.record_batch import LEGACY_RECORD_OVERHEAD_V0, LOG_OVERHEAD

_OFFSET_SIZE = struct.Struct(">qi")
# Batches whose sizes are averaged: enough to pass a leading control batch or two.
SAMPLED_BATCHES = 32


def mean_batch_bytes(path: str, size: int, batches: int = SAMPLED_BATCHES) -> float | None:
    """The mean size (log overhead included) of the first ``batches`` batches of the local file
    ``path`` of ``size`` bytes, or None where it has no whole batch or cannot be read (its audit
    reports why)."""
    pos = count = 0
    try:
        with open(path, "rb") as segment:
            fd = segment.fileno()
            while count < batches and pos + LOG_OVERHEAD <= size:
                header = os.pread(fd, LOG_OVERHEAD, pos)
                if len(header) < LOG_OVERHEAD:
                    break
                length = _OFFSET_SIZE.unpack(header)[1]
                if length < LEGACY_RECORD_OVERHEAD_V0 or pos + LOG_OVERHEAD + length > size:
                    break
                pos += LOG_OVERHEAD + length
                count += 1
    except OSError:
        return None
    return pos / count if count else None
