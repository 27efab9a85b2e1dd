"""The real Kafka 3.6.2 broker's log dirs (shared/corpus/real-broker): each scanned with no flags
gives exactly the findings its README's "Expected findings of a correct offline auditor" names
(where the top README's table differs, the dir README is followed), and the real corpus
(shared/corpus/real) gives no error finding."""

from __future__ import annotations

from collections import Counter

from tests.support.audit_run import corpus_dir, scan


def _by_check(result) -> dict[str, int]:
    return dict(Counter(f.check for f in result.findings))


def _only(result, check: str):
    hits = [f for f in result.findings if f.check == check]
    assert len(hits) == 1, [(f.check, f.message) for f in result.findings]
    return hits[0]


def test_idempotent_compressed_is_clean():
    result = scan(corpus_dir("real-broker") / "idempotent-compressed" / "data")
    assert _by_check(result) == {}


def test_old_message_formats_are_clean():
    result = scan(corpus_dir("real-broker") / "old-message-formats" / "data")
    assert _by_check(result) == {}


def test_transactions_zombie_fencing_is_two_fenced_epoch_bumps_per_partition():
    result = scan(corpus_dir("real-broker") / "transactions" / "data")
    assert _by_check(result) == {"epoch_bump": 4}
    assert result.summary["transactions"] == {"committed": 16, "aborted": 10, "open": 0}
    bumps = sorted((f.partition, f.offset, f.details["previous_epoch"], f.producer_epoch) for f in result.findings)
    assert bumps == [(0, 344, 0, 1), (0, 345, 1, 2), (1, 344, 0, 1), (1, 345, 1, 2)]
    for f in result.findings:
        # Instance 1 was fenced by instance 2's InitProducerId: ProducerFencedException, fatal.
        assert f.details["reason"] == "fenced" and f.client_outcome == "fatal"
    markers = [f for f in result.findings if f.offset == 344]
    assert all(f.details["open_transaction_aborted"] for f in markers)


def test_hanging_transaction_aborted_on_timeout_is_one_epoch_bump():
    result = scan(corpus_dir("real-broker") / "hanging-txn-timeout-aborted" / "data")
    assert _by_check(result) == {"epoch_bump": 1}
    assert result.summary["transactions"] == {"committed": 2, "aborted": 1, "open": 0}
    bump = _only(result, "epoch_bump")
    assert (bump.offset, bump.producer_id, bump.producer_epoch) == (382, 1, 1)
    assert bump.details["reason"] == "timeout_abort"
    assert bump.details["open_transaction_aborted"] is True
    assert bump.client_outcome == "none"


def test_retention_and_producer_expiry():
    result = scan(corpus_dir("real-broker") / "retention-producer-expiry" / "data")
    assert _by_check(result) == {"retention_gap": 1, "epoch_bump": 1}
    gap = _only(result, "retention_gap")
    assert (gap.severity, gap.offset, gap.error_code, gap.client_outcome) == ("warning", 2620, None, "none")
    assert gap.details["log_start_offset"] == 2620
    assert gap.details["missing_sequences"] == [0, 2519]
    bump = _only(result, "epoch_bump")
    # librdkafka bumped its own epoch after the delivery timeouts (KIP-360): no error, not fenced.
    assert (bump.offset, bump.details["reason"], bump.client_outcome) == (3520, "idempotent_bump", "none")


def test_retention_with_the_brokers_own_expiration_sees_the_expiry():
    # P idled 25 s while the broker's producer.id.expiration.ms was lower (server.properties):
    # with that setting the audit says the broker forgot P, and nothing else changes.
    data = corpus_dir("real-broker") / "retention-producer-expiry"
    props = dict(
        line.split("=", 1) for line in (data / "broker" / "server.properties").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    expiration = props["producer.id.expiration.ms"].strip()
    result = scan(data / "data", ["--producer-id-expiration-ms", expiration])
    assert _by_check(result) == {"retention_gap": 1, "epoch_bump": 1, "producer_expired": 2}
    expired = [f for f in result.findings if f.check == "producer_expired"]
    # After the 25 s idle (offset 3100) and across the restart and stall (offset 3300).
    assert [f.offset for f in expired] == [3100, 3300]
    for f in expired:
        assert f.severity == "info" and f.details["idle_ms"] >= int(expiration)
        # No sequence gap across the idle time: the producer went on where it stopped.
        assert f.details["expected_sequence"] == f.sequence


def test_compacted_topic_is_inferred_from_the_cleaner_checkpoint():
    result = scan(corpus_dir("real-broker") / "compacted" / "data")
    assert _by_check(result) == {"orphan_marker": 2}
    assert sorted(f.offset for f in result.findings) == [1830, 1861]
    assert all(f.severity == "info" for f in result.findings)


def test_compacted_topic_named_on_the_command_line_gives_the_same():
    result = scan(corpus_dir("real-broker") / "compacted" / "data", ["--compacted-topic", "cmp"])
    assert _by_check(result) == {"orphan_marker": 2}


def test_the_real_corpus_has_no_error_finding():
    result = scan(corpus_dir("real"))
    errors = [(f.check, f.segment, f.message) for f in result.findings if f.severity == "error"]
    assert errors == []
