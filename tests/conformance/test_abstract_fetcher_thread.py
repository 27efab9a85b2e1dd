"""Ports of Kafka's ``AbstractFetcherThreadTest`` (and ``ReplicaFetcherThreadTest``) truncation
cases: where a follower truncates before it follows the leader (KIP-101, KIP-279's iterative
case), named after Kafka's test methods. A log is given as its batches' (base offset, epoch),
one record each, as the tests' ``mkBatch`` builds them."""

from __future__ import annotations

from kafka_audit.rules.replication.fetcher_truncation import EpochLog, truncation_offset
from kafka_audit.rules.replication.leader_epoch_cache import lineage_from_batches


def _log(*epochs: int, high_watermark: int | None = None) -> EpochLog:
    """One single-record batch per epoch given, at offsets 0, 1, 2, ..."""
    return EpochLog(lineage_from_batches((e, offset) for offset, e in enumerate(epochs)), len(epochs), high_watermark)


def test_truncation():
    """Replica epochs 0, 2, 4 and leader 1, 3, 5 (offsets 0-2): no epoch in common, every round
    drops one; the follower truncates to 0 and then fetches the leader's log."""
    assert truncation_offset(_log(0, 2, 4), _log(1, 3, 5)) == 0


def test_truncate_to_high_watermark_if_leader_epoch_info_not_available():
    """A follower that tracks no epoch truncates to its high watermark."""
    follower = EpochLog(lineage_from_batches([]), 3, high_watermark=2)
    assert truncation_offset(follower, _log(0, 2, 4)) == 2


def test_follower_fetch_out_of_range_high():
    """The same log on both: nothing is truncated (the follower's log end)."""
    assert truncation_offset(_log(0, 2, 4), _log(0, 2, 4)) == 3


def test_truncation_skipped_if_no_epoch_change():
    """A follower whose latest epoch is the leader's keeps its log (here a prefix of the leader's)."""
    assert truncation_offset(_log(1, 3), _log(1, 3, 5)) == 2


def test_should_truncate_to_offset_specified_in_epoch_offset_response():
    """The leader's epoch 0 ends at 2 (epoch 1 begins there); the follower's epoch 0 runs to 4."""
    assert truncation_offset(_log(0, 0, 0, 0), _log(0, 0, 1, 1, 1)) == 2


def test_should_fetch_leader_epoch_second_time_if_leader_replies_with_epoch_not_known_to_follower():
    """KIP-279: the follower (epochs 1, 2, 4) asks with 4; the leader (1, 3, 5) answers 3, which
    the follower does not know: it truncates to the end of its epoch 2 and asks again with 2; the
    leader's floor of 2 is 1, ending at 1: the final truncation offset."""
    assert truncation_offset(_log(1, 2, 4), _log(1, 3, 5)) == 1


def test_should_truncate_to_offset_specified_in_epoch_offset_response_if_follower_has_no_more_epochs():
    """The leader answers with an epoch below every epoch the follower tracks: the follower's
    cache answers the start of its first epoch, and it truncates there."""
    follower = EpochLog(lineage_from_batches([(2, 0), (3, 3)]), 6)
    leader = EpochLog(lineage_from_batches([(1, 0), (4, 2)]), 8)
    assert truncation_offset(follower, leader) == 0


def test_leader_elected_during_shutdown_trailing_entry_with_no_data():
    """healthy-rf3's case: the kept replica's checkpoint ends with an entry at its log end (a new
    epoch with no data); a follower with the same batches truncates nothing."""
    kept = EpochLog(lineage_from_batches([(0, 0), (1, 5)]), 5)
    assert truncation_offset(_log(0, 0, 0, 0, 0), kept) == 5
