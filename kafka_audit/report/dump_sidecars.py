"""``kafka-audit dump`` of the sidecar files, after Kafka's DumpLogSegments: offset and time
indexes, transaction indexes, producer snapshots, checkpoints and properties files, one line (or
JSON object) per entry, problems in place.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

from kafka_audit.log import checkpoints, log_names, producer_snapshot, transaction_index
from kafka_audit.record.problem import Problem
from kafka_audit.report.dump_checks import DumpOptions, index_dump
from kafka_audit.report.safe_text import dumps, escape_text


def dump_sidecar(path: str, stem: str, as_json: bool, options: DumpOptions) -> Iterator[str]:
    """The lines of a sidecar file, chosen by its name (``stem``: without ``.deleted``) as
    DumpLogSegments does; a file of no known kind gives one ``not_a_segment`` problem line."""
    if stem.endswith((".index", ".timeindex")):
        yield from _dump_index(path, as_json, options)
    elif stem.endswith(".txnindex"):
        yield from _dump_entries(path, as_json, _txn_index_entries(path))
    elif stem.endswith(".snapshot"):
        yield from _dump_entries(path, as_json, _snapshot_entries(path))
    elif stem in (log_names.META_PROPERTIES, log_names.PARTITION_METADATA):
        yield from _dump_entries(path, as_json, _properties_entries(path))
    elif stem.endswith("checkpoint"):
        yield from _dump_entries(path, as_json, _checkpoint_entries(path))
    else:
        yield problem_line(path, None, "not_a_segment", "not a Kafka segment or sidecar file; skipped", as_json)


def problem_line(path: str, position: int | None, check: str, message: str, as_json: bool, bare: bool = False) -> str:
    """A problem as a JSON object, or a ``!!`` text line; ``bare``: Kafka's own line as it is."""
    if as_json:
        return dumps({"file": path, "position": position, "problem": check, "message": message})
    if bare:
        return escape_text(message)
    where = f" at position {position}" if position is not None else ""
    return f"!! {check}{where}: {escape_text(message)}"


def _dump_entries(path: str, as_json: bool, entries: Iterator[dict[str, Any]]) -> Iterator[str]:
    for entry in entries:
        if "problem" in entry:
            yield problem_line(path, entry.get("position"), entry["problem"], entry["message"], as_json)
        elif as_json:
            yield dumps({"file": path, **entry})
        else:
            yield " ".join(f"{_camel(k)}: {escape_text(str(v))}" for k, v in entry.items())


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _problems(problems: list[Problem]) -> Iterator[dict[str, Any]]:
    for p in problems:
        yield {"problem": p.check, "position": p.position, "message": p.message}


def _entries(parsed) -> Iterator[dict[str, Any]]:
    """A sidecar's entries (dataclasses), each as a dict of its fields in order, then its problems."""
    for entry in parsed.entries:
        yield asdict(entry)
    yield from _problems(parsed.problems)


def _dump_index(path: str, as_json: bool, options: DumpOptions) -> Iterator[str]:
    """An ``.index`` or ``.timeindex`` as DumpLogSegments dumps it (:func:`index_dump`)."""
    for item in index_dump(path, options):
        if isinstance(item, str):
            yield escape_text(item)  # a sanity-check line names the file: shown escaped
        elif as_json or "problem" in item:
            yield from _dump_entries(path, as_json, iter([item]))
        elif "line" in item:
            yield escape_text(item["line"])
        else:
            yield " ".join(f"{_camel(k)}: {v}" for k, v in item.items())


def _txn_index_entries(path: str) -> Iterator[dict[str, Any]]:
    return _entries(transaction_index.read_transaction_index(path))


def _snapshot_entries(path: str) -> Iterator[dict[str, Any]]:
    parsed = producer_snapshot.read_producer_snapshot(path)
    for e in parsed.entries:
        yield {
            "producer_id": e.producer_id,
            "producer_epoch": e.producer_epoch,
            "coordinator_epoch": e.coordinator_epoch,
            "current_txn_first_offset": e.current_txn_first_offset,
            "last_sequence": e.last_sequence,
            "last_offset": e.last_offset,
            "offset_delta": e.offset_delta,
            "timestamp": e.timestamp,
        }
    yield from _problems(parsed.problems)


def _checkpoint_entries(path: str) -> Iterator[dict[str, Any]]:
    if os.path.basename(path).startswith(log_names.LEADER_EPOCH_CHECKPOINT):
        return _entries(checkpoints.read_leader_epoch_checkpoint(path))
    return _entries(checkpoints.read_offset_checkpoint(path))


def _properties_entries(path: str) -> Iterator[dict[str, Any]]:
    return _entries(checkpoints.read_properties(path))
