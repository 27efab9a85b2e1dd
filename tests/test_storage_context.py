"""A request's storage (io/storage_context.py): settings that travel with the tasks and keep
their secrets out of reprs, a context that stays in its process, counts and read-ahead that are
the request's own and end when it closes."""

from __future__ import annotations

import pickle
import threading

import pytest

from kafka_audit.io.storage import READ_RATE_OPTION, RSM_KEY_OPTION, StorageSettings
from kafka_audit.io.storage_context import StorageContext


class _Key:
    """Stands for an RsmKey: its repr is the only way its bytes could show."""

    def __repr__(self) -> str:
        return "KEY-BYTES"


def test_settings_split_the_key_and_the_rate_from_the_options_and_show_no_secret():
    settings = StorageSettings.of({"secret": "TOPSECRET", "endpoint_url": "http://127.0.0.1:9",
                                   RSM_KEY_OPTION: "PEM-TEXT", READ_RATE_OPTION: 5.0})
    assert settings.options == (("endpoint_url", "http://127.0.0.1:9"), ("secret", "TOPSECRET"))
    assert settings.rsm_key == "PEM-TEXT" and settings.max_read_rate == 5.0
    shown = repr(StorageContext(StorageSettings(settings.options, _Key(), 5.0)))
    assert "TOPSECRET" not in shown and "KEY-BYTES" not in shown and "5.0" in shown
    assert pickle.loads(pickle.dumps(settings)) == settings  # they travel with the tasks


def test_a_context_stays_in_its_process():
    with pytest.raises(TypeError, match="send its settings"):
        pickle.dumps(StorageContext())


def test_each_context_counts_its_own_requests():
    first, second = StorageContext(), StorageContext()
    reading = first.requests_sent()
    first.count_request(100)
    first.count_request(20, requests=2)
    assert first.fetched_since(reading) == (3, 120)
    assert second.requests_sent() == (0, 0)


def test_errors_lose_the_values_of_their_own_settings():
    mine = StorageContext(StorageSettings.of({"secret": "TOPSECRET", "region": "eu-west-1"}))
    line = mine.os_error("s3://b/x", RuntimeError("denied TOPSECRET in eu-west-1 for s3://K:S@b/x")).strerror
    assert line == "RuntimeError: denied *** in eu-west-1 for s3://***@b/x"
    other = StorageContext().os_error("s3://b/x", RuntimeError("TOPSECRET")).strerror
    assert other == "RuntimeError: TOPSECRET"  # another request's settings are not this one's


def test_close_ends_the_read_ahead(monkeypatch):
    """Reads asked for ahead run on the context's pool; closing waits for those under way,
    drops the rest, and leaves no thread behind."""
    release = threading.Event()
    started: list[str] = []

    def slow_read(path: str, start: int, stop: int) -> bytes:
        started.append(path)
        release.wait(5)
        return b"x"

    storage = StorageContext()
    monkeypatch.setattr(storage, "_read_range", slow_read)
    for i in range(20):
        storage.prefetch_range(f"s3://b/{i}.index", 0, 10)
    assert len(storage._prefetched) == 16 and len(storage._to_prefetch) == 4
    assert storage._pool is not None
    threads = set(storage._pool._threads)
    release.set()
    with storage:
        pass
    assert storage._pool is None and not storage._prefetched and not storage._to_prefetch
    assert len(started) <= 16
    assert threads and not any(thread.is_alive() for thread in threads)
