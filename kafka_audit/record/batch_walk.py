"""The segment step's compiled batch walk (``_batch_walk.c``) and the columns it summarises into.

A run of v2 batches with nothing to report (framing, CRC-32C, header rules, payload inflated and
screened) is walked in C and comes out as one :class:`BatchColumns`: the batch summaries as
columns (struct of arrays, :data:`COLUMNS`), never a Python object per batch. The walk only ever
decides "nothing to report": it stops at the first batch it does not take, which the Python walk
(:func:`~kafka_audit.record.file_records.iter_batches`) then reads, and the audit validates with
the one implementation of the rules. ``tests/test_batch_walk.py`` holds the two walks equal.

Optional, like the record screen: without a C compiler there is no ``_batch_walk``
(:data:`COMPILED` False) and every batch takes the Python walk; the same columns are then built
from the summaries (``rules.batch_summary.SummaryColumns.of_summaries``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from kafka_audit.record.byte_stream import STREAM_BOUND, Buffer
from kafka_audit.record.lz4_frame import LZ4_BLOCK_INTO
from kafka_audit.record.record_screen import COMPILED as SCREEN_COMPILED
from kafka_audit.record.record_screen import RecordScreen
from kafka_audit.record.zstd_frame import ZSTD_DECOMPRESSOR

try:
    from kafka_audit.record import _batch_walk  # type: ignore[attr-defined]  # compiled: no stub
except ImportError:  # installed without a C compiler (setup.py said so), or copied without its build
    _compiled_walk = None
else:
    _compiled_walk = _batch_walk.walk

# Whether this process walks batches in C (fixed at import; it screens records as _record_screen does).
COMPILED: bool = _compiled_walk is not None and SCREEN_COMPILED

TypeCode = Literal["q", "i", "h", "b"]

# The columns, in their order in :attr:`BatchColumns.data`: (name, ``array`` typecode). The one
# place their dtypes are stated. Names are BatchSummary's fields; ``q`` int64, ``i`` int32, ``h``
# int16, ``b`` int8 (booleans 0/1), little-endian as the machine (native). ``compression`` is the
# codec id (``record_batch.codec_label`` names it); ``crc`` the stored CRC (-1: none).
# BatchSummary's topic, partition, segment and segment_base_offset are one task's: not columns.
COLUMNS: tuple[tuple[str, TypeCode], ...] = (
    ("position", "q"),
    ("base_offset", "q"),
    ("last_offset", "q"),
    ("producer_id", "q"),
    ("max_timestamp", "q"),
    ("crc", "q"),
    ("size", "q"),
    ("base_sequence", "i"),
    ("last_sequence", "i"),
    ("record_count", "i"),
    ("coordinator_epoch", "i"),
    ("partition_leader_epoch", "i"),
    ("producer_epoch", "h"),
    ("control_type", "h"),
    ("magic", "b"),
    ("valid", "b"),
    ("is_transactional", "b"),
    ("is_control", "b"),
    ("crc_valid", "b"),
    ("compression", "b"),
)
COLUMN_NAMES: tuple[str, ...] = tuple(name for name, _ in COLUMNS)
_WIDTH = {"q": 8, "i": 4, "h": 2, "b": 1}
# Each column's (name, typecode, width in bytes, bytes per batch of the columns before it): in
# ``count`` batches' columns it is ``data[count * before :][: count * width]``. The one place the
# layout is worked out (BatchColumns reads it, the Spark transport wraps the same memory by it).
LAYOUT: tuple[tuple[str, TypeCode, int, int], ...] = tuple(
    (name, code, _WIDTH[code], sum(_WIDTH[earlier] for _, earlier in COLUMNS[:index]))
    for index, (name, code) in enumerate(COLUMNS)
)
_PLACES = {name: (code, width, before) for name, code, width, before in LAYOUT}
ROW_BYTES = sum(_WIDTH[code] for _, code in COLUMNS)


@dataclass(frozen=True, slots=True)
class BatchColumns:
    """``count`` batch summaries as columns, laid out by :data:`LAYOUT` (:data:`COLUMNS`' order,
    widths descending, so each column is aligned). ``position``: where the walk goes on (the end
    of the last batch)."""

    data: bytes
    count: int
    position: int

    def column(self, name: str) -> memoryview[int]:
        """One column as a typed memoryview over :attr:`data` (no copy)."""
        code, width, before = _PLACES[name]
        return memoryview(self.data)[self.count * before : self.count * (before + width)].cast(code)

    def columns(self) -> list[memoryview[int]]:
        """Every column, in :data:`COLUMNS`' order (one memoryview of :attr:`data` for them all:
        the partition step reads a run's columns once per run)."""
        data, count = memoryview(self.data), self.count
        return [data[count * before : count * (before + width)].cast(code) for _, code, width, before in LAYOUT]


class CompiledWalk:
    """The C walk over one segment with one task's settings: ``runs(...)`` yields the runs of
    batches it takes from a position on."""

    def __init__(self, max_batch_bytes: int, create_time: RecordScreen, log_append_time: RecordScreen) -> None:
        """``max_batch_bytes``: the largest batch with nothing to report (max.message.bytes and
        segment.bytes, at most :data:`STREAM_BOUND`); the record screens of the two timestamp types."""
        self.max_batch_bytes = min(max_batch_bytes, STREAM_BOUND)
        self.screens = (create_time, log_append_time)

    def runs(
        self, buf: Buffer, pos: int, stop: int, end: int, need: Callable[[int, int], None], loaded: Callable[[int], int]
    ) -> Iterator[BatchColumns]:
        """The runs of batches taken from ``pos`` on, while they start before ``stop`` and end by
        ``end``. ``loaded(pos)``: how far the buffer holds bytes from ``pos``; ``need(a, b)`` loads
        more exactly where the Python walk would (a batch's header, then the batch)."""
        assert _compiled_walk is not None
        create, append = self.screens
        want = 0
        while pos < stop:
            if want:
                if want > end:
                    return
                need(pos, want)
            limit = min(end, loaded(pos))
            data, count, after, wanted = _compiled_walk(
                buf, pos, stop, limit, self.max_batch_bytes, STREAM_BOUND, create, append, LZ4_BLOCK_INTO,
                ZSTD_DECOMPRESSOR,
            )
            if count:
                yield BatchColumns(data, count, after)
            if count and wanted == after:  # a full run: the walk goes on from there
                pos, want = after, 0
                continue
            if not wanted or (not count and wanted == want):
                return  # the batch at ``after`` is the Python walk's
            pos, want = after, wanted
