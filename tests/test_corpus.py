"""Segments and sidecars written by real Kafka brokers (../shared/corpus/real, see its SOURCES.md).

Every ``.log`` must read without a single Problem, and batch by batch as kafka-python's
independent decoder (``MemoryRecords``) reads the same bytes; the per-source totals are also
pinned here, so a regression shared by both decoders cannot pass unseen. Every sidecar must
parse without a problem, and what the sidecars say must agree with the logs beside them.
"""

from __future__ import annotations

import functools
from collections import Counter
from pathlib import Path

import pytest
from kafka.record.memory_records import MemoryRecords

from kafka_audit.log import checkpoints, log_names, producer_snapshot
from kafka_audit.log.index_files import OFFSET_INDEX, TIME_INDEX
from kafka_audit.log.log_dir import discover
from kafka_audit.record.control_record import parse_control_record
from kafka_audit.record.file_records import FileRecords
from kafka_audit.record.problem import Problem
from kafka_audit.record.record_batch import ControlRecordType, RecordBatch
from tests.support.audit_run import SHARED, THIRD_PARTY_CORPUS

CORPUS = SHARED / "corpus" / THIRD_PARTY_CORPUS
EXPERTS = "fuzibotond__Experts-in-team-innovation"

# (batches, records) per source, as kafka-python reads them (control records count as records).
# The batch totals are the ones SOURCES.md states.
SOURCE_TOTALS = {
    "marioBarbozaA__AIBulb": (11_366, 11_420),
    EXPERTS: (6_387, 6_946),
    "silvagois__project_data_enginnering": (98, 98),
    "DanielMorales9__kafkafun": (873, 1_595),
    "Bheem6005__kafka": (19, 19),
}
LOG_FILES_IN_CORPUS = 268


def _files(pattern: str) -> list[str]:
    if not CORPUS.is_dir():
        return []
    return sorted(str(p.relative_to(CORPUS)) for p in CORPUS.rglob(pattern) if p.is_file())


LOGS = _files("*.log")


def _with_entries_and_log(suffix: str) -> list[str]:
    """Non-empty index files of this suffix that have their segment beside them."""
    return [
        name
        for name in _files("*" + suffix)
        if (CORPUS / name).stat().st_size and (CORPUS / name).with_suffix(".log").exists()
    ]
SIDECARS = [
    name
    for name in _files("*")
    if not name.endswith((".log", ".lock", ".md")) and not name.endswith("bootstrap.checkpoint")
]


# ---------------------------------------------------------------------------------------------
# Both decoders over the same bytes
# ---------------------------------------------------------------------------------------------


@functools.cache
def ours(relative: str) -> tuple[tuple, ...]:
    """Our reader: per batch (base offset, last offset, producer id, epoch, base sequence,
    transactional, control, records read), and every Problem met."""
    batches, problems = [], []
    with FileRecords(CORPUS / relative) as log:
        for item in log.batches():
            if isinstance(item, Problem):
                problems.append(item)
                continue
            decoded = log.records(item)
            problems.extend(decoded.problems)
            batches.append(
                (
                    item.base_offset,
                    item.last_offset,
                    item.producer_id,
                    item.producer_epoch,
                    item.base_sequence,
                    item.is_transactional,
                    item.is_control,
                    len(decoded.records),
                )
            )
    return tuple(batches), tuple(problems)


@functools.cache
def kafka_python(relative: str) -> tuple[tuple, ...]:
    """kafka-python's MemoryRecords over the same bytes, the same fields."""
    records = MemoryRecords((CORPUS / relative).read_bytes())
    batches = []
    while (batch := records.next_batch()) is not None:
        count = sum(1 for _ in batch)
        batches.append(
            (
                batch.base_offset,
                batch.base_offset + batch.last_offset_delta,
                batch.producer_id,
                batch.producer_epoch,
                batch.base_sequence,
                batch.is_transactional,
                batch.is_control_batch,
                count,
            )
        )
    return tuple(batches)


@pytest.mark.parametrize("relative", LOGS)
def test_real_segment_reads_without_problems(corpus: Path, relative: str) -> None:
    """A healthy segment written by a broker gives no Problem at all."""
    batches, problems = ours(relative)
    assert list(problems) == []
    if (CORPUS / relative).stat().st_size:
        assert batches, "a non-empty segment holds at least one batch"


@pytest.mark.parametrize("relative", LOGS)
def test_real_segment_batches_and_records_match_kafka_python(corpus: Path, relative: str) -> None:
    """Batch by batch, our header fields and record counts equal kafka-python's."""
    batches, _ = ours(relative)
    expected = kafka_python(relative)
    assert len(batches) == len(expected)
    assert sum(b[-1] for b in batches) == sum(b[-1] for b in expected)
    assert batches == expected


@pytest.mark.parametrize("relative", LOGS)
def test_real_segment_offsets_increase_from_the_file_name(corpus: Path, relative: str) -> None:
    """The first batch is at or after the base offset in the 20-digit name, and batches follow
    each other in offset order."""
    batches, _ = ours(relative)
    base = int(Path(relative).name[:20])
    assert all(b[0] >= base for b in batches[:1])
    for previous, current in zip(batches, batches[1:]):
        assert current[0] > previous[1]


def test_corpus_holds_the_expected_sources_and_files(corpus: Path) -> None:
    assert sorted(p.name for p in corpus.iterdir() if p.is_dir()) == sorted(SOURCE_TOTALS)
    assert len(LOGS) == LOG_FILES_IN_CORPUS


@pytest.mark.parametrize("source", sorted(SOURCE_TOTALS))
def test_per_source_totals_are_pinned(corpus: Path, source: str) -> None:
    """Totals per source, as SOURCES.md states them, for our reader and kafka-python alike."""
    logs = [name for name in LOGS if name.startswith(source + "/")]
    ours_total = (sum(len(ours(n)[0]) for n in logs), sum(b[-1] for n in logs for b in ours(n)[0]))
    theirs_total = (sum(len(kafka_python(n)) for n in logs), sum(b[-1] for n in logs for b in kafka_python(n)))
    assert ours_total == SOURCE_TOTALS[source]
    assert theirs_total == SOURCE_TOTALS[source]


def test_control_batches_hold_one_known_control_record(corpus: Path) -> None:
    """Control records count as records; every one in the corpus is a well-formed control
    record of a known type (KRaft LEADER_CHANGE / SNAPSHOT_* / KRAFT_* and markers)."""
    types: Counter = Counter()
    for relative in LOGS:
        with FileRecords(CORPUS / relative) as log:
            for batch in log.batches():
                if isinstance(batch, RecordBatch) and batch.is_control:
                    (record,) = log.records(batch).records
                    control = parse_control_record(record)
                    assert control.error is None, relative
                    types[ControlRecordType(control.type).name] += 1
    assert types["LEADER_CHANGE"] >= 2  # one per KRaft source at least


def test_bootstrap_checkpoint_is_a_kraft_snapshot_of_batches(corpus: Path) -> None:
    """bootstrap.checkpoint holds record batches framed by SNAPSHOT_HEADER / SNAPSHOT_FOOTER."""
    path = corpus / EXPERTS / "bootstrap.checkpoint"
    with FileRecords(path) as log:
        items = list(log.batches())
        assert not [i for i in items if isinstance(i, Problem)]
        first, *_, last = items
        header = parse_control_record(log.records(first).records[0])
        footer = parse_control_record(log.records(last).records[0])
    assert (header.type, footer.type) == (ControlRecordType.SNAPSHOT_HEADER, ControlRecordType.SNAPSHOT_FOOTER)
    count = 0
    records = MemoryRecords(path.read_bytes())
    while records.next_batch() is not None:
        count += 1
    assert count == len(items)


# ---------------------------------------------------------------------------------------------
# Sidecars
# ---------------------------------------------------------------------------------------------


def read_sidecar(path: Path):
    """The reader of kafka_audit.formats for this sidecar, by name."""
    name = path.name
    base = int(name[:20]) if name[:20].isdigit() else 0
    if name.endswith((".index", ".index.deleted")):
        return OFFSET_INDEX.read(str(path), base)
    if name.endswith((".timeindex", ".timeindex.deleted")):
        return TIME_INDEX.read(str(path), base)
    if name.endswith(".snapshot"):
        return producer_snapshot.read_producer_snapshot(str(path))
    if name == log_names.LEADER_EPOCH_CHECKPOINT:
        return checkpoints.read_leader_epoch_checkpoint(str(path))
    if name in log_names.OFFSET_CHECKPOINTS:
        return checkpoints.read_offset_checkpoint(str(path))
    if name in (log_names.META_PROPERTIES, log_names.PARTITION_METADATA):
        return checkpoints.read_properties(str(path))
    raise AssertionError(f"no reader for {path}")


@pytest.mark.parametrize("relative", SIDECARS)
def test_real_sidecar_parses_without_problems(corpus: Path, relative: str) -> None:
    """Every .index, .timeindex, .snapshot, *.deleted index, checkpoint and properties file a
    broker wrote parses with zero problems."""
    parsed = read_sidecar(corpus / relative)
    assert list(parsed.problems) == []


def test_every_kind_of_sidecar_is_covered(corpus: Path) -> None:
    kinds = Counter(
        next(
            (k for k in (".index.deleted", ".timeindex.deleted", ".index", ".timeindex", ".snapshot") if n.endswith(k)),
            Path(n).name,
        )
        for n in SIDECARS
    )
    for kind in (".index", ".timeindex", ".snapshot", ".index.deleted", ".timeindex.deleted", "meta.properties",
                 "leader-epoch-checkpoint", "log-start-offset-checkpoint", "recovery-point-offset-checkpoint",
                 "replication-offset-checkpoint", "cleaner-offset-checkpoint", "partition.metadata"):
        assert kinds[kind] > 0, kind


def _batches_of(log_path: Path) -> list[RecordBatch]:
    with FileRecords(log_path) as log:
        return [b for b in log.batches() if isinstance(b, RecordBatch)]


@pytest.mark.parametrize("relative", _with_entries_and_log(".index"))
def test_real_offset_index_entries_point_at_batches(corpus: Path, relative: str) -> None:
    """A leader's offset index entry is (last offset of the append, its position): with the base
    offset added, each entry names a batch start and that batch's last offset."""
    path = corpus / relative
    entries = OFFSET_INDEX.read(str(path), int(path.name[:20])).entries
    assert entries
    by_position = {b.position: b for b in _batches_of(path.with_suffix(".log"))}
    for entry in entries:
        assert entry.position in by_position
        assert by_position[entry.position].last_offset == entry.offset


@pytest.mark.parametrize("relative", _with_entries_and_log(".timeindex"))
def test_real_time_index_entries_point_at_the_batch_of_that_timestamp(corpus: Path, relative: str) -> None:
    """TimeIndex entry (max timestamp so far, offset it was seen at): a batch ends at that offset
    and has that max timestamp."""
    path = corpus / relative
    entries = TIME_INDEX.read(str(path), int(path.name[:20])).entries
    assert entries
    by_last = {b.last_offset: b for b in _batches_of(path.with_suffix(".log"))}
    for entry in entries:
        assert by_last[entry.offset].max_timestamp == entry.timestamp


def test_the_experts_snapshots_hold_the_producers_the_log_shows(corpus: Path) -> None:
    """Each .snapshot captures, per producer id, the epoch, last sequence and last offset of the
    producer's last batch before the snapshot's offset, exactly as the log shows them."""
    producers_seen: set[int] = set()
    snapshots = sorted((corpus / EXPERTS).rglob("*.snapshot"))
    assert snapshots
    for path in snapshots:
        snap = producer_snapshot.read_producer_snapshot(str(path))
        assert snap.valid
        last_batch: dict[int, RecordBatch] = {}
        for log in sorted(path.parent.glob("*.log")):
            for batch in _batches_of(log):
                if batch.has_producer_id and batch.last_offset < snap.offset and not batch.is_control:
                    last_batch[batch.producer_id] = batch
        assert {e.producer_id for e in snap.entries} == set(last_batch), path.name
        for entry in snap.entries:
            batch = last_batch[entry.producer_id]
            assert (entry.producer_epoch, entry.last_sequence, entry.last_offset) == (
                batch.producer_epoch,
                batch.last_sequence,
                batch.last_offset,
            )
            assert entry.current_txn_first_offset == -1
        producers_seen |= set(last_batch)
    assert producers_seen == {0, 1000, 1001, 2000, 3000}  # SOURCES.md: 5 producer ids


def test_meta_properties_name_the_broker(corpus: Path) -> None:
    """ZooKeeper brokers write version 0 with broker.id, KRaft nodes version 1 with node.id."""
    for source in SOURCE_TOTALS:
        props = {p.key: p.value for p in checkpoints.read_properties(str(corpus / source / "meta.properties")).entries}
        assert props["version"] in ("0", "1")
        assert ("broker.id" if props["version"] == "0" else "node.id") in props


def test_discovery_finds_every_corpus_segment_without_notes(corpus: Path) -> None:
    """The whole corpus as one PATH: every partition folder once, every .log a live segment,
    retention leftovers (*.index.deleted) and KRaft files without a note."""
    found = discover([str(corpus)])
    assert found.notes == []
    assert found.segment_count == LOG_FILES_IN_CORPUS
    assert len({p.key for p in found.partitions}) == len(found.partitions)
    first_bases = {
        p.display_path: p.segments[0].base_offset
        for p in found.partitions
        if p.display_path.startswith("silvagois") and p.segments[0].base_offset
    }
    assert sorted(first_bases.values()) == [1, 12, 21, 32, 37]
