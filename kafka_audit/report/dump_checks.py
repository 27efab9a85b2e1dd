"""What ``kafka-dump-log`` (``kafka.tools.DumpLogSegments``) checks besides printing, for ``dump``:

- ``--index-sanity-check``: an ``.index`` / ``.timeindex`` file's ``sanityCheck()`` (the check a
  broker runs on start-up to decide whether to rebuild the index), one line: ``<file> passed sanity
  check.`` or the ``CorruptIndexException`` message (OffsetIndex, TimeIndex).
- Every ``.index`` entry is checked against the segment beside it (``dumpIndex``: the batch at the
  entry's position must end at the entry's offset); ``.timeindex`` entries likewise (``dumpTimeIndex``:
  the batch ending at the entry's offset, its records' largest timestamp, timestamps increasing).
  ``--verify-index-only`` checks without printing the entries.
- While records are printed: offsets that do not follow each other (``dumpLog``).

What is found is collected in :class:`DumpSummaries` across all the files of one command and said
at the end on stderr in DumpLogSegments' words (:meth:`DumpSummaries.lines`), in file order (Kafka
prepends to its lists, so it prints some of them last first).
"""

from __future__ import annotations

import os
import re
import struct
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from kafka_audit.check_ids import CheckId
from kafka_audit.log.index_files import OFFSET_INDEX, TIME_INDEX, OffsetPosition, TimestampOffset
from kafka_audit.log.log_names import parse_base_offset
from kafka_audit.record.file_records import FileRecords
from kafka_audit.record.problem import Problem

_OFFSET_ENTRY = struct.Struct(">ii")  # relativeOffset, position
_TIME_ENTRY = struct.Struct(">qi")  # timestamp, relativeOffset
# Only this much of an index is read for its sanity check (a broker's default segment.index.bytes).
_MAX_INDEX_BYTES = 10 * 1024 * 1024
# How the compiled formatter (record/_record_text.c) opens a record line, and the offset there.
_RECORD_LINE_START = "| offset: "
_RECORD_LINE_OFFSET = re.compile(r"\| offset: (-?\d+) ")

Pairs = dict[str, list[tuple[int, int]]]


@dataclass(slots=True)
class DumpSummaries:
    """What one ``dump`` command found, by file (absolute path), to say at its end."""

    index_mismatches: Pairs = field(default_factory=dict)  # (index offset, log offset)
    time_mismatches: Pairs = field(default_factory=dict)  # (index timestamp, log timestamp)
    out_of_order: Pairs = field(default_factory=dict)  # (index timestamp, previously indexed timestamp)
    not_found: Pairs = field(default_factory=dict)  # (indexed offset, found log offset)
    non_consecutive: Pairs = field(default_factory=dict)  # (offset, the next record's offset)

    def lines(self) -> list[str]:
        """DumpSummaries' lines for stderr, as DumpLogSegments prints them after the last file."""
        out: list[str] = []
        for name, pairs in self.index_mismatches.items():
            out.append(f"Mismatches in :{name}")
            out.extend(f"  Index offset: {index}, log offset: {log}" for index, log in pairs)
        for name, pairs in self.time_mismatches.items():
            out.append(f"Found timestamp mismatch in :{name}")
            out.extend(f"  Index timestamp: {index}, log timestamp: {log}" for index, log in pairs)
        for name, pairs in self.out_of_order.items():
            out.append(f"Found out of order timestamp in :{name}")
            out.extend(f"  Index timestamp: {index}, Previously indexed timestamp: {before}" for index, before in pairs)
        for pairs in self.not_found.values():
            out.append("The following indexed offsets are not found in the log.")
            out.extend(f"Indexed offset: {index}, found log offset: {log}" for index, log in pairs)
        for name, pairs in self.non_consecutive.items():
            out.append(f"Non-consecutive offsets in {name}")
            out.extend(f"  {first} is followed by {second}" for first, second in pairs)
        return out


def _add(into: Pairs, path: str, pair: tuple[int, int]) -> None:
    into.setdefault(os.path.abspath(path), []).append(pair)


class OffsetFollower:
    """``dumpLog``'s walk over the printed records' offsets: each that is not the one before plus
    one is a non-consecutive pair of the file."""

    def __init__(self, path: str, summaries: DumpSummaries) -> None:
        self.path, self.summaries, self.last = path, summaries, -1

    def follow(self, offsets: list[int]) -> None:
        for offset in offsets:
            if self.last != -1 and offset != self.last + 1:
                _add(self.summaries.non_consecutive, self.path, (self.last, offset))
            self.last = offset


def sanity_check(path: str) -> str:
    """``OffsetIndex.sanityCheck`` / ``TimeIndex.sanityCheck`` on the index at ``path``: the line
    DumpLogSegments prints, ``<file> passed sanity check.``, or the exception's message."""
    with open(path, "rb") as file:
        data = file.read(_MAX_INDEX_BYTES)
    base = parse_base_offset(os.path.basename(path)) or 0
    full = os.path.abspath(path)
    time = path.removesuffix(".deleted").endswith(".timeindex")
    entry = _TIME_ENTRY if time else _OFFSET_ENTRY
    whole = data[: len(data) - len(data) % entry.size]
    if whole:
        last = entry.unpack_from(whole, len(whole) - entry.size)
        if time:
            first_timestamp = entry.unpack_from(whole, 0)[0]
            if last[0] < first_timestamp:
                return (f"Corrupt time index found, time index file ({full}) has non-zero size but the last timestamp "
                        f"is {last[0]} which is less than the first timestamp {first_timestamp}")
            if base + last[1] < base:
                return (f"Corrupt time index found, time index file ({full}) has non-zero size but the last offset "
                        f"is {base + last[1]} which is less than the first offset {base}")
        elif base + last[0] < base:
            return (f"Corrupt index found, index file ({full}) has non-zero size but the last offset is "
                    f"{base + last[0]} which is less than the base offset {base}.")
    if len(data) % entry.size:
        kind = "Time index" if time else "Index"
        return f"{kind} file {full} is corrupt, found {len(data)} bytes which is neither positive nor a multiple of {entry.size}" + (
            "" if time else ".")
    return f"{path} passed sanity check."


def _segment_beside(path: str) -> str:
    """The ``.log`` file of an index's segment (the same base name in the same folder)."""
    name = os.path.basename(path)
    return os.path.join(os.path.dirname(path), name.split(".")[0] + ".log")


def verify_offset_index(path: str, entries: list[OffsetPosition], summaries: DumpSummaries) -> Iterator[Problem]:
    """``dumpIndex``: the batch at each entry's position must end at the entry's offset; each that
    does not is a mismatch (its log offset -1 where no batch can be read there)."""
    log = _segment_beside(path)
    if not os.path.isfile(log):
        yield Problem(CheckId.INDEX_MISMATCH, None, f"no segment {log} beside the index to check it against")
        return
    with FileRecords(log) as segment:
        for entry in entries:
            found = next((b for b in segment.batches(entry.position) if not isinstance(b, Problem)), None)
            last = found.last_offset if found is not None and found.position == entry.position else -1
            if last != entry.offset:
                _add(summaries.index_mismatches, path, (entry.offset, last))


def verify_time_index(path: str, entries: list[TimestampOffset], index: list[OffsetPosition],
                      summaries: DumpSummaries) -> Iterator[Problem]:
    """``dumpTimeIndex``: from the offset index's position for each entry's offset, the first batch
    ending at or after it must end at it (else the offset is not found), its records' largest
    timestamp must be the entry's, and the entries' timestamps must increase."""
    log = _segment_beside(path)
    if not os.path.isfile(log):
        yield Problem(CheckId.INDEX_MISMATCH, None, f"no segment {log} beside the index to check it against")
        return
    offsets = [e.offset for e in index]
    previous = -1  # RecordBatch.NO_TIMESTAMP
    with FileRecords(log) as segment:
        for entry in entries:
            at = bisect_right(offsets, entry.offset) - 1
            start = index[at].position if at >= 0 else 0
            batch = next((b for b in segment.batches(start) if not isinstance(b, Problem) and b.last_offset >= entry.offset),
                         None)
            if batch is None or batch.last_offset != entry.offset:
                _add(summaries.not_found, path, (entry.offset, -1 if batch is None else batch.last_offset))
            else:
                stamps = [r.timestamp for r in segment.records(batch, with_data=False).records]
                largest = max(stamps, default=-1)
                if largest != entry.timestamp:
                    _add(summaries.time_mismatches, path, (entry.timestamp, largest))
                if previous >= entry.timestamp:
                    _add(summaries.out_of_order, path, (entry.timestamp, previous))
            previous = entry.timestamp


@dataclass(slots=True)
class DumpOptions:
    """``dump``'s kafka-dump-log options: ``decoder_topic`` (an internal topic whose decoder reads
    every record, whatever the folder: ``--offsets-decoder`` and the others), ``max_bytes`` (only
    the batches within a segment's first N bytes, ``FileRecords.slice(0, maxBytes)``),
    ``skip_record_metadata``, ``index_mode`` (``verify``: ``--verify-index-only``; ``sanity``:
    ``--index-sanity-check``) and the command's :class:`DumpSummaries`."""

    decoder_topic: str | None = None
    max_bytes: int | None = None
    skip_record_metadata: bool = False
    index_mode: str | None = None
    summaries: DumpSummaries = field(default_factory=DumpSummaries)


def compiled_offsets(text: str, count: int | None) -> list[int] | None:
    """The offsets of the record lines the compiled formatter wrote (``| offset: N ...``, each line
    ending in a line break), or None when its lines are not one per record (a key or value holding
    a line break): then the caller reads the offsets from the records."""
    if count is None or text.count("\n") != count:
        return None
    # ``count`` lines, each ended by its line break and opened as a record line.
    lines_open = text.startswith(_RECORD_LINE_START) and text.count("\n" + _RECORD_LINE_START) == count - 1
    if count and not (text.endswith("\n") and lines_open):
        return None
    # Every line opens with an offset; one more match would be inside a key or a value.
    found = _RECORD_LINE_OFFSET.findall(text)
    return [int(offset) for offset in found] if len(found) == count else None


def index_dump(path: str, options: DumpOptions) -> Iterator[dict[str, Any]]:
    """An ``.index`` or ``.timeindex`` as DumpLogSegments dumps it: its sanity check alone
    (``--index-sanity-check``: ``{"line"}``, ``{"sanity_check"}``), else its entries checked against
    the segment beside it (dumpIndex, dumpTimeIndex: the mismatches go to the summaries) and given
    as dicts unless ``--verify-index-only``; problems as ``{"problem", "position", "message"}``.
    An offset index without entries is ``{"line": "<file> is empty."}``."""
    base = parse_base_offset(os.path.basename(path)) or 0
    time = path.removesuffix(".deleted").endswith(".timeindex")
    parsed = (TIME_INDEX if time else OFFSET_INDEX).read(path, base)
    if not time and not parsed.entries and not parsed.problems and options.index_mode != "verify":
        yield {"line": f"{path} is empty.", "entries": 0}
        return
    if options.index_mode == "sanity":
        line = sanity_check(path)
        yield {"line": line, "sanity_check": "passed" if line.endswith(" passed sanity check.") else line}
        return
    if time:
        stem = path.removesuffix(".deleted").removesuffix(".timeindex")
        index = OFFSET_INDEX.read(stem + ".index", base).entries if os.path.isfile(stem + ".index") else []
        problems = list(verify_time_index(path, parsed.entries, index, options.summaries))
    else:
        problems = list(verify_offset_index(path, parsed.entries, options.summaries))
    if options.index_mode != "verify":
        yield from (asdict(entry) for entry in parsed.entries)
    for p in [*parsed.problems, *problems]:
        yield {"problem": p.check, "position": p.position, "message": p.message}
