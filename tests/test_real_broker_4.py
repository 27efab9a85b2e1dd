"""The real Kafka 4.2.1 broker's log dirs (shared/corpus/real-broker-4: KRaft, transactions v2):
each scanned with no flags gives exactly the findings its README names, and Kafka 4's normal
operation (KRaft control batches of several records, a TV2 epoch bump at every transaction end)
none. The README's transcript of the history (offsets and epochs of every marker) is what the
tests check the replay's reading against."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.engines.local import audit_in_process
from kafka_audit.log.log_dir import discover
from tests.support.audit_run import corpus_dir, scan
from tests.test_cli import cli, shared_session  # noqa: F401  (the suite's shared Spark session)


def _data(name: str):
    return corpus_dir("real-broker-4") / name / "data"


def _by_check(result) -> dict[str, int]:
    return dict(Counter(f.check for f in result.findings))


def test_tv2_transactions_only_the_fencing():
    """README: no error, no warning; one epoch_bump (fenced) per tv2-a partition for the third
    instance's InitProducerId (ABORT at epoch 7 of the transaction open at epoch 6, the new
    instance at 8: the +2 jump, one fencing); nothing for the 12 ordinary TV2 ends per partition,
    nor for the 2 in __consumer_offsets-3."""
    result = scan(_data("tv2-transactions"))
    assert _by_check(result) == {"epoch_bump": 2}
    fencings = sorted((f.topic, f.partition, f.offset, f.producer_id, f.producer_epoch) for f in result.findings)
    assert fencings == [("tv2-a", 0, 33, 1, 7), ("tv2-a", 1, 29, 1, 7)]
    for f in result.findings:
        assert f.details["reason"] == "fenced" and f.client_outcome == "fatal"
        assert f.details["previous_epoch"] == 6 and f.details["new_instance_epoch"] == 8
        assert f.details["open_transaction_aborted"] is True
        assert f.details["transaction_version"] == 2 and "4.x" in f.details["broker_rule"]
        assert f.transactional_id == "tv2-a-main"


def test_tv2_transactions_timeline_holds_every_transaction_end():
    """Each ordinary TV2 end is an epoch_bump timeline event (reason transaction end): producer 0's
    markers at 2, 5, 8, 11 and producer 1's at 14, 17, 21, 24, 27, 31, 36, 39 in tv2-a-0."""
    result = audit_in_process(discover([str(_data("tv2-transactions"))]), ScanOptions(timeline=True))
    ends = sorted(
        (e.producer_id, e.offset, e.producer_epoch)
        for e in result.events
        if e.kind == "epoch_bump" and e.topic == "tv2-a" and e.partition == 0 and e.message.endswith("(transaction end)")
    )
    assert ends == [(0, 2, 1), (0, 5, 2), (0, 8, 3), (0, 11, 4)] + [
        (1, 14, 1), (1, 17, 2), (1, 21, 3), (1, 24, 4), (1, 27, 5), (1, 31, 6), (1, 36, 9), (1, 39, 10)
    ]


@pytest.mark.parametrize("partition", ["tv2-a-0", "tv2-a-1"])
def test_tv2_recognised_from_the_log_alone(partition):
    """Without __transaction_state the version is read from the log (COMMIT at the data epoch + 1):
    the same one fencing."""
    result = scan(_data("tv2-transactions") / partition)
    assert [(f.check, f.details["reason"], f.details["transaction_version"]) for f in result.findings] == [
        ("epoch_bump", "fenced", 2)
    ]


def test_idempotent_4x_is_clean():
    """README: five idempotent producers (every codec) on idem-d: no finding at all."""
    result = scan(_data("idempotent-4x"))
    assert _by_check(result) == {}


def test_kraft_metadata_log_of_kafka_4_is_clean():
    """The metadata log's first batch is LeaderChange, KRaftVersion and KRaftVoters in one control
    batch: normal for kraft.version 1 (no invalid_control_batch)."""
    result = scan(_data("idempotent-4x") / "__cluster_metadata-0")
    assert _by_check(result) == {}


@pytest.mark.spark
def test_consumer_group_848_is_clean_on_spark(cli):  # noqa: F811
    """README: a KIP-848 group, a classic group and an idempotent producer: no finding at all,
    through the default (Spark) engine, no flags."""
    out = cli("scan", _data("consumer-group-848"), "--format", "json", "--quiet")
    assert out.exit_code == 0, out.stdout
    assert json.loads(out.stdout)["summary"]["findings_by_check"] == {}


@pytest.mark.spark
def test_tv2_transactions_on_spark(cli):  # noqa: F811
    """The executors judge with the coordinator's facts the driver read: the same two fencings."""
    out = cli("scan", _data("tv2-transactions"), "--format", "json", "--quiet")
    assert out.exit_code == 0, out.stdout
    findings = json.loads(out.stdout)["findings"]
    assert [(f["partition"], f["offset"], f["details"]["reason"], f["details"]["transaction_version_from"]) for f in findings] == [
        (0, 33, "fenced", "__transaction_state"),
        (1, 29, "fenced", "__transaction_state"),
    ]


def test_consumer_group_848_is_clean():
    result = scan(_data("consumer-group-848"))
    assert _by_check(result) == {}


def test_log_dirs_of_two_clusters_scanned_together_keep_their_own_coordinators():
    """Producer ids are a cluster's own: scanned in one run, a Kafka 3.6 cluster's log dir and a
    Kafka 4 cluster's (each with its __transaction_state and a different meta.properties
    cluster.id) give each the findings it gives alone; the 4.x coordinator's transaction versions
    are not applied to the 3.6 producers that share its producer ids."""
    dirs = [corpus_dir("real-broker") / "transactions" / "data", _data("tv2-transactions")]
    alone = sorted(f.sort_key for d in dirs for f in scan(d).findings)
    together = audit_in_process(discover([str(d) for d in dirs]), ScanOptions())
    assert sorted(f.sort_key for f in together.findings) == alone
    assert not [f for f in together.findings if f.severity in ("error", "warning")]
    # The transactional ids too: each producer row named by its own cluster's coordinator.
    names = lambda result: {(r["topic"], r["partition"], r["producer_id"], r["transactional_id"]) for r in result.producers}  # noqa: E731
    assert names(together) == set().union(*(names(scan(d)) for d in dirs))
