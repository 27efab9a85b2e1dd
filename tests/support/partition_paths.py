"""The partition step's slow paths, to test its fast ones against (tests/test_partition_fast_paths.py).

:func:`partition_inputs` runs the segment step over a log dir and returns each partition's
``PartitionMeta`` and batch summaries in log order, as the engines hand them to
``audit_partition``. :func:`slow_paths` swaps the partition step's shortcuts for the plain code
they stand for:

- the replay's ``written`` state forked before the first batch, so both states run every batch
  (:class:`EagerReplay`) instead of being shared until the client first rejects a batch;
- ``OffsetContinuity.observe`` as its general rule (``judge``), without the shortcut for a batch
  that follows the previous one;
- ``.index`` / ``.timeindex`` parsed entry by entry (:func:`parse_index_entry_by_entry`, the loop
  ``parse_index`` replaced) instead of in bulk;
- timeline events built whatever ``PartitionMeta.timeline`` says.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest

from kafka_audit.audit import partition_audit
from kafka_audit.audit.partition_audit import PartitionMeta
from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.log import index_files
from kafka_audit.log.sidecar_file import SidecarEntries
from kafka_audit.rules.batch_summary import BatchSummary, flatten
from kafka_audit.rules.partition.offset_continuity import OffsetContinuity
from kafka_audit.rules.replay.partition_replay import PartitionLog, ProducerStateReplay
from tests.support.partition_runs import partition_items


def partition_inputs(paths: list[str], options: ScanOptions | None = None) -> list[tuple[PartitionMeta, list[BatchSummary]]]:
    """Each partition's meta and its batch summaries in log order (the segment step, in process;
    the compiled walk's runs as the summaries they hold)."""
    return [(meta, list(flatten(items))) for meta, items in partition_items(paths, options)]


class EagerReplay(ProducerStateReplay):
    """The replay with its written state a map of its own from the start (both states run every
    batch), timeline events always built; each instance is kept in ``made``."""

    made: list[EagerReplay] = []

    def __init__(self, log: PartitionLog) -> None:
        super().__init__(replace(log, settings=replace(log.settings, timeline=True)))
        self.producers.fork_written()
        EagerReplay.made.append(self)


class RecordedReplay(ProducerStateReplay):
    """The replay as the partition step runs it; each instance is kept in ``made``."""

    made: list[RecordedReplay] = []

    def __init__(self, log: PartitionLog) -> None:
        super().__init__(log)
        RecordedReplay.made.append(self)


def parse_index_entry_by_entry(
    data: bytes,
    entry: struct.Struct,
    kind: str,
    name: str,
    max_entries: int | None,
    relative_offset_field: int,
    make: Callable[[list[tuple]], list[Any]],
) -> SidecarEntries:
    """``parse_index`` as a loop over the entries, each judged on its own (DumpLogSegments' loop)."""
    result = SidecarEntries([], [])
    usable = len(data) - len(data) % entry.size
    if usable != len(data):
        result.add_problem(
            "index_mismatch",
            usable,
            f"{kind} file {name} is corrupt, found {len(data)} bytes which is not a multiple of {entry.size}",
            {"size": len(data)},
        )
    for number, fields in enumerate(entry.iter_unpack(data[:usable])):
        if fields[relative_offset_field] == 0 and (number > 0 or all(value == 0 for value in fields)):
            result.preallocated_bytes = usable - number * entry.size
            break
        if max_entries is not None and number >= max_entries:
            result.add_problem(
                "index_mismatch",
                number * entry.size,
                f"{kind} file {name} holds more entries than its segment has batches ({max_entries}); "
                f"the entries from byte {number * entry.size} on are not read",
                {"max_entries": max_entries},
            )
            break
        result.entries.extend(make([fields]))
    return result


@contextmanager
def slow_paths(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Within the block, ``audit_partition`` runs its slow paths (see the module docstring)."""
    with monkeypatch.context() as patch:
        patch.setattr(partition_audit, "ProducerStateReplay", EagerReplay)
        patch.setattr(OffsetContinuity, "observe", OffsetContinuity.judge)
        patch.setattr(index_files, "parse_index", parse_index_entry_by_entry)
        yield


def states(replay: ProducerStateReplay) -> tuple[dict, dict]:
    """The replay's client and written producer entries, as comparable values."""
    return dict(replay.producers.client.entries), dict(replay.producers.written.entries)
