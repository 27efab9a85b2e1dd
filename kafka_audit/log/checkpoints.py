"""Text sidecars of a log dir: ``CheckpointFile`` formats and ``meta.properties``.

- ``*-offset-checkpoint`` (``OffsetCheckpointFile``): ``version`` (0), ``count``, then
  ``topic partition offset`` lines: ``log-start-offset-checkpoint``,
  ``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint`` (the high watermark),
  ``cleaner-offset-checkpoint``.
- ``leader-epoch-checkpoint`` (``LeaderEpochCheckpointFile``): ``version`` (0), ``count``, then
  ``epoch startOffset`` lines.
- ``meta.properties`` (``MetaProperties``) and ``partition.metadata`` (``PartitionMetadataFile``):
  ``key=value`` / ``key: value`` lines.

``CheckpointFile.read`` fails the whole file on a malformed line or a count that disagrees with
the lines present ("Expected N entries in checkpoint file ..."); here the good lines are kept and
each problem is reported.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kafka_audit.check_ids import CheckId
from kafka_audit.io.listing import tree
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.log_names import LEADER_EPOCH_CHECKPOINT, META_PROPERTIES
from kafka_audit.log.sidecar_file import SidecarEntries, read_sidecar

CHECKPOINT_VERSION = 0
# The check a problem of these files carries (a sidecar that cannot be trusted): a scan reports
# such problems as notes, ``dump`` under this check. They have a line, not a byte position.
_CHECK = CheckId.INDEX_MISMATCH
# A checkpoint file's first two lines: its version, then its entry count.
_VERSION_AND_COUNT = 2
# Text longer than this is no Java long, known before int() reads it (int() of more than 4300
# digits raises): Long.MIN_VALUE has 20 characters, and one more is let through to the range check.
_MAX_LONG_CHARS = 21


@dataclass(frozen=True, slots=True)
class TopicPartitionOffset:
    """One entry line of an offset checkpoint (``OffsetCheckpointFile``): ``topic partition offset``."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class EpochEntry:
    """One line of ``leader-epoch-checkpoint`` (``LeaderEpochCheckpointFile``'s ``EpochEntry``)."""

    epoch: int
    start_offset: int


@dataclass(frozen=True, slots=True)
class Property:
    """One ``key=value`` line of ``meta.properties`` (``MetaProperties``), in file order."""

    key: str
    value: str


def _encode_checkpoint(lines: list[str]) -> bytes:
    """CheckpointFile.write: the version, the count, one line per entry."""
    return ("\n".join([str(CHECKPOINT_VERSION), str(len(lines)), *lines]) + "\n").encode("utf-8", "surrogateescape")


def encode_offset_checkpoint(entries: Iterable[TopicPartitionOffset]) -> bytes:
    """OffsetCheckpointFile: ``topic partition offset`` lines."""
    return _encode_checkpoint([f"{e.topic} {e.partition} {e.offset}" for e in entries])


def encode_leader_epoch_checkpoint(entries: Iterable[EpochEntry]) -> bytes:
    """LeaderEpochCheckpointFile: ``epoch startOffset`` lines."""
    return _encode_checkpoint([f"{e.epoch} {e.start_offset}" for e in entries])


def encode_properties(properties: Iterable[Property], comments: Iterable[str] = ()) -> bytes:
    """Properties.store: ``#`` comment lines, then ``key=value`` lines."""
    lines = [f"#{c}" for c in comments] + [f"{p.key}={p.value}" for p in properties]
    return ("\n".join(lines) + "\n").encode()


def _checkpoint_lines(text: str, name: str, fields: int, result: SidecarEntries) -> list[list[str]]:
    """The entry lines of a CheckpointFile, each split into ``fields`` fields.

    CheckpointFile.CheckpointReadBuffer.read: an empty file, or one holding only the version
    line, is an empty checkpoint (brokers leave an empty ``cleaner-offset-checkpoint``); every
    line after the count must be an entry (a blank line is a malformed one)."""
    lines = text.splitlines()
    if not lines:
        return []
    version = lines[0].strip()
    if version != str(CHECKPOINT_VERSION):
        result.add_line_problem(_CHECK, 1, f"Unrecognized version of the checkpoint file {name}: {_clip(version)}")
        return []
    if len(lines) < _VERSION_AND_COUNT:
        return []
    count = lines[1].strip()
    entries = []
    for number, line in enumerate(lines[2:], start=3):
        parts = line.split()
        # The last two fields are a partition or leader epoch (Integer.parseInt) and an offset
        # (Long.parseLong): a number past their range makes the line malformed, as in Kafka.
        if len(parts) != fields or not (_fits(parts[-2], 32) and _fits(parts[-1], 64)):
            result.add_line_problem(_CHECK, number, f"Malformed line {number} in checkpoint file {name}: {_clip(line)!r}")
            continue
        entries.append(parts)
    if not _fits(count, 32) or int(count) != len(entries):
        result.add_line_problem(
            _CHECK, 2, f"Expected {_clip(count)} entries in checkpoint file {name}, but found {len(entries)}"
        )
    return entries


def _clip(text: str, limit: int = 100) -> str:
    """A line quoted in a message, cut short: a garbage file may be one huge line."""
    return text if len(text) <= limit else text[:limit] + "..."


def _is_int(text: str) -> bool:
    """Long.parseLong's digits: decimal digits (``isdigit`` also admits ``²``, which ``int``
    refuses)."""
    digits = text[1:] if text.startswith("-") else text
    return digits.isdecimal()


def _fits(text: str, bits: int) -> bool:
    """``text`` parses as a Java int (32) or long (64). The length is checked first: ``int`` of
    more than 4300 digits raises."""
    return _is_int(text) and len(text) <= _MAX_LONG_CHARS and -(1 << (bits - 1)) <= int(text) < (1 << (bits - 1))


def _decode(data: bytes, name: str, result: SidecarEntries) -> str:
    text = data.decode("utf-8", errors="replace")
    if "\ufffd" in text:
        result.add_line_problem(_CHECK, None, f"{name} is not UTF-8 text")
    return text


def parse_offset_checkpoint(data: bytes, name: str = "offset checkpoint") -> SidecarEntries:
    result = SidecarEntries([], [])
    for topic, partition, offset in _checkpoint_lines(_decode(data, name, result), name, 3, result):
        result.entries.append(TopicPartitionOffset(topic, int(partition), int(offset)))
    return result


def parse_leader_epoch_checkpoint(data: bytes, name: str = LEADER_EPOCH_CHECKPOINT) -> SidecarEntries:
    result = SidecarEntries([], [])
    for epoch, offset in _checkpoint_lines(_decode(data, name, result), name, 2, result):
        result.entries.append(EpochEntry(int(epoch), int(offset)))
    return result


def parse_properties(data: bytes, name: str = META_PROPERTIES) -> SidecarEntries:
    """``java.util.Properties`` text (``key=value``; comments ``#``/``!``) and ``key: value``."""
    result = SidecarEntries([], [])
    for number, raw in enumerate(_decode(data, name, result).splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if cut <= 0:
            result.add_line_problem(_CHECK, number, f"Malformed line {number} in {name}: {_clip(raw)!r}")
            continue
        result.entries.append(Property(line[:cut].strip(), line[cut + 1 :].strip()))
    return result


def read_offset_checkpoint(path: str, storage: StorageContext | None = None) -> SidecarEntries:
    return read_sidecar(path, lambda data: parse_offset_checkpoint(data, path), storage=storage)


def read_leader_epoch_checkpoint(path: str, storage: StorageContext | None = None) -> SidecarEntries:
    return read_sidecar(path, lambda data: parse_leader_epoch_checkpoint(data, path), storage=storage)


def read_properties(path: str, storage: StorageContext | None = None) -> SidecarEntries:
    return read_sidecar(path, lambda data: parse_properties(data, path), storage=storage)


def cluster_of(partition_path: str, known: dict[str, str], storage: StorageContext) -> str:
    """The cluster a partition folder belongs to: the ``cluster.id`` of its log dir's
    ``meta.properties`` (``MetaProperties``), or "" where the log dir records none. ``known``
    caches the answer per log dir (``Discovery.cluster_ids``: one read a scan); ``storage`` is
    the request's."""
    fs = tree(partition_path, storage)
    log_dir = fs.dirname(partition_path)
    if log_dir not in known:
        properties = read_properties(fs.join(log_dir, META_PROPERTIES), storage).entries
        known[log_dir] = next((p.value for p in properties if p.key == "cluster.id"), "")
    return known[log_dir]
