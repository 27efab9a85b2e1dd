"""The real 3-broker Kafka 4.2.1 cluster's log dirs (corpus/real-broker-replicas), scanned as a user
would with the three broker dirs as PATHs: exactly the findings its README names, on both engines."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.engines.local import audit_in_process
from kafka_audit.log.log_dir import discover
from tests.support.audit_run import corpus_dir
from tests.test_cli import cli, shared_session  # noqa: F401  (the suite's shared Spark session)


def _brokers(cluster: str) -> list[str]:
    return [str(corpus_dir("real-broker-replicas") / cluster / f"broker-{n}") for n in (1, 2, 3)]


def _scan(cluster: str):
    return audit_in_process(discover(_brokers(cluster)), ScanOptions())


def _replica_facts(findings: list[dict]) -> list[tuple]:
    """(check, severity, topic, partition, kept, node, truncate_to, records, below hw, behind) per replica_* finding."""
    return sorted(
        (f["check"], f["severity"], f["topic"], f["partition"], f["details"]["kept_replica"], f["details"].get("node_id"),
         f["details"].get("truncate_to", f["details"].get("diverged_at")), f["details"].get("records"),
         f["details"].get("below_high_watermark"), f["details"].get("behind"))
        for f in findings
        if f["check"].startswith("replica_")
    )


# README, unclean-election: divergence at 300 kept broker 3 in events-0/1; brokers 1 (300 records,
# hw 600) and 2 (200 records, hw 500) truncate below their high watermark; events-clean-0: 2 lags.
UNCLEAN = sorted(
    [
        *(("replica_divergence", "error", "events", p, 3, None, 300, None, None, None) for p in (0, 1)),
        *(("replica_truncation", "error", "events", p, 3, 1, 300, 300, True, None) for p in (0, 1)),
        *(("replica_truncation", "error", "events", p, 3, 2, 300, 200, True, None) for p in (0, 1)),
        ("replica_lag", "info", "events-clean", 0, 1, 2, None, None, None, 100),
        ("replica_lag", "info", "events-clean", 0, 1, 3, None, None, None, 300),
    ]
)


def test_broker_dirs_are_log_dirs_not_partitions():
    """``broker-1`` holds meta.properties: a log dir, not partition 1 of topic ``broker``; its
    ``.kafka_cleanshutdown`` is no skipped file of a partition."""
    found = discover(_brokers("unclean-election"))
    assert "broker" not in {p.topic for p in found.partitions}
    assert found.skipped == []
    events = [p for p in found.partitions if p.topic == "events" and p.partition == 0]
    assert sorted((p.broker.node_id, p.broker.high_watermark) for p in events) == [(1, 600), (2, 500), (3, 450)]
    assert {p.broker.cluster_id for p in found.partitions} == {"zA5auiiKTRem6iAQnPfW6A"}


def test_unclean_election_findings():
    result = _scan("unclean-election")
    findings = [f.to_dict() for f in result.findings]
    assert _replica_facts(findings) == UNCLEAN
    assert {f["check"] for f in findings} <= {"replica_divergence", "replica_truncation", "replica_lag"}
    assert result.summary["replica_sets"] == 3
    truncations = [f for f in findings if f["check"] == "replica_truncation"]
    for f in truncations:
        d = f["details"]
        assert d["first_offset"] == d["truncate_to"] == 300 and d["last_offset"] == 300 + d["records"] - 1
        assert sorted(r["node_id"] for r in d["replicas"]) == [1, 2, 3]
        assert set(d["remedy"]) == {"summary", "commands", "loses", "references"}
        assert "kafka-audit dump" in d["remedy"]["commands"][0] and f"broker-{d['node_id']}" in d["remedy"]["commands"][0]
    hw = {(f["partition"], f["details"]["node_id"]): next(
        r["high_watermark"] for r in f["details"]["replicas"] if r["node_id"] == f["details"]["node_id"]) for f in truncations}
    assert hw == {(0, 1): 600, (0, 2): 500, (1, 1): 600, (1, 2): 500}
    assert len({f["fingerprint"] for f in findings}) == len(findings)


def test_healthy_rf3_counts_once():
    """README: no replica_* finding and no error; 21 committed and 7 aborted transactions, not 3x."""
    result = _scan("healthy-rf3")
    assert not [f for f in result.findings if f.check.startswith("replica_") or f.severity == "error"]
    assert result.summary["transactions"] == {"committed": 21, "aborted": 7, "open": 0}
    assert result.summary["replica_sets"] == 9
    assert len({(row["topic"], row["partition"], row["producer_id"]) for row in result.producers}) == len(result.producers)


@pytest.mark.spark
@pytest.mark.parametrize("cluster", ["unclean-election", "healthy-rf3"])
def test_both_clusters_on_spark(cli, cluster):  # noqa: F811
    """The Spark engine gives the same findings and counts as the in-process audit."""
    out = cli("scan", *_brokers(cluster), "--format", "json", "--quiet", "--fail-on", "never")
    assert out.exit_code == 0, out.stdout
    report = json.loads(out.stdout)
    local = _scan(cluster)
    assert _replica_facts(report["findings"]) == _replica_facts([f.to_dict() for f in local.findings])
    assert Counter(f["check"] for f in report["findings"]) == Counter(f.check for f in local.findings)
    assert report["summary"]["transactions"] == local.summary["transactions"]
    assert report["summary"]["engine"] == "spark"
