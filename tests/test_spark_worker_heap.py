"""The Spark worker's heap is frozen once per process (``spark_job.settle_worker_heap``), so that
PySpark's ``gc.collect()`` after each task of a reused worker walks only what tasks made since."""

from __future__ import annotations

import gc
import weakref

import pytest

from kafka_audit.engines.spark_job import settle_worker_heap


@pytest.fixture
def fresh_heap():
    gc.unfreeze()
    settle_worker_heap.cache_clear()
    yield
    gc.unfreeze()
    settle_worker_heap.cache_clear()


def test_the_first_task_freezes_what_is_alive_and_later_tasks_freeze_nothing(fresh_heap):
    assert gc.get_freeze_count() == 0
    settle_worker_heap()
    frozen = gc.get_freeze_count()
    assert frozen > 1000  # the modules' objects, at least
    made_since = [[number] for number in range(100)]
    settle_worker_heap()
    assert gc.get_freeze_count() == frozen
    assert made_since  # alive, and not frozen by the second call


def test_a_frozen_object_is_still_freed_when_its_last_reference_goes(fresh_heap):
    class Held:
        pass

    held = Held()
    gone = weakref.ref(held)
    settle_worker_heap()
    del held
    assert gone() is None
