"""The audit's record fast path, ``screen_records``, against the full decoder and validator.

``screen_records`` may say True only where ``decode_records`` reads every record without error
and ``validate_records`` flags none: the segment audit then skips both. These tests build valid
v2 record payloads with the fixture writer, damage them slightly (a byte changed, inserted or
dropped, a cut), and check that agreement on every outcome; and that clean batches do take the
fast path (the point of it).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_audit.record import default_record
from kafka_audit.record.batch_records import read_batch_records, v2_records_data
from kafka_audit.record.default_record import decode_records
from kafka_audit.record.file_records import iter_batches
from kafka_audit.record.record_batch import V2_RECORD_BATCH_OVERHEAD, RecordBatch
from kafka_audit.record.record_screen import RecordScreen, screen_records
from kafka_audit.rules.validation.log_validator import ValidationConfig, record_screen, validate_records
from tests.support.record_screen_reference import screen_records_py
from tests.support.writer import TS_BASE, BatchSpec, RecordSpec, encode_batch

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

records = st.lists(
    st.builds(
        RecordSpec,
        key=st.one_of(st.none(), st.binary(max_size=20)),
        value=st.one_of(st.none(), st.binary(max_size=300)),
        headers=st.lists(
            st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))), max_size=2
        ).map(tuple),
        timestamp=st.one_of(st.none(), st.integers(TS_BASE - 10**8, TS_BASE + 10**8)),
        offset_delta=st.one_of(st.none(), st.none(), st.integers(-3, 200)),
    ),
    min_size=1,
    max_size=12,
)


def _batch(recs, timestamp_type=0) -> tuple[RecordBatch, bytes]:
    data = encode_batch(BatchSpec(records=tuple(recs), base_offset=100, timestamp_type=timestamp_type))
    (batch,) = [item for item in iter_batches(data) if isinstance(item, RecordBatch)]
    return batch, data


def _damage(payload: bytes, rng: random.Random) -> bytes:
    data = bytearray(payload)
    kind = rng.randrange(5)
    at = rng.randrange(len(data) + 1)
    if kind == 0 and data:
        data[min(at, len(data) - 1)] = rng.randrange(256)
    elif kind == 1:
        data[at:at] = bytes([rng.randrange(256)])
    elif kind == 2 and data:
        del data[min(at, len(data) - 1)]
    elif kind == 3:
        del data[at:]
    return bytes(data)


@SETTINGS
@given(
    records,
    st.integers(0, 2**32),
    st.booleans(),
    st.sampled_from([(None, None), (TS_BASE - 1000, None), (None, TS_BASE + 5), (TS_BASE - 10**7, TS_BASE + 10**7)]),
    st.integers(-1, 2),
)
def test_the_screen_passes_a_batch_only_when_decoding_and_validation_find_nothing(
    recs, seed, compacted, bounds, count_change
):
    batch, data = _batch(recs)
    payload = data[V2_RECORD_BATCH_OVERHEAD:]
    rng = random.Random(seed)
    if seed % 3:
        payload = _damage(payload, rng)
    count = batch.record_count + (count_change if seed % 5 == 0 else 0)
    before, after = bounds
    reference = TS_BASE
    config = ValidationConfig(
        compacted_topics=frozenset({"t"}) if compacted else frozenset(),
        timestamp_before_max_ms=None if before is None else reference - before,
        timestamp_after_max_ms=None if after is None else after - reference,
    )
    screen = record_screen(batch, "t", config, reference)
    decoded = decode_records(payload, batch.base_offset, batch.base_timestamp, count, None, with_data=False)
    if screen_records(payload, batch.base_timestamp, count, screen):
        assert decoded.error is None
        assert len(decoded.records) == count
        batch.record_count = count
        assert validate_records(batch, decoded.records, "t", "t-0", config, reference) == []


@given(records)
@settings(max_examples=100, deadline=None)
def test_clean_batches_take_the_fast_path(recs):
    recs = [RecordSpec(key=r.key or b"k", value=r.value, headers=r.headers) for r in recs]
    batch, data = _batch(recs)
    screen = record_screen(batch, "t", ValidationConfig(compacted_topics=frozenset({"t"})), None)
    assert screen_records(v2_records_data(data, batch), batch.base_timestamp, batch.record_count, screen)
    decoded = read_batch_records(data, batch, with_data=False)
    assert decoded.count == len(recs) and decoded.problems == []


@pytest.mark.parametrize("delta", [63, 64, 8191, 8192, 10**6])
def test_long_varints_are_read_like_the_decoder_reads_them(delta):
    """Deltas and sizes of one, two and more varint bytes (the screen inlines one and two)."""
    recs = [RecordSpec(key=b"k" * (delta % 300), value=b"v" * 200, timestamp=TS_BASE + delta * i) for i in range(3)]
    batch, data = _batch(recs)
    payload = data[V2_RECORD_BATCH_OVERHEAD:]
    assert screen_records(payload, batch.base_timestamp, 3, RecordScreen())
    low = batch.base_timestamp + delta * 2 + 1
    assert not screen_records(payload, batch.base_timestamp, 3, RecordScreen(min_timestamp=low))


def test_control_and_log_append_time_batches_are_screened_as_the_rules_say():
    (recs,) = [[RecordSpec(key=b"k", value=b"v", timestamp=TS_BASE - 10**9)]]
    config = ValidationConfig(timestamp_before_max_ms=1000)
    create_time, _ = _batch(recs)
    log_append_time, _ = _batch(recs, timestamp_type=1)
    assert record_screen(create_time, "t", config, TS_BASE).min_timestamp == TS_BASE - 1000
    # LogAppendTime records are not checked against the reference time: no bound to screen.
    assert record_screen(log_append_time, "t", config, TS_BASE).min_timestamp is None
    assert record_screen(create_time, "t", config, None).min_timestamp is None


# -- the compiled screen (_record_screen.c) answers as the Python one does -------------------------

@SETTINGS
@given(
    records,
    st.integers(0, 2**32),
    st.booleans(),
    st.sampled_from([(None, None), (TS_BASE - 1000, None), (None, TS_BASE + 5), (-(2**63), 2**63 - 1), (0, 2**70)]),
    st.integers(-1, 2),
)
def test_compiled_and_python_screens_agree_on_written_and_damaged_batches(recs, seed, require_key, bounds, change):
    batch, data = _batch(recs)
    payload = data[V2_RECORD_BATCH_OVERHEAD:]
    if seed % 3:
        payload = _damage(payload, random.Random(seed))
    count = batch.record_count + (change if seed % 5 == 0 else 0)
    screen = RecordScreen(require_key, *bounds)
    base = batch.base_timestamp if seed % 7 else 2**63 - 1  # timestamps that overflow a long
    assert screen_records(payload, base, count, screen) == screen_records_py(payload, base, count, screen)


@SETTINGS
@given(st.binary(max_size=200), st.integers(-2, 6), st.booleans(), st.integers(-(2**63), 2**63 - 1))
def test_compiled_and_python_screens_agree_on_arbitrary_bytes(data, count, require_key, base):
    for screen in (RecordScreen(require_key), RecordScreen(require_key, base - 5, base + 5)):
        assert screen_records(data, base, count, screen) == screen_records_py(data, base, count, screen)


def test_the_compiled_screen_is_built_with_the_grammar_of_default_record():
    """setup.py compiles the widths of default_record.py into the C screen: a build from other
    widths (a stale .so) would screen another grammar."""
    from kafka_audit.record import _record_screen

    for name in ("MAX_VARINT_BYTES", "MAX_VARLONG_BYTES", "MIN_HEADER_BYTES"):
        assert getattr(_record_screen, name) == getattr(default_record, name), name


def test_compiled_screen_takes_memoryviews_and_reads_long_varints():
    recs = [RecordSpec(key=b"k", value=b"v" * 20000, timestamp=TS_BASE + 10**12) for _ in range(3)]
    batch, data = _batch(recs)
    view = memoryview(data)[V2_RECORD_BATCH_OVERHEAD:]
    assert screen_records(view, batch.base_timestamp, 3, RecordScreen(True))
    assert screen_records_py(bytes(view), batch.base_timestamp, 3, RecordScreen(True))
    assert not screen_records(view, batch.base_timestamp, 4, RecordScreen())


# Zig-zag varints written out by hand (ByteUtils.writeVarint): one, two and three bytes.
@pytest.mark.parametrize(
    ("encoded", "value"),
    [(b"\x00", 0), (b"\x7f", -64), (b"\x80\x01", 64), (b"\x81\x01", -65), (b"\xfe\x7f", 8191), (b"\xff\x7f", -8192),
     (b"\x80\x80\x01", 8192), (b"\xfe\xff\xff\xff\x0f", 2**31 - 1)],
)
def test_record_fields_read_varints_of_every_width(encoded: bytes, value: int) -> None:
    # attributes, timestampDelta, offsetDelta, a null key, a null value, no headers
    body = b"\x00" + encoded + encoded + b"\x01\x01\x00"
    length = bytes([len(body) << 1])  # a one-byte varint length
    decoded = decode_records(length + body, 100, 1000, 1, None)
    assert decoded.error is None
    (record,) = decoded.records
    assert (record.stored_offset, record.offset, record.timestamp) == (value, 100 + value, 1000 + value)
    assert (record.key_size, record.value_size, record.header_count) == (-1, -1, 0)


def test_a_record_length_cut_inside_its_varint_says_so() -> None:
    """ByteUtils.readVarint on a buffer that ends after a byte with its continuation bit set."""
    decoded = decode_records(b"\x80", 0, 0, 1, None)
    assert (decoded.records, decoded.error, decoded.error_index) == ([], "Varint runs past the end of the record data", 0)
