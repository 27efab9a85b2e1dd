"""``kafka-audit dump``'s record lines: the compiled formatter prints exactly what the Python loop
prints (on written, damaged and arbitrary bytes), and what both print is what kafka-python, an
independent decoder, reads from the same segment."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record import MemoryRecords
from typer.testing import CliRunner

from kafka_audit.cli.app import app
from kafka_audit.record.default_record import decode_records
from kafka_audit.record.file_records import iter_batches
from kafka_audit.record.record_batch import V2_RECORD_BATCH_OVERHEAD, RecordBatch
from kafka_audit.report import dump
from tests.support.writer import TS_BASE, BatchSpec, LogDirWriter, Producer, RecordSpec, encode_batch

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
compiled = pytest.mark.skipif(dump._compiled_record_text is None, reason="the compiled formatter is not built")

# Keys and values: text, non-UTF-8 bytes (lone continuation bytes, surrogates, overlong forms,
# truncated sequences), NUL, and null.
_BYTES = st.one_of(
    st.none(),
    st.binary(max_size=40),
    st.text(max_size=20).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.sampled_from([b"\xed\xa0\x80", b"\xc0\xaf", b"\xe2\x82", b"\xf4\x90\x80\x80", b"a\x00b", b"\xf0\x9f\x98\x80"]),
)
records = st.lists(
    st.builds(
        RecordSpec,
        key=_BYTES,
        value=_BYTES,
        headers=st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))), max_size=2).map(
            tuple
        ),
        timestamp=st.one_of(st.none(), st.integers(TS_BASE - 10**8, TS_BASE + 10**8)),
        offset_delta=st.one_of(st.none(), st.none(), st.integers(-3, 200)),
    ),
    min_size=1,
    max_size=12,
)


def _batch(recs, **fields) -> tuple[RecordBatch, bytes]:
    data = encode_batch(BatchSpec(records=tuple(recs), base_offset=100, **fields))
    (batch,) = [item for item in iter_batches(data) if isinstance(item, RecordBatch)]
    return batch, data[V2_RECORD_BATCH_OVERHEAD:]


def _both(batch: RecordBatch, payload: bytes, count: int, print_data: bool, base_sequence: int, append_time):
    """(compiled text, Python text or None when the Python decoder reports an error)."""
    names = dump._TIMESTAMP_TYPE_NAMES
    ts_name = names[batch.timestamp_type]
    text = dump._compiled_record_text(
        payload, batch.base_offset, batch.base_timestamp, append_time, ts_name, base_sequence, count, print_data
    )
    decoded = decode_records(payload, batch.base_offset, batch.base_timestamp, count, append_time, print_data)
    batch.base_sequence = base_sequence
    python = None if decoded.error else dump.record_lines(batch, decoded.records, print_data)
    return text, python


def _damage(payload: bytes, rng: random.Random) -> bytes:
    data = bytearray(payload)
    at = rng.randrange(len(data) + 1)
    kind = rng.randrange(4)
    if kind == 0 and data:
        data[min(at, len(data) - 1)] = rng.randrange(256)
    elif kind == 1:
        data[at:at] = bytes([rng.randrange(256)])
    elif kind == 2 and data:
        del data[min(at, len(data) - 1)]
    else:
        del data[at:]
    return bytes(data)


@compiled
@SETTINGS
@given(records, st.integers(0, 2**32), st.booleans(), st.sampled_from([-1, 0, 7, 2**31 - 3]), st.integers(-1, 1))
def test_compiled_lines_equal_the_python_loop(recs, seed, print_data, base_sequence, change):
    """Where the Python decoder reads the records, the compiled formatter prints the same lines;
    where it reports an error, the compiled formatter steps aside (None)."""
    log_append = seed % 4 == 0
    batch, payload = _batch(recs, timestamp_type=1, log_append_time=TS_BASE + 7) if log_append else _batch(recs)
    if seed % 3 == 0:
        payload = _damage(payload, random.Random(seed))
    count = batch.record_count + (change if seed % 5 == 0 else 0)
    append_time = batch.max_timestamp if log_append else None
    text, python = _both(batch, payload, count, print_data, base_sequence, append_time)
    if python is None:
        assert text is None
    else:
        assert text is None or text == (python + "\n" if python else "")


@compiled
@SETTINGS
@given(st.binary(max_size=200), st.integers(-2, 6), st.booleans(), st.integers(-(2**63), 2**63 - 1))
def test_compiled_lines_on_arbitrary_bytes(data, count, print_data, base):
    batch, _ = _batch([RecordSpec(key=b"k", value=b"v")])
    batch.base_timestamp = base
    text, python = _both(batch, data, count, print_data, -1, None)
    if python is None:
        assert text is None
    else:
        assert text is None or text == (python + "\n" if python else "")


@compiled
def test_compiled_lines_are_used_for_clean_batches():
    batch, payload = _batch([RecordSpec(key=b"k", value=b"\xff\xfe value")])
    text, python = _both(batch, payload, batch.record_count, True, -1, None)
    assert text == python + "\n"
    assert "payload: \\xff\\xfe value" in text


@compiled
def test_the_compiled_lines_give_the_offsets_check_its_offsets(tmp_path, monkeypatch):
    """DumpLogSegments' offset check takes a clean batch's offsets from the compiled lines: the
    Python decoder does not read the batch again (it did for every batch while the lines' last
    line break was counted as one more line)."""
    from kafka_audit.record import batch_records

    with LogDirWriter(tmp_path) as out:
        writer = out.partition("t", 0)
        producer = Producer(7)
        for n in range(5):
            producer.send(writer, tuple(RecordSpec(key=b"k%d" % i, value=b"v" * n) for i in range(4)))
    segment = tmp_path / "t-0" / f"{0:020d}.log"
    decoded = []
    real = batch_records.decode_records
    monkeypatch.setattr(batch_records, "decode_records", lambda *a, **k: decoded.append(a) or real(*a, **k))
    done = CliRunner().invoke(app, ["dump", "--records", "--print-data", str(segment)])
    assert done.exit_code == 0, done.output
    offsets = [int(m[1]) for m in map(_RECORD_LINE.match, done.stdout.splitlines()) if m]
    assert offsets == list(range(20))
    assert decoded == []


@pytest.mark.parametrize(
    ("text", "count", "offsets"),
    [("| offset: 5 a\n| offset: 7 b\n", 2, [5, 7]), ("", 0, []), ("| offset: 5 a\n| offset: 7 b\n", 3, None),
     ("| offset: 5 a\nb | offset: 7 c\n", 2, None), ("| offset: 5 a\n| offset: 7 b", 2, None),
     ("| offset: 5 a\n", None, None), ("| offset: 5 a | offset: 9 b\n", 1, None)],
)
def test_compiled_offsets_only_from_one_record_line_each(text, count, offsets):
    from kafka_audit.report.dump_checks import compiled_offsets

    assert compiled_offsets(text, count) == offsets


_RECORD_LINE = re.compile(
    r"^\| offset: (\d+) CreateTime: (\d+) keySize: (-?\d+) valueSize: (-?\d+) sequence: (-?\d+) "
    r"headerKeys: \[(.*?)\] key: (.*) payload: (.*)$"
)


def _shown(text: str) -> str:
    """Printable ASCII as dump shows data (SPEC section 1): a backslash doubled, a ``:`` before
    ``:`` and a ``#`` before ``#[`` followed by a backslash (no runner command starts from data)."""
    out = []
    for at, char in enumerate(text):
        out.append(char)
        if char == "\\" or (char == ":" and text[at + 1:at + 2] == ":") or (char == "#" and text[at + 1:at + 3] == "#["):
            out.append("\\")
    return "".join(out)


@pytest.mark.parametrize("codec", [0, 2, 3, 4])
def test_dump_prints_what_kafka_python_reads(tmp_path, codec):
    """Every record line of ``dump --records --print-data`` against kafka-python's decode of the
    same segment: offset, timestamp, sizes, header keys, key and value."""
    rng = random.Random(codec)
    with LogDirWriter(tmp_path) as out:
        writer = out.partition("t", 0)
        producer = Producer(7, codec=codec)
        for n in range(40):
            recs = tuple(
                RecordSpec(
                    key=None if i == 3 else b"key-%d" % i,
                    value=bytes(rng.randrange(32, 127) for _ in range(rng.randrange(0, 300))),
                    headers=(("h", b"x"),) if n % 5 == 0 else (),
                )
                for i in range(rng.randint(1, 30))
            )
            producer.send(writer, recs)
    segment = tmp_path / "t-0" / f"{0:020d}.log"
    done = CliRunner().invoke(app, ["dump", "--records", "--print-data", str(segment)])
    assert done.exit_code == 0, done.output
    printed = [_RECORD_LINE.match(line) for line in done.stdout.splitlines() if line.startswith("| ")]
    expected = []
    for batch in MemoryRecords(segment.read_bytes()):
        for record in batch:
            expected.append(
                (
                    record.offset,
                    record.timestamp,
                    -1 if record.key is None else len(record.key),
                    len(record.value),
                    ",".join(key for key, _ in record.headers),
                    "null" if record.key is None else _shown(record.key.decode()),
                    _shown(record.value.decode()),
                )
            )
    assert None not in printed and len(printed) == len(expected) > 0
    got = [(int(m[1]), int(m[2]), int(m[3]), int(m[4]), m[6], m[7], m[8]) for m in printed]
    assert got == expected
