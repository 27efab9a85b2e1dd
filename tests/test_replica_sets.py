"""Replica sets written by the fixture writer (tests/support/writer.write_replica_sets), one topic
per case Kafka's fetcher tests cover, all in the same two brokers' log dirs: what each case gives,
on both engines."""

from __future__ import annotations

import json

import pytest

from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.engines.local import audit_in_process
from kafka_audit.log.log_dir import discover
from tests.support.writer import NO_CHECKPOINT, ReplicaSpec, write_replica_sets
from tests.test_cli import cli, shared_session  # noqa: F401  (the suite's shared Spark session)


def _values(tag: str, count: int, epoch: int = 0) -> list[tuple[int, str]]:
    return [(epoch, f"{tag}{i}") for i in range(count)]


def _diverged(hw: int | None, epochs=None) -> list[ReplicaSpec]:
    """Broker 1 led epoch 1 from offset 5 (kept); broker 2 took offsets 5-6 at epoch 0 that broker 1
    never had (an acks=1 leader that crashed)."""
    return [
        ReplicaSpec(1, _values("a", 5) + _values("b", 3, epoch=1), leader_epochs=epochs),
        ReplicaSpec(2, _values("a", 5) + _values("z", 2), high_watermark=hw, leader_epochs=epochs),
    ]


CASES: dict[str, list[ReplicaSpec]] = {
    "lag": [ReplicaSpec(1, _values("a", 10)), ReplicaSpec(2, _values("a", 6))],
    "truncation-above-hw": _diverged(hw=5),
    "truncation-below-hw": _diverged(hw=7),
    # A leader elected during the shutdown: a trailing checkpoint entry with no data behind it.
    "shutdown-election": [ReplicaSpec(1, _values("a", 5), leader_epochs=[(0, 0), (1, 5)]), ReplicaSpec(2, _values("a", 5))],
    # KIP-279: the lineages share epoch 1 only; broker 2's epochs 2 and 4 are its own.
    "kip-279": [
        ReplicaSpec(1, [(1, "a0"), (1, "a1"), (3, "b2"), (3, "b3"), (5, "b4")]),
        ReplicaSpec(2, [(1, "a0"), (1, "a1"), (2, "c2"), (2, "c3"), (4, "c4")]),
    ],
    "no-checkpoints": _diverged(hw=7, epochs=NO_CHECKPOINT),
    # Empty checkpoint files: the batches' epochs stand for them, as for missing ones.
    "empty-checkpoints": _diverged(hw=7, epochs=[]),
    # Each cleaner ran on its own clock: offsets below both checkpoints are not compared.
    "compacted": [
        ReplicaSpec(1, _values("a", 10), removed=frozenset({1, 2, 4}), cleaner_offset=6),
        ReplicaSpec(2, _values("a", 10), cleaner_offset=3),
    ],
    "retention": [ReplicaSpec(1, _values("a", 9), roll_every=3, delete_segments=1), ReplicaSpec(2, _values("a", 9))],
    "rolls": [ReplicaSpec(1, _values("a", 9), roll_every=2), ReplicaSpec(2, _values("a", 9), roll_every=3)],
}

# (check, severity, node, offset, details) per topic, the case's story told by hand.
EXPECTED = {
    "lag": [("replica_lag", "info", 2, 6, {"behind": 4, "log_end_offset": 6})],
    "truncation-above-hw": [
        ("replica_divergence", "error", None, 5, {"diverged_at": 5}),
        ("replica_truncation", "warning", 2, 5, {"truncate_to": 5, "records": 2, "last_offset": 6, "below_high_watermark": False}),
    ],
    "truncation-below-hw": [
        ("replica_divergence", "error", None, 5, {"diverged_at": 5}),
        ("replica_truncation", "error", 2, 5, {"truncate_to": 5, "records": 2, "last_offset": 6, "below_high_watermark": True}),
    ],
    "shutdown-election": [],
    "kip-279": [
        ("replica_divergence", "error", None, 2, {"diverged_at": 2}),
        ("replica_truncation", "error", 2, 2, {"truncate_to": 2, "records": 3, "leader_epochs": [2, 4]}),
    ],
    "no-checkpoints": [
        ("replica_divergence", "error", None, 5, {"diverged_at": 5}),
        ("replica_truncation", "error", 2, 5, {"truncate_to": 5, "records": 2, "below_high_watermark": True}),
    ],
    "empty-checkpoints": [
        ("replica_divergence", "error", None, 5, {"diverged_at": 5}),
        ("replica_truncation", "error", 2, 5, {"truncate_to": 5, "records": 2, "below_high_watermark": True}),
    ],
    "compacted": [],
    "retention": [],
    "rolls": [],
}


@pytest.fixture(scope="module")
def brokers(tmp_path_factory) -> list[str]:
    return [str(d) for d in write_replica_sets(tmp_path_factory.mktemp("replica-sets"), CASES)]


def _told(findings: list[dict], topic: str) -> list[tuple]:
    rows = []
    for f in sorted((f for f in findings if f["topic"] == topic), key=lambda f: (f["check"], f["details"].get("node_id") or 0)):
        wanted = dict(EXPECTED[topic][len(rows)][4]) if len(rows) < len(EXPECTED[topic]) else {}
        rows.append((f["check"], f["severity"], f["details"].get("node_id"), f["offset"],
                     {k: f["details"].get(k) for k in wanted}))
    return rows


@pytest.mark.parametrize("topic", sorted(CASES))
def test_each_case(brokers, topic):
    result = audit_in_process(discover(brokers), ScanOptions())
    findings = [f.to_dict() for f in result.findings]
    assert _told(findings, topic) == EXPECTED[topic]
    for f in findings:
        if f["topic"] == topic:
            assert f["details"]["kept_replica"] == 1
            assert [r["node_id"] for r in f["details"]["replicas"]] == [1, 2]


def test_no_other_findings_and_one_set_per_topic(brokers):
    result = audit_in_process(discover(brokers), ScanOptions())
    assert {f.check for f in result.findings} <= {"replica_divergence", "replica_truncation", "replica_lag"}
    assert result.summary["replica_sets"] == len(CASES)
    assert result.summary["replica_sets_without_meta_properties"] == 0


def test_fingerprints_include_the_node(tmp_path):
    """Two followers truncating the same records give two findings with two fingerprints."""
    dirs = write_replica_sets(tmp_path, {"t": [*_diverged(hw=7), ReplicaSpec(3, _values("a", 5) + _values("z", 2))]})
    result = audit_in_process(discover([str(d) for d in dirs]), ScanOptions())
    truncations = [f for f in result.findings if f.check == "replica_truncation"]
    assert sorted(f.details["node_id"] for f in truncations) == [2, 3]
    assert len({f.fingerprint for f in truncations}) == 2


def test_log_dirs_without_meta_properties_compare_as_one_cluster(tmp_path):
    dirs = write_replica_sets(tmp_path, {"lag": CASES["lag"]})
    for d in dirs:
        (d / "meta.properties").unlink()
    result = audit_in_process(discover([str(d) for d in dirs]), ScanOptions())
    (lag,) = [f for f in result.findings if f.check == "replica_lag"]
    assert lag.details["node_id"] == str(dirs[1]) and lag.details["kept_replica"] == str(dirs[0])
    assert result.summary["replica_sets_without_meta_properties"] == 1


@pytest.mark.spark
def test_engine_parity(cli, brokers):  # noqa: F811
    out = cli("scan", *brokers, "--format", "json", "--quiet", "--fail-on", "never")
    assert out.exit_code == 0, out.stdout
    findings = json.loads(out.stdout)["findings"]
    for topic in CASES:
        assert _told(findings, topic) == EXPECTED[topic], topic


def test_a_finding_alike_on_both_replicas_is_reported_once_with_its_nodes(tmp_path):
    """An offset gap both brokers hold (offset 3 missing, a topic that is not compacted) is one
    finding naming both nodes, not two under one fingerprint."""
    gap = frozenset({3})
    dirs = write_replica_sets(tmp_path, {"t": [ReplicaSpec(1, _values("a", 6), removed=gap), ReplicaSpec(2, _values("a", 6), removed=gap)]})
    result = audit_in_process(discover([str(d) for d in dirs]), ScanOptions())
    (gap_finding,) = [f for f in result.findings if f.check == "offset_gap"]
    assert gap_finding.details["node_ids"] == [1, 2]
    assert not [f for f in result.findings if f.check.startswith("replica_")]


def test_producers_side_by_side_where_replicas_differ(tmp_path):
    """An idempotent producer whose last batches only broker 2 holds: its producers row on each
    replica, with the node; the kept replica's counted first."""
    sets = {"t": [ReplicaSpec(1, _values("a", 5) + _values("b", 3, epoch=1), producer_id=7),
                  ReplicaSpec(2, _values("a", 5) + _values("z", 2), high_watermark=7, producer_id=7)],
            "same": [ReplicaSpec(1, _values("a", 4), producer_id=8), ReplicaSpec(2, _values("a", 4), producer_id=8)]}
    dirs = write_replica_sets(tmp_path, sets)
    result = audit_in_process(discover([str(d) for d in dirs]), ScanOptions())
    rows = [(r["topic"], r.get("node_id"), r["last_offset"], r["records"]) for r in result.producers]
    assert rows == [("same", None, 3, 4), ("t", 1, 7, 8), ("t", 2, 6, 7)]
    (truncation,) = [f for f in result.findings if f.check == "replica_truncation"]
    assert truncation.details["producer_ids"] == [7]
