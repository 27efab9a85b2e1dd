"""The pages a segment read releases, passed on to the next read (io.page_pool, record.range_buffer):
the bytes read are the file's whatever pages were lent, released pages read as zeros, the pool
stays within its capacity, and the segment step frees it when done."""

from __future__ import annotations

import os
import sys

import pytest

from kafka_audit.audit.segment_task import with_read_ahead
from kafka_audit.io.local_file import LocalFile
from kafka_audit.io.page_cache import PAGE
from kafka_audit.io.page_pool import PagePool
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.record.range_buffer import RangeBuffer

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mremap is Linux's")


def _file(tmp_path, name: str, size: int) -> tuple[str, bytes]:
    data = os.urandom(size)
    path = tmp_path / name
    path.write_bytes(data)
    return str(path), data


def _read_whole(path: str, pool: PagePool, chunk: int = 64 * 1024) -> RangeBuffer:
    ranges = RangeBuffer(LocalFile(path), chunk=chunk, read_ahead=2, pages=pool)
    ranges.walk(0, None)
    ranges.need(0, ranges.size)
    return ranges


def test_pages_released_by_one_read_hold_the_next_files_bytes(tmp_path):
    first, first_data = _file(tmp_path, "a.log", 300 * PAGE + 123)
    second, second_data = _file(tmp_path, "b.log", 200 * PAGE + 7)
    pool = PagePool()
    ranges = _read_whole(first, pool)
    assert bytes(ranges.buffer) == first_data
    ranges.release(0, 100 * PAGE)
    assert bytes(ranges.buffer[: 100 * PAGE]) == bytes(100 * PAGE)  # released: zeros, as after MADV_DONTNEED
    assert bytes(ranges.buffer[100 * PAGE :]) == first_data[100 * PAGE :]
    assert pool.held == 100 * PAGE
    ranges.close()
    ranges.ranges.close()
    assert pool.held == 301 * PAGE  # the released pages and the ones still read at close

    again = _read_whole(second, pool)
    assert bytes(again.buffer) == second_data  # the other file's bytes, not the pages' old ones
    assert pool.held < 301 * PAGE - 150 * PAGE  # its reads took pooled pages
    # Its pages came in several pieces (mappings): released whole all the same.
    held = pool.held
    again.release(0, 200 * PAGE)
    assert pool.held == held + 200 * PAGE
    assert bytes(again.buffer[: 200 * PAGE]) == bytes(200 * PAGE)
    assert bytes(again.buffer[200 * PAGE :]) == second_data[200 * PAGE :]
    again.close()
    again.ranges.close()
    pool.clear()
    assert pool.held == 0


def test_a_pool_keeps_no_more_than_its_capacity_and_the_rest_is_freed(tmp_path):
    path, data = _file(tmp_path, "a.log", 256 * PAGE)
    pool = PagePool(capacity=16 * PAGE + 5)
    ranges = _read_whole(path, pool)
    ranges.release(0, 200 * PAGE)
    assert pool.held == 16 * PAGE
    assert bytes(ranges.buffer[: 200 * PAGE]) == bytes(200 * PAGE)
    assert bytes(ranges.buffer[200 * PAGE :]) == data[200 * PAGE :]
    # A read after a release: the released range read again holds the file's bytes.
    ranges.need(0, 256 * PAGE)
    assert bytes(ranges.buffer) == data
    ranges.close()
    ranges.ranges.close()
    assert pool.held == 16 * PAGE


def test_the_segment_step_frees_the_pool_when_its_tasks_are_done(tmp_path):
    path, _ = _file(tmp_path, "a.log", 64 * PAGE)
    with StorageContext() as storage:
        ranges = _read_whole(path, storage.page_pool)
        ranges.close()
        ranges.ranges.close()
        assert storage.page_pool.held == 64 * PAGE
        assert list(with_read_ahead([], storage)) == []
        assert storage.page_pool.held == 0


def test_a_map_cut_into_too_many_pieces_frees_its_pages_as_without_a_pool(tmp_path, monkeypatch):
    from kafka_audit.record import range_buffer

    monkeypatch.setattr(range_buffer, "_MAX_CUTS", 3)
    path, data = _file(tmp_path, "a.log", 256 * PAGE)
    pool = PagePool()
    ranges = _read_whole(path, pool)
    ranges.release(0, 32 * PAGE)
    ranges.release(32 * PAGE, 64 * PAGE)  # the map has its 3 cuts now: 0, 32 and 64 pages
    assert pool.held == 64 * PAGE
    ranges.release(64 * PAGE, 96 * PAGE)
    assert pool.held == 64 * PAGE  # freed, not kept
    assert bytes(ranges.buffer[: 96 * PAGE]) == bytes(96 * PAGE)
    assert bytes(ranges.buffer[96 * PAGE :]) == data[96 * PAGE :]
    ranges.close()
    ranges.ranges.close()
    again = _read_whole(path, pool)
    assert bytes(again.buffer) == data
    again.close()
    again.ranges.close()
    pool.clear()


def test_pieces_too_small_to_keep_are_freed(tmp_path):
    path, data = _file(tmp_path, "a.log", 64 * PAGE)
    pool = PagePool()
    ranges = _read_whole(path, pool)
    ranges.release(0, 8 * PAGE)
    assert pool.held == 0
    assert bytes(ranges.buffer[: 8 * PAGE]) == bytes(8 * PAGE)
    assert bytes(ranges.buffer[8 * PAGE :]) == data[8 * PAGE :]
    ranges.close()
    ranges.ranges.close()
    pool.clear()
