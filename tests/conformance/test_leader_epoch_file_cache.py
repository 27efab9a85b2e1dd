"""Ports of Kafka's ``LeaderEpochFileCacheTest`` (storage/src/test/java/.../epoch): the cases of
``assign``, ``endOffsetFor``, ``truncateFromEnd`` and ``truncateFromStart`` that an offline lineage
uses, named after Kafka's test methods."""

from __future__ import annotations

from kafka_audit.rules.replication.leader_epoch_cache import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    LeaderEpochCache,
    lineage_from_batches,
)

UNDEFINED = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


def _cache(*entries: tuple[int, int]) -> LeaderEpochCache:
    cache = LeaderEpochCache()
    for epoch, offset in entries:
        cache.assign(epoch, offset)
    return cache


def test_should_add_epoch_and_message_offset_to_cache():
    cache = _cache((2, 10))
    assert cache.latest_epoch == 2 and cache.entries == [(2, 10)]
    assert cache.end_offset_for(2, 11) == (2, 11)


def test_should_return_log_end_offset_if_latest_epoch_requested():
    assert _cache((2, 11), (2, 12)).end_offset_for(2, 14) == (2, 14)


def test_should_return_undefined_offset_if_undefined_epoch_requested():
    assert _cache((2, 11), (3, 12)).end_offset_for(UNDEFINED_EPOCH, 0) == UNDEFINED


def test_should_not_overwrite_log_end_offset_for_a_leader_epoch_once_it_has_been_assigned():
    assert _cache((2, 9), (2, 10)).entries == [(2, 9)]


def test_should_enforce_monotonically_increasing_start_offsets():
    assert _cache((2, 9), (3, 9)).entries == [(3, 9)]


def test_should_return_unsupported_if_no_epoch_recorded():
    assert LeaderEpochCache().end_offset_for(0, 0) == UNDEFINED


def test_should_return_first_epoch_if_requested_epoch_less_than_first_epoch():
    assert _cache((5, 11), (6, 12), (7, 13)).end_offset_for(4, 0) == (4, 11)


def test_should_truncate_if_matching_epoch_but_earlier_starting_offset():
    cache = _cache((5, 11), (6, 12), (7, 13), (7, 12))
    assert cache.end_offset_for(5, 0) == (5, 12)
    assert cache.end_offset_for(6, 0) == (5, 12)


def test_should_get_first_offset_of_subsequent_epoch_when_offset_requested_for_previous_epoch():
    cache = _cache((1, 11), (1, 12), (2, 13), (2, 14), (3, 15), (3, 16))
    assert cache.end_offset_for(2, 17) == (2, 15)


def test_should_return_next_available_epoch_if_there_is_no_exact_epoch_for_the_one_requested():
    cache = _cache((0, 10), (2, 13), (4, 17))
    assert cache.end_offset_for(1, 0) == (0, 13)
    assert cache.end_offset_for(2, 0) == (2, 17)
    assert cache.end_offset_for(3, 0) == (2, 17)


def test_should_return_invalid_offset_if_epoch_is_requested_which_is_not_currently_tracked():
    assert _cache((2, 100)).end_offset_for(3, 100) == UNDEFINED


def test_should_enforce_monotonically_increasing_epochs():
    cache = _cache((1, 5), (2, 6), (1, 7))
    assert cache.latest_epoch == 1
    assert cache.end_offset_for(1, 8) == (1, 8)
    assert cache.end_offset_for(2, 8) == UNDEFINED
    assert cache.entries == [(1, 7)]


def test_should_increase_and_track_epochs_as_leaders_change_many_times():
    cache = _cache((0, 0), (1, 0))
    assert cache.latest_epoch == 1
    assert cache.end_offset_for(1, 0) == (1, 0)
    assert cache.end_offset_for(0, 0) == (0, 0)
    assert cache.end_offset_for(1, 5) == (1, 5)
    cache.assign(2, 5)
    assert [cache.end_offset_for(e, 10) for e in (2, 1, 0)] == [(2, 10), (1, 5), (0, 0)]


def test_should_drop_entries_on_epoch_boundary_when_removing_latest_entries():
    cache = _cache((2, 6), (3, 8), (4, 11))
    cache.truncate_from_end(8)
    assert cache.entries == [(2, 6)]


def test_should_drop_entries_between_epoch_boundary_when_removing_newest():
    cache = _cache((2, 6), (3, 8), (4, 11))
    cache.truncate_from_end(9)
    assert cache.latest_epoch == 3 and cache.entries == [(2, 6), (3, 8)]


def test_should_preserve_reset_offset_on_clear_earliest_if_one_exists():
    cache = _cache((2, 6), (3, 8), (4, 11))
    cache.truncate_from_start(8)
    assert cache.entries == [(3, 8), (4, 11)]


def test_should_update_offset_between_epoch_boundaries_on_clear_earliest():
    cache = _cache((2, 6), (3, 8), (4, 11))
    cache.truncate_from_start(9)
    assert cache.entries == [(3, 9), (4, 11)]


def test_should_retain_latest_epoch_on_clear_all_earliest_and_update_its_offset():
    cache = _cache((2, 6), (3, 8), (4, 11))
    cache.truncate_from_start(15)
    assert cache.entries == [(4, 15)]


def test_should_not_reset_epoch_history_head_or_tail_if_undefined_passed():
    cache = _cache((2, 6), (3, 8), (4, 11))
    cache.truncate_from_start(UNDEFINED_EPOCH_OFFSET)
    cache.truncate_from_end(UNDEFINED_EPOCH_OFFSET)
    assert len(cache.entries) == 3


def test_should_fetch_end_offset_of_empty_cache():
    assert LeaderEpochCache().latest_epoch is None
    assert LeaderEpochCache().end_offset_for(7, 0) == UNDEFINED


def test_lineage_rebuilt_from_batches_like_a_missing_checkpoint():
    """LogLoader assigns each batch's partition leader epoch at its base offset: a missing
    checkpoint is the batches' epochs (v0/v1 batches, epoch -1, carry none)."""
    assert lineage_from_batches([(-1, 0), (0, 3), (0, 7), (2, 9), (2, 12), (5, 20)]).entries == [(0, 3), (2, 9), (5, 20)]
