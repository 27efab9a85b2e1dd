"""kafka_audit.log.log_dir.discover on log dir trees built in tmp_path.

Kafka names followed: ``UnifiedLog.parseTopicPartitionName`` (``<topic>-<partition>`` and the
``-delete`` / ``-future`` / ``-stray`` folders), ``LogFileUtils`` (20-digit base offsets, the
``.deleted`` / ``.cleaned`` / ``.swap`` suffixes), ``LogManager`` (a log dir's checkpoint files).
SPEC section 1 and the ``segment`` field of section 2 (paths relative to the PATH that found them).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kafka_audit.log import log_dir
from kafka_audit.log.discovery import Discovery, PartitionDir
from kafka_audit.log.log_dir import discover
from kafka_audit.log.log_names import (
    CLEANED,
    DELETED,
    LIVE,
    SWAP,
    parse_base_offset,
    parse_partition_dir,
    segment_state,
)
from tests.support.writer import BatchSpec, LogDirWriter, Producer, records

ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False
UUID = "5c2a1e7d9b3f4a6c8e0d2b4f6a8c0e1d"


def seg(offset: int, suffix: str = ".log") -> str:
    return f"{offset:020d}{suffix}"


def build_log_dir(root: Path, partitions: list[tuple[str, int]], *, node_id: int = 1, batches: int = 4, **options) -> LogDirWriter:
    """A broker log dir with ``batches`` small batches per partition, rolled every ~2 batches."""
    writer = LogDirWriter(root, node_id=node_id)
    for topic, number in partitions:
        w = writer.partition(topic, number, segment_bytes=options.get("segment_bytes", 400))
        producer = Producer(1000 + number, epoch=0)
        for _ in range(batches):
            producer.send(w, records([b"x" * 60] * 2))
    writer.close()
    return writer


def by_name(found: Discovery) -> dict[str, PartitionDir]:
    return {p.display_path: p for p in found.partitions}


def notes_about(found: Discovery, text: str) -> list[str]:
    return [n for n in found.notes if text in n]


def skipped_about(found: Discovery, text: str) -> list[str]:
    """The files skipped (``skipped_file``) whose path or reason holds ``text``, as "path: reason"."""
    return [line for s in found.skipped if text in (line := f"{s.display_path}: {s.reason}")]


def unreadable_about(found: Discovery, text: str) -> list[str]:
    """The segments found but not readable (``unreadable_segment``), as "path: reason"."""
    return [line for s in found.unreadable if text in (line := f"{s.display_path}: {s.reason}")]


# ---------------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,expected",
    [
        ("orders.eu-west-2", ("orders.eu-west", 2, LIVE)),
        ("a-b-c-10", ("a-b-c", 10, LIVE)),
        ("__consumer_offsets-49", ("__consumer_offsets", 49, LIVE)),
        ("__cluster_metadata-0", ("__cluster_metadata", 0, LIVE)),
        ("my_topic.v1-0", ("my_topic.v1", 0, LIVE)),
        (f"orders.eu-west-2.{UUID}-delete", ("orders.eu-west", 2, "delete")),
        (f"t-0.{UUID}-future", ("t", 0, "future")),
        (f"t-3.{UUID}-stray", ("t", 3, "stray")),
    ],
)
def test_partition_folder_names(name: str, expected: tuple) -> None:
    """parseTopicPartitionName: the partition is the digits after the last '-'; topics may hold
    '-' and '.'; delete/future/stray folders carry ``.<uniqueId>-<kind>``."""
    assert parse_partition_dir(name) == expected


@pytest.mark.parametrize("name", ["topic", "topic-", "topic-x", "-5", "logs", "topic-1a", "t-99999999999"])
def test_names_that_are_not_partition_folders(name: str) -> None:
    """No '-', an empty topic, or a partition that is not an int: not a partition folder."""
    assert parse_partition_dir(name) is None


@pytest.mark.parametrize(
    "name,expected",
    [
        (seg(0), 0),
        (seg(42), 42),
        (seg(42, ".log.deleted"), 42),
        (seg(7, ".index.swap"), 7),
        (seg(9, ".snapshot"), 9),
        (f"{9:020d}-Ab3_x-Yz.log", 9),  # a tiered-storage copy: <offset>-<segment id>.log
        ("42.log", None),
        ("server.log", None),
        ("0" * 21 + ".log", None),
        ("9" * 20 + ".log", None),  # above Long.MAX_VALUE
    ],
)
def test_base_offset_from_the_20_digit_file_name(name: str, expected: int | None) -> None:
    """LogFileUtils.offsetFromFileName: the 20-digit zero-padded base offset."""
    assert parse_base_offset(name) == expected


@pytest.mark.parametrize(
    "name,expected",
    [
        (seg(0), (LIVE, "")),
        (seg(0, ".log.deleted"), (DELETED, ".deleted")),
        (seg(0, ".log.cleaned"), (CLEANED, ".cleaned")),
        (seg(0, ".log.swap"), (SWAP, ".swap")),
        (seg(0, ".index"), None),
        (seg(0, ".index.deleted"), None),
        (seg(0, ".log.tmp"), None),
    ],
)
def test_segment_state_from_the_suffix(name: str, expected) -> None:
    assert segment_state(name) == expected


# ---------------------------------------------------------------------------------------------
# A broker log dir
# ---------------------------------------------------------------------------------------------


TOPICS = [("orders.eu-west", 2), ("a-b.c", 0), ("__consumer_offsets", 49), ("plain", 0), ("plain", 1)]


@pytest.fixture()
def broker(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    build_log_dir(root, TOPICS)
    return root


def test_broker_log_dir_with_several_topics(broker: Path) -> None:
    """Every <topic>-<partition> folder is found; topic and partition come from its name."""
    found = discover([str(broker)])
    assert [(p.topic, p.partition) for p in found.partitions] == sorted(TOPICS)
    assert all(p.kind == LIVE for p in found.partitions)
    assert found.notes == []
    orders = by_name(found)["orders.eu-west-2"]
    assert orders.name == "orders.eu-west-2"
    assert orders.path == os.path.realpath(broker / "orders.eu-west-2")
    assert found.segment_count == sum(len(p.segments) for p in found.partitions) >= 2 * len(TOPICS)


def test_segments_sorted_by_base_offset_with_display_paths_relative_to_the_path(broker: Path) -> None:
    """SPEC: ``segment`` is the path relative to the PATH that found it."""
    found = discover([str(broker)])
    orders = by_name(found)["orders.eu-west-2"]
    logs = sorted((broker / "orders.eu-west-2").glob("*.log"))
    assert [s.base_offset for s in orders.segments] == [int(f.name[:20]) for f in logs]
    assert [s.display_path for s in orders.segments] == [f"orders.eu-west-2/{f.name}" for f in logs]
    assert [s.path for s in orders.segments] == [str(f) for f in logs]
    assert all(s.state == LIVE for s in orders.segments)
    first = orders.segments[0]
    assert first.size == logs[0].stat().st_size
    assert first.mtime_ms == logs[0].stat().st_mtime_ns // 1_000_000


def test_sidecars_are_paired_with_their_segment(broker: Path) -> None:
    """``.index`` / ``.timeindex`` / ``.txnindex`` of the same base offset belong to the segment."""
    folder = broker / "plain-0"
    (folder / seg(0, ".txnindex")).write_bytes(b"")
    (folder / seg(0, ".index")).unlink()
    found = discover([str(broker)])
    first = by_name(found)["plain-0"].segments[0]
    assert first.index is None
    assert first.time_index == str(folder / seg(0, ".timeindex"))
    assert first.txn_index == str(folder / seg(0, ".txnindex"))
    second = by_name(found)["plain-0"].segments[1]
    assert second.index == str(folder / seg(second.base_offset, ".index")) and second.txn_index is None


def test_snapshots_are_listed_in_offset_order(broker: Path) -> None:
    found = discover([str(broker)])
    part = by_name(found)["plain-0"]
    on_disk = sorted(int(f.name[:20]) for f in (broker / "plain-0").glob("*.snapshot"))
    assert [s.offset for s in part.snapshots] == on_disk and len(on_disk) >= 2
    assert part.snapshots[0].display_path == f"plain-0/{seg(on_disk[0], '.snapshot')}"
    assert part.leader_epoch_checkpoint == str(broker / "plain-0" / "leader-epoch-checkpoint")


def test_log_start_offset_checkpoint_gives_the_checkpointed_log_start(tmp_path: Path) -> None:
    """LogManager loads ``log-start-offset-checkpoint`` of the partition's own log dir."""
    writer = LogDirWriter(tmp_path / "data")
    for topic, number in [("plain", 0), ("plain", 1)]:
        w = writer.partition(topic, number, segment_bytes=400)
        for _ in range(6):
            w.append(BatchSpec(records=records([b"y" * 60] * 2)))
    writer.partitions[("plain", 0)].delete_records(5)
    writer.close()
    found = discover([str(tmp_path)])
    starts = {p.name: p.checkpointed_log_start for p in found.partitions}
    assert starts == {"plain-0": 5, "plain-1": None}


def test_each_log_dir_has_its_own_log_start_checkpoint(tmp_path: Path) -> None:
    for node, start in ((1, 3), (2, 7)):
        writer = LogDirWriter(tmp_path / f"b{node}", node_id=node)
        w = writer.partition("t", 0)
        for _ in range(10):
            w.append(BatchSpec(records=records([b"z"])))
        w.delete_records(start)
        writer.close()
    found = discover([str(tmp_path)])
    assert {p.display_path: p.checkpointed_log_start for p in found.partitions} == {"b1/t-0": 3, "b2/t-0": 7}


def test_malformed_log_start_checkpoint_is_a_note(broker: Path) -> None:
    (broker / "log-start-offset-checkpoint").write_text("0\n1\nplain 0 five\n")
    found = discover([str(broker)])
    assert all(p.checkpointed_log_start is None for p in found.partitions)
    assert notes_about(found, "log-start-offset-checkpoint")


# ---------------------------------------------------------------------------------------------
# One partition folder, one .log file
# ---------------------------------------------------------------------------------------------


def test_one_partition_folder_given_directly(broker: Path) -> None:
    """A partition folder as PATH: its display path is the PATH, segments are relative to it."""
    folder = broker / "orders.eu-west-2"
    found = discover([str(folder)])
    (part,) = found.partitions
    assert (part.topic, part.partition, part.display_path) == ("orders.eu-west", 2, str(folder))
    assert [s.display_path for s in part.segments] == sorted(f.name for f in folder.glob("*.log"))
    assert part.snapshots and part.snapshots[0].display_path.endswith(".snapshot")
    assert "/" not in part.snapshots[0].display_path
    assert found.notes == []


def test_one_log_file_given_directly(broker: Path) -> None:
    """A .log file as PATH: one segment, topic and partition from its folder, sidecars paired,
    the display path as given."""
    path = broker / "orders.eu-west-2" / seg(0)
    found = discover([str(path)])
    (part,) = found.partitions
    assert (part.topic, part.partition) == ("orders.eu-west", 2)
    (segment,) = part.segments
    assert segment.display_path == str(path) and segment.base_offset == 0
    assert segment.index == str(broker / "orders.eu-west-2" / seg(0, ".index"))
    assert segment.time_index == str(broker / "orders.eu-west-2" / seg(0, ".timeindex"))
    assert found.notes == []


def test_relative_paths_are_displayed_as_given(broker: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(broker.parent)
    found = discover([f"data/plain-1/{seg(0)}"])
    assert found.partitions[0].segments[0].display_path == f"data/plain-1/{seg(0)}"
    found = discover(["data"])
    assert by_name(found)["plain-1"].segments[0].display_path == f"plain-1/{seg(0)}"


def test_a_sidecar_given_as_path_is_a_skipped_file(broker: Path) -> None:
    found = discover([str(broker / "plain-0" / seg(0, ".index"))])
    assert found.partitions == [] and skipped_about(found, "sidecar file")


# ---------------------------------------------------------------------------------------------
# Two log dirs: replicas kept apart
# ---------------------------------------------------------------------------------------------


def test_two_log_dirs_in_one_tree_keep_replicas_apart(tmp_path: Path) -> None:
    """Two brokers' copies of the same partition are two PartitionDirs with different keys."""
    build_log_dir(tmp_path / "broker1" / "data", [("plain", 0)], node_id=1)
    build_log_dir(tmp_path / "broker2" / "data", [("plain", 0)], node_id=2, batches=6)
    found = discover([str(tmp_path)])
    assert [p.display_path for p in found.partitions] == ["broker1/data/plain-0", "broker2/data/plain-0"]
    first, second = found.partitions
    assert first.key != second.key and first.name == second.name
    assert all(s.display_path.startswith("broker1/") for s in first.segments)
    assert all(s.display_path.startswith("broker2/") for s in second.segments)
    assert len(second.segments) > len(first.segments)


def test_two_log_dirs_given_as_two_paths_keep_replicas_apart(tmp_path: Path) -> None:
    """``scan broker1/data broker2/data``: relative to each PATH both replicas would be
    ``plain-0``; their keys (and segment display paths) must still differ."""
    build_log_dir(tmp_path / "broker1" / "data", [("plain", 0), ("solo", 0)], node_id=1)
    build_log_dir(tmp_path / "broker2" / "data", [("plain", 0)], node_id=2)
    found = discover([str(tmp_path / "broker1" / "data"), str(tmp_path / "broker2" / "data")])
    plain = [p for p in found.partitions if p.topic == "plain"]
    assert len(plain) == 2 and plain[0].key != plain[1].key
    seg_paths = [s.display_path for p in plain for s in p.segments]
    assert len(seg_paths) == len(set(seg_paths))
    assert len({p.key for p in found.partitions}) == len(found.partitions)
    solo = next(p for p in found.partitions if p.topic == "solo")
    assert solo.display_path == "solo-0"  # no clash, still relative to its PATH


# ---------------------------------------------------------------------------------------------
# -delete / -future / -stray folders and segment states
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["delete", "future", "stray"])
def test_special_partition_folders(broker: Path, kind: str) -> None:
    """A topic being deleted, a replica moving between log dirs, a KRaft stray: audited, with
    the kind; a -delete folder's segments are being deleted."""
    special = broker / f"plain-0.{UUID}-{kind}"
    shutil.copytree(broker / "plain-0", special)
    found = discover([str(broker)])
    part = by_name(found)[special.name]
    assert (part.topic, part.partition, part.kind) == ("plain", 0, kind)
    assert part.key != by_name(found)["plain-0"].key
    expected = DELETED if kind == "delete" else LIVE
    assert part.segments and all(s.state == expected for s in part.segments)
    assert found.notes == []


def test_deleted_cleaned_and_swap_segments_are_audited_with_their_state(broker: Path) -> None:
    """``.log.deleted`` (retention), ``.log.cleaned`` / ``.log.swap`` (log cleaner) are segments
    too, marked as such, with the sidecars of the same suffix."""
    folder = broker / "plain-1"
    data = (folder / seg(0)).read_bytes()
    (folder / seg(0)).rename(folder / seg(0, ".log.deleted"))
    (folder / seg(0, ".index")).rename(folder / seg(0, ".index.deleted"))
    (folder / seg(0, ".timeindex")).rename(folder / seg(0, ".timeindex.deleted"))
    (folder / seg(900, ".log.cleaned")).write_bytes(data)
    (folder / seg(900, ".index.cleaned")).write_bytes(b"")
    (folder / seg(950, ".log.swap")).write_bytes(data)
    (folder / seg(950, ".timeindex.swap")).write_bytes(b"")
    (folder / seg(950, ".txnindex.swap")).write_bytes(b"")
    found = discover([str(broker)])
    segments = {s.base_offset: s for s in by_name(found)["plain-1"].segments}
    deleted = segments[0]
    assert deleted.state == DELETED and deleted.display_path == f"plain-1/{seg(0, '.log.deleted')}"
    assert deleted.index == str(folder / seg(0, ".index.deleted"))
    assert deleted.time_index == str(folder / seg(0, ".timeindex.deleted"))
    cleaned, swap = segments[900], segments[950]
    assert cleaned.state == CLEANED and cleaned.index == str(folder / seg(900, ".index.cleaned"))
    assert cleaned.time_index is None
    assert swap.state == SWAP and swap.index is None
    assert swap.time_index == str(folder / seg(950, ".timeindex.swap"))
    assert swap.txn_index == str(folder / seg(950, ".txnindex.swap"))
    assert found.notes == []


def test_live_segment_sorts_before_a_deleted_one_of_the_same_base_offset(broker: Path) -> None:
    folder = broker / "plain-0"
    shutil.copy(folder / seg(0), folder / seg(0, ".log.deleted"))
    found = discover([str(broker)])
    states = [(s.base_offset, s.state) for s in by_name(found)["plain-0"].segments][:2]
    assert states == [(0, LIVE), (0, DELETED)]


def test_sidecars_left_behind_by_retention_are_not_segments_and_not_noted(broker: Path) -> None:
    """Retention deletes the .log first; ``*.index.deleted`` alone is a known leftover."""
    folder = broker / "plain-0"
    (folder / seg(500, ".index.deleted")).write_bytes(b"")
    (folder / seg(500, ".timeindex.deleted")).write_bytes(b"")
    (folder / seg(500, ".snapshot.deleted")).write_bytes(b"")
    found = discover([str(broker)])
    assert 500 not in {s.base_offset for s in by_name(found)["plain-0"].segments}
    assert 500 not in {s.offset for s in by_name(found)["plain-0"].snapshots}
    assert found.notes == []


# ---------------------------------------------------------------------------------------------
# Files that are not segments
# ---------------------------------------------------------------------------------------------


def test_application_log_of_a_broker_is_a_skipped_file(tmp_path: Path) -> None:
    """``logs/server.log`` beside the data dir is not a segment: a skipped file."""
    build_log_dir(tmp_path / "kafka" / "data", [("t", 0)])
    (tmp_path / "kafka" / "logs").mkdir()
    (tmp_path / "kafka" / "logs" / "server.log").write_text("[2023-11-14 22:13:20,000] INFO started\n")
    found = discover([str(tmp_path)])
    assert [p.name for p in found.partitions] == ["t-0"]
    assert len(skipped_about(found, "server.log")) == 1
    assert "kafka/logs/server.log" in skipped_about(found, "server.log")[0]


def test_log_without_a_20_digit_name_is_a_skipped_file(broker: Path) -> None:
    (broker / "plain-0" / "42.log").write_bytes(b"")
    (broker / "plain-0" / "copy of segment.log").write_bytes(b"")
    found = discover([str(broker)])
    assert len(skipped_about(found, "42.log")) == 1 and len(skipped_about(found, "copy of segment.log")) == 1
    assert all(s.base_offset != 42 for s in by_name(found)["plain-0"].segments)


def test_random_files_in_a_partition_folder_are_skipped_files(broker: Path) -> None:
    (broker / "plain-0" / "notes.txt").write_text("hello")
    (broker / "plain-0" / "00000000000000000000.log.bak").write_bytes(b"")
    found = discover([str(broker)])
    assert len(skipped_about(found, "plain-0/notes.txt")) == 1
    assert len(skipped_about(found, "00000000000000000000.log.bak")) == 1
    assert found.unreadable == []


def test_known_kafka_files_are_not_noted(broker: Path) -> None:
    """partition.metadata, leader-epoch-checkpoint, .lock, bootstrap.checkpoint, meta.properties,
    the offset checkpoints, KRaft's quorum-state and snapshot checkpoints: no note."""
    (broker / ".lock").write_bytes(b"")
    (broker / "bootstrap.checkpoint").write_bytes(b"\x00" * 30)
    (broker / "cleaner-offset-checkpoint").write_bytes(b"")
    metadata = broker / "__cluster_metadata-0"
    shutil.copytree(broker / "plain-0", metadata)
    (metadata / "quorum-state").write_text('{"leaderId":1}')
    (metadata / "00000000000000000004-0000000001.checkpoint").write_bytes(b"")
    (metadata / "00000000000000000002-0000000001.checkpoint.deleted").write_bytes(b"")
    (metadata / "00000000000000000006-0000000001.checkpoint.part").write_bytes(b"")
    for name in ("partition.metadata", "leader-epoch-checkpoint"):
        assert (broker / "plain-1" / name).exists()
    found = discover([str(broker)])
    assert found.notes == []
    assert by_name(found)["__cluster_metadata-0"].segments


def test_index_of_a_cleaner_swap_is_a_known_file(broker: Path) -> None:
    """``.index.swap`` / ``.timeindex.cleaned`` are the log cleaner's sidecars, not junk."""
    folder = broker / "plain-0"
    (folder / seg(300, ".index.swap")).write_bytes(b"")
    (folder / seg(300, ".timeindex.cleaned")).write_bytes(b"")
    (folder / seg(300, ".txnindex.swap")).write_bytes(b"")
    assert discover([str(broker)]).notes == []


def test_folder_not_named_topic_partition_is_audited_as_partition_minus_one(broker: Path) -> None:
    """Segments in a folder whose name is not <topic>-<partition>: topic = folder name,
    partition -1, and a note naming the folder relative to the PATH."""
    odd = broker.parent / "evidence" / "copied"
    odd.mkdir(parents=True)
    shutil.copy(broker / "plain-0" / seg(0), odd / seg(0))
    found = discover([str(broker.parent)])
    part = by_name(found)["evidence/copied"]
    assert (part.topic, part.partition) == ("copied", -1)
    assert [s.display_path for s in part.segments] == [f"evidence/copied/{seg(0)}"]
    (note,) = notes_about(found, "not <topic>-<partition>")
    assert "evidence/copied" in note and str(broker.parent) not in note


# ---------------------------------------------------------------------------------------------
# --topic / --partition
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "topics,partitions,expected",
    [
        (["orders.eu-west"], None, [("orders.eu-west", 2)]),
        (["plain"], None, [("plain", 0), ("plain", 1)]),
        (None, [1], [("plain", 1)]),
        (None, [0], [("a-b.c", 0), ("plain", 0)]),
        (None, [49, 2], [("__consumer_offsets", 49), ("orders.eu-west", 2)]),
        (["plain", "a-b.c"], [0], [("a-b.c", 0), ("plain", 0)]),
        (["orders.eu"], None, []),  # a prefix of a topic is not the topic
        (["plain"], [7], []),
    ],
)
def test_topic_and_partition_filters(broker: Path, topics, partitions, expected) -> None:
    found = discover([str(broker)], topics=topics, partitions=partitions)
    assert [(p.topic, p.partition) for p in found.partitions] == expected


def test_filters_apply_to_special_folders_and_single_files(broker: Path) -> None:
    shutil.copytree(broker / "plain-0", broker / f"plain-0.{UUID}-delete")
    found = discover([str(broker)], topics=["plain"], partitions=[0])
    assert sorted(p.kind for p in found.partitions) == ["delete", LIVE]
    assert discover([str(broker / "plain-0" / seg(0))], topics=["other"]).partitions == []


# ---------------------------------------------------------------------------------------------
# Overlaps, links, unreadable and missing paths
# ---------------------------------------------------------------------------------------------


def _segment_paths(found: Discovery) -> list[str]:
    return [s.path for p in found.partitions for s in p.segments]


@pytest.mark.parametrize("order", ["outer-first", "inner-first", "same-twice"])
def test_the_same_folder_reached_twice_is_audited_once(broker: Path, order: str) -> None:
    outer, inner = str(broker), str(broker / "plain-0")
    paths = {"outer-first": [outer, inner], "inner-first": [inner, outer], "same-twice": [outer, outer]}[order]
    found = discover(paths)
    assert [(p.topic, p.partition) for p in found.partitions] == sorted(TOPICS)
    segments = _segment_paths(found)
    assert len(segments) == len(set(segments)) == len(list(broker.glob("*/*.log")))


def test_a_symlink_to_a_folder_already_scanned_is_audited_once(broker: Path) -> None:
    os.symlink(broker / "plain-0", broker / "zz-link")
    found = discover([str(broker)])
    assert [p.name for p in found.partitions].count("plain-0") == 1
    segments = _segment_paths(found)
    assert len(segments) == len(set(map(os.path.realpath, segments)))
    assert skipped_about(found, "zz-link")


def test_a_symlinked_path_and_its_target_are_audited_once(broker: Path, tmp_path: Path) -> None:
    link = tmp_path / "alias"
    os.symlink(broker, link)
    found = discover([str(broker), str(link)])
    assert len(found.partitions) == len(TOPICS)
    found = discover([str(broker / "plain-0" / seg(0)), str(link / "plain-0" / seg(0))])
    assert len(_segment_paths(found)) == 1


def test_a_symlink_loop_terminates_with_a_skipped_file(broker: Path) -> None:
    os.symlink(broker, broker / "plain-0" / "loop")
    os.symlink("self", broker / "plain-1" / "self")  # ELOOP
    found = discover([str(broker)])
    assert len(found.partitions) == len(TOPICS)
    assert skipped_about(found, "plain-0/loop")
    assert skipped_about(found, "plain-1/self")


def test_a_broken_symlink_named_like_a_segment_is_an_unreadable_segment(broker: Path) -> None:
    os.symlink(broker / "nowhere", broker / "plain-0" / seg(999))
    os.symlink(broker / "nowhere", broker / "plain-0" / "notes.txt")
    found = discover([str(broker)])
    (unreadable,) = found.unreadable
    assert unreadable.display_path == f"plain-0/{seg(999)}" and "broken symbolic link" in unreadable.reason
    assert (unreadable.topic, unreadable.partition, unreadable.base_offset) == ("plain", 0, 999)
    assert skipped_about(found, "plain-0/notes.txt: broken symbolic link")
    assert 999 not in {s.base_offset for s in by_name(found)["plain-0"].segments}


def test_a_symlinked_segment_file_is_audited(broker: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "stash"
    elsewhere.mkdir()
    shutil.move(str(broker / "plain-1" / seg(0)), elsewhere / seg(0))
    os.symlink(elsewhere / seg(0), broker / "plain-1" / seg(0))
    found = discover([str(broker)])
    first = by_name(found)["plain-1"].segments[0]
    assert first.base_offset == 0 and first.display_path == f"plain-1/{seg(0)}"


@pytest.mark.skipif(ROOT, reason="root lists folders whatever their mode")
def test_an_unreadable_folder_is_an_unreadable_segment(broker: Path) -> None:
    locked = broker / "plain-1"
    locked.chmod(0)
    try:
        found = discover([str(broker)])
    finally:
        locked.chmod(0o755)
    assert "plain-1" not in by_name(found)
    assert unreadable_about(found, "plain-1")


def test_a_folder_that_cannot_be_listed_is_an_unreadable_segment(broker: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same as an unreadable folder, for a run as root: listing raises PermissionError."""
    real_scandir = os.scandir

    def scandir(path):
        if os.path.basename(os.fspath(path)) == "plain-1":
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(log_dir.os, "scandir", scandir)
    found = discover([str(broker)])
    assert "plain-1" not in by_name(found)
    (line,) = unreadable_about(found, "plain-1")
    assert line == "plain-1: cannot list the folder (Permission denied)"
    assert "plain-0" in by_name(found)


def test_a_path_that_does_not_exist_is_a_skipped_file(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    found = discover([str(missing)])
    assert found.partitions == [] and found.segment_count == 0
    (skipped,) = found.skipped
    assert skipped.display_path == str(missing) and skipped.reason == "No such file or directory"


def test_a_missing_path_does_not_stop_the_others(broker: Path, tmp_path: Path) -> None:
    found = discover([str(tmp_path / "gone"), str(broker)])
    assert len(found.partitions) == len(TOPICS) and len(found.skipped) == 1
    assert found.paths == [str(tmp_path / "gone"), str(broker)]


def test_an_empty_folder_finds_nothing_quietly(tmp_path: Path) -> None:
    found = discover([str(tmp_path)])
    assert found.partitions == [] and found.notes == []
