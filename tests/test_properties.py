"""Property-based tests (hypothesis) over the codec and the checks: issue 7.

Bounded so the file stays fast in CI (small inputs, 60-200 examples per property, no deadline):

- (a) arbitrary and half-valid bytes into the batch walk, the record decoders and the segment
  audit never raise, and every problem has a SPEC check id and a position inside the file;
- (b) writer-built batches of random specs (magic 0/1/2, every codec, null or byte keys, values
  and headers, producer fields, control records) decode back to what was written;
- (c) one flipped byte or a truncation of a valid segment never raises, and gives a finding
  wherever the byte is read (everything but the v2 partitionLeaderEpoch and the base offset of a
  lone batch);
- (d) the sidecar parsers never raise, and ``decompress`` raises nothing but DecompressionError;
- (e) the producer-state replay (and offset continuity) over random batch summaries never raise.
"""

from __future__ import annotations

import os
import struct
import tempfile
import zlib
from pathlib import Path

import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.audit.segment_audit import SegmentAuditor
from kafka_audit.engines.local import audit_in_process
from kafka_audit.log.checkpoints import parse_leader_epoch_checkpoint, parse_offset_checkpoint, parse_properties
from kafka_audit.log.index_files import OFFSET_INDEX, TIME_INDEX
from kafka_audit.log.log_dir import discover
from kafka_audit.log.producer_snapshot import ProducerSnapshot, ProducerSnapshotEntry, parse_producer_snapshot
from kafka_audit.log.transaction_index import AbortedTxn, parse_transaction_index
from kafka_audit.record.batch_records import read_batch_records
from kafka_audit.record.compression import DecompressionError, compress, decompress
from kafka_audit.record.control_record import parse_control_record
from kafka_audit.record.default_record import decode_records
from kafka_audit.record.file_records import iter_batches
from kafka_audit.record.problem import Problem
from kafka_audit.record.record_batch import V2_RECORD_BATCH_OVERHEAD, RecordBatch, increment_sequence
from kafka_audit.record.record_screen import RecordScreen, screen_records
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.catalogue import CHECKS
from kafka_audit.rules.partition.offset_continuity import OffsetContinuity
from kafka_audit.rules.replay.partition_replay import PartitionLog, ReplaySettings, replay_partition
from kafka_audit.rules.validation.log_validator import ValidationConfig, record_screen, validate_records
from tests.support.record_screen_reference import screen_records_py
from tests.support.segment_tasks import segment_task
from tests.support.writer import TS_BASE, BatchSpec, ControlSpec, RecordSpec, encode_batch

# KAFKA_AUDIT_PROPERTY_SCALE=50 runs every property 50 times longer (a local soak, not CI).
_SCALE = max(1, int(os.environ.get("KAFKA_AUDIT_PROPERTY_SCALE", "1")))
_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]
FAST = settings(max_examples=150 * _SCALE, deadline=None, suppress_health_check=_HEALTH)
FEWER = settings(max_examples=60 * _SCALE, deadline=None, suppress_health_check=_HEALTH)

I64 = st.one_of(st.integers(-(2**63), 2**63 - 1), st.sampled_from([0, -1, 2**63 - 1, -(2**63)]))
I32 = st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([0, -1, 1, 2**31 - 1, -(2**31)]))
I16 = st.integers(-(2**15), 2**15 - 1)


# -- strategies ---------------------------------------------------------------------------------

small_bytes = st.binary(max_size=24)
maybe_bytes = st.one_of(st.none(), small_bytes)
headers = st.lists(st.tuples(st.text(max_size=6), maybe_bytes), max_size=3).map(tuple)


@st.composite
def batch_specs(draw, magic=None) -> BatchSpec:
    """A well-formed batch of random content (what a producer and broker could write)."""
    magic = draw(st.sampled_from([0, 1, 2])) if magic is None else magic
    if magic == 2 and draw(st.integers(0, 5)) == 0:
        control = ControlSpec(draw(st.sampled_from([0, 1])), coordinator_epoch=draw(st.integers(0, 2**31 - 1)))
        return BatchSpec(
            control=control,
            producer_id=draw(st.integers(0, 2**40)),
            producer_epoch=draw(st.integers(0, 2**15 - 1)),
            transactional=True,
        )
    codec = draw(st.sampled_from([0, 1, 2, 3, 4] if magic == 2 else [0, 1, 2, 3]))
    n = draw(st.integers(1, 5))
    recs = tuple(
        RecordSpec(
            key=draw(maybe_bytes),
            value=draw(maybe_bytes),
            headers=draw(headers) if magic == 2 else (),
            timestamp=draw(st.one_of(st.none(), st.integers(0, 2**41))) if magic >= 1 else None,
        )
        for _ in range(n)
    )
    fields = {}
    if magic == 2:
        idempotent = draw(st.booleans())
        if idempotent:
            fields = {
                "producer_id": draw(st.integers(0, 2**40)),
                "producer_epoch": draw(st.integers(0, 2**15 - 1)),
                "base_sequence": draw(st.integers(0, 2**31 - 1)),
                "transactional": draw(st.booleans()),
            }
    timestamp_type = draw(st.sampled_from([0, 1])) if magic >= 1 else 0
    return BatchSpec(
        records=recs,
        magic=magic,
        codec=codec,
        timestamp_type=timestamp_type,
        log_append_time=TS_BASE + 5 if timestamp_type else None,
        **fields,
    )


@st.composite
def segments(draw, max_batches: int = 4) -> tuple[bytes, list[tuple[int, int, BatchSpec]]]:
    """Bytes of a valid segment and the (start, end, spec) of each written append."""
    specs = draw(st.lists(batch_specs(), min_size=1, max_size=max_batches))
    out = bytearray()
    spans = []
    offset = 0
    for drawn in specs:
        n = max(1, len(drawn.records))
        spec = BatchSpec(**{**{f: getattr(drawn, f) for f in drawn.__dataclass_fields__}, "base_offset": offset})
        data = encode_batch(spec)
        spans.append((len(out), len(out) + len(data), spec))
        out += data
        offset += n
    return bytes(out), spans


def _fix_crcs(data: bytearray) -> None:
    """Recompute the CRC of every batch/message whose framing holds (so damage reaches the
    decoders behind the CRC)."""
    pos = 0
    while pos + 17 <= len(data):
        (size,) = struct.unpack_from(">i", data, pos + 8)
        end = pos + 12 + size
        if size < 14 or end > len(data):
            return
        magic = data[pos + 16]
        if magic == 2 and size >= 49:
            struct.pack_into(">I", data, pos + 17, crc32c.crc32c(bytes(data[pos + 21 : end])))
        elif magic in (0, 1):
            struct.pack_into(">I", data, pos + 12, zlib.crc32(bytes(data[pos + 16 : end])))
        pos = end


@st.composite
def damaged_segments(draw) -> bytes:
    """Random bytes, or a valid segment with random damage, CRCs recomputed or not."""
    if draw(st.integers(0, 4)) == 0:
        return draw(st.binary(max_size=400))
    data, _ = draw(segments())
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["set", "insert", "delete", "ff"]))
        at = draw(st.integers(0, max(0, len(buf) - 1)))
        if kind == "set" and buf:
            buf[at] = draw(st.integers(0, 255))
        elif kind == "insert":
            buf[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del buf[at : at + draw(st.integers(1, 8))]
        else:
            buf[at : at + 6] = b"\xff" * 6
    if draw(st.booleans()):
        _fix_crcs(buf)
    return bytes(buf)


def _check_problem(problem: Problem, size: int) -> None:
    assert problem.check in CHECKS
    assert 0 <= problem.position <= size


_TMP = tempfile.TemporaryDirectory(prefix="kafka-audit-properties-")


def _segment_file(data: bytes, name: str = "seg") -> Path:
    folder = Path(_TMP.name) / f"{name}-0"
    folder.mkdir(exist_ok=True)
    path = folder / f"{0:020d}.log"
    path.write_bytes(data)
    return path


# -- (a) arbitrary bytes: walk, decoders, segment audit -------------------------------------------


@FAST
@given(damaged_segments())
def test_arbitrary_bytes_never_raise_and_problems_are_catalogued(data):
    for item in iter_batches(data):
        if isinstance(item, Problem):
            _check_problem(item, len(data))
            continue
        assert isinstance(item, RecordBatch)
        assert item.position >= 0 and item.position + item.size <= len(data)
        for with_data in (True, False):
            decoded = read_batch_records(data, item, with_data=with_data)
            for problem in decoded.problems:
                _check_problem(problem, len(data))
            if item.is_control and decoded.records:
                parse_control_record(decoded.records[0])


@FEWER
@given(damaged_segments(), st.sampled_from(["t", "__consumer_offsets"]))
def test_the_segment_audit_of_arbitrary_bytes_never_raises(data, topic):
    path = _segment_file(data)
    task = segment_task(topic, 0, "t-0", str(path), "t-0/seg.log", 0, size=len(data))
    config = ValidationConfig(timestamp_before_max_ms=10, timestamp_after_max_ms=10)
    for item in SegmentAuditor(task, config, reference_time=TS_BASE).run():
        if isinstance(item, BatchSummary):
            assert 0 <= item.position < len(data)
        else:
            assert item.check in CHECKS
            assert item.position is None or 0 <= item.position <= len(data)


@FAST
@given(st.one_of(st.binary(max_size=200), damaged_segments()), st.integers(-2, 8), I64, st.booleans(), st.booleans())
def test_the_record_screen_never_passes_what_the_decoder_rejects(data, count, base_timestamp, require_key, bounded):
    """The audit's fast path (screen_records) may only say True where decode_records reads
    ``count`` records without error and every one passes the screen."""
    low, high = (TS_BASE - 10**6, TS_BASE + 10**6) if bounded else (None, None)
    screen = RecordScreen(require_key, low, high)
    if screen_records(data, base_timestamp, count, screen):
        decoded = decode_records(data, 0, base_timestamp, count, None, with_data=False)
        assert decoded.error is None and len(decoded.records) == count
        for record in decoded.records:
            assert record.stored_offset == record.index
            assert not require_key or record.key_size >= 0
            assert low is None or low <= record.timestamp <= high


# Records as a producer or a damaged writer may hold them: any attributes byte (a v2 record's is
# unused by every rule), headers with null values and non-UTF-8 keys, out-of-line deltas, missing keys.
_VARIED_RECORDS = st.lists(
    st.builds(
        RecordSpec,
        key=st.one_of(st.none(), st.binary(max_size=12)),
        value=st.one_of(st.none(), st.binary(max_size=40)),
        headers=st.lists(
            st.tuples(
                st.one_of(st.text(max_size=4), st.binary(max_size=4)), st.one_of(st.none(), st.binary(max_size=6))
            ),
            max_size=3,
        ).map(tuple),
        timestamp=st.one_of(st.none(), st.integers(TS_BASE - 10**7, TS_BASE + 10**7)),
        offset_delta=st.one_of(st.none(), st.integers(-1, 6)),
        attributes=st.integers(0, 255),
    ),
    min_size=1,
    max_size=6,
)


@FAST
@given(_VARIED_RECORDS, st.sampled_from([0, 1]), st.booleans(), st.booleans())
def test_a_screened_batch_has_no_record_violation_and_both_screens_agree(recs, codec, compacted, bounded):
    """The fast path's promise (segment_audit skips validate_records for a batch that passes its
    record_screen): a batch the screen passes gets no record-level violation from the validator,
    whatever its records' attributes and headers; and the compiled screen (_record_screen.c)
    answers exactly as screen_records_py does."""
    data = encode_batch(BatchSpec(records=tuple(recs), base_offset=100, codec=codec))
    (batch,) = [item for item in iter_batches(data) if isinstance(item, RecordBatch)]
    config = ValidationConfig(
        compacted_topics=frozenset({"t"} if compacted else ()),
        timestamp_before_max_ms=10**6 if bounded else None,
        timestamp_after_max_ms=10**6 if bounded else None,
    )
    screen = record_screen(batch, "t", config, TS_BASE)
    records = data[V2_RECORD_BATCH_OVERHEAD:]
    payload = decompress(codec, records, 2, 1 << 20) if codec else records
    python_answer = screen_records_py(payload, batch.base_timestamp, batch.record_count, screen)
    assert screen_records(payload, batch.base_timestamp, batch.record_count, screen) == python_answer
    decoded = read_batch_records(data, batch, with_data=False)
    violations = validate_records(batch, decoded.records, "t", "t-0", config, TS_BASE)
    if python_answer:
        assert decoded.problems == [] and violations == []
    # At most one violation per record (LogValidator.validateRecord stops at the first rule).
    indexes = [v.record_index for v in violations]
    assert len(indexes) == len(set(indexes))


# -- (b) round trip -----------------------------------------------------------------------------


def _decode_all(data: bytes):
    batches, records = [], []
    for item in iter_batches(data):
        assert not isinstance(item, Problem), item
        decoded = read_batch_records(data, item, with_data=True)
        assert decoded.problems == []
        batches.append(item)
        records.extend(decoded.records)
    return batches, records


@FAST
@given(batch_specs())
def test_writer_batches_decode_back_to_their_records(spec):
    base = 1000
    spec = BatchSpec(**{**{f: getattr(spec, f) for f in spec.__dataclass_fields__}, "base_offset": base})
    data = encode_batch(spec)
    batches, decoded = _decode_all(data)
    if spec.control is not None:
        (batch,) = batches
        assert batch.is_control and batch.is_transactional
        assert (batch.producer_id, batch.producer_epoch) == (spec.producer_id, spec.producer_epoch)
        control = parse_control_record(decoded[0])
        assert control.error is None
        assert (control.type, control.coordinator_epoch) == (spec.control.type, spec.control.coordinator_epoch)
        return
    assert [r.offset for r in decoded] == list(range(base, base + len(spec.records)))
    assert [r.key for r in decoded] == [r.key for r in spec.records]
    assert [r.value for r in decoded] == [r.value for r in spec.records]
    assert [r.key_size for r in decoded] == [-1 if r.key is None else len(r.key) for r in spec.records]
    if spec.magic == 2:
        assert [[(h.key, h.value) for h in r.headers] for r in decoded] == [list(r.headers) for r in spec.records]
        (batch,) = batches
        assert (batch.base_offset, batch.last_offset, batch.record_count) == (base, base + len(spec.records) - 1, len(spec.records))
        assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (
            spec.producer_id,
            spec.producer_epoch,
            spec.base_sequence,
        )
        assert batch.is_transactional == spec.transactional and batch.codec == spec.codec
    if spec.magic >= 1:
        if spec.timestamp_type == 1:
            assert all(r.timestamp == TS_BASE + 5 for r in decoded)
        else:
            expected = [TS_BASE + i if r.timestamp is None else r.timestamp for i, r in enumerate(spec.records)]
            assert [r.timestamp for r in decoded] == expected
    else:
        assert all(r.timestamp == -1 for r in decoded)


# -- (c) one flipped byte / a truncation of a valid segment --------------------------------------


def _audit_segment(data: bytes, topic: str = "flip"):
    path = _segment_file(data, topic)
    return audit_in_process(discover([str(path.parent)]), ScanOptions())


def _entries(data: bytes) -> list[tuple[int, int, int]]:
    """(start, end, magic) of each top-level batch/message of a valid segment."""
    out = []
    pos = 0
    while pos < len(data):
        (size,) = struct.unpack_from(">i", data, pos + 8)
        out.append((pos, pos + 12 + size, data[pos + 16]))
        pos += 12 + size
    return out


def _read_without_finding(data: bytes, at: int) -> bool:
    """Bytes a flip may change without any finding: a v2 batch's partitionLeaderEpoch (no check
    reads it), and the base offset of a lone batch (no neighbour to disagree with)."""
    entries = _entries(data)
    for start, end, magic in entries:
        if start <= at < end:
            relative = at - start
            if magic == 2 and 12 <= relative < 16:
                return True
            return relative < 8 and len(entries) == 1
    return False


@FEWER
@given(segments(max_batches=3), st.data())
def test_one_flipped_byte_of_a_valid_segment_is_found_or_harmless(segment, data):
    raw, spans = segment
    # A valid segment may have findings of its own (random producer fields: sequence gaps,
    # orphan markers); a flip must add one.
    before = [f.to_dict() for f in _audit_segment(raw).findings]
    at = data.draw(st.integers(0, len(raw) - 1), label="at")
    flip = data.draw(st.integers(1, 255), label="xor")
    damaged = bytearray(raw)
    damaged[at] ^= flip
    after = [f.to_dict() for f in _audit_segment(bytes(damaged)).findings]
    assert all(f["check"] in CHECKS for f in after)
    if not _read_without_finding(raw, at):
        assert [f for f in after if f not in before], f"flip at byte {at} went unnoticed"


_FRAMING = ("truncated_batch", "invalid_batch_size", "crc_mismatch", "unknown_magic", "decompression_failed",
            "incomplete_tail")


@FEWER
@given(segments(max_batches=3), st.data())
def test_a_truncated_segment_is_an_incomplete_tail_where_it_was_cut(segment, data):
    """The segment is its partition's newest: a cut batch is an incomplete tail (SPEC), and a
    cut that leaves only zero bytes (a batch's base offset 0) is no data at all."""
    raw, spans = segment
    cut = data.draw(st.integers(1, len(raw) - 1), label="cut")
    after = _audit_segment(raw[:cut])
    starts = [start for start, _, _ in _entries(raw)]
    # Producer-state findings of random producer fields may come and go with the lost batches;
    # the framing findings must say exactly where the file was cut.
    framing = [(f.check, f.position) for f in after.findings if f.check in _FRAMING]
    last = max(s for s in starts if s <= cut)
    if cut in starts or not any(raw[last:cut]):
        assert framing == []
    else:
        assert framing == [("incomplete_tail", last)]


# -- (d) sidecars and codecs --------------------------------------------------------------------


def _snapshot_like(draw_bytes: bytes) -> bytes:
    """Half of the time, a snapshot with a valid header and CRC over random entries."""
    body = draw_bytes
    return struct.pack(">hI", 1, crc32c.crc32c(body)) + body


@FAST
@given(st.binary(max_size=300), st.integers(0, 2**63 - 1), st.booleans())
def test_sidecar_parsers_never_raise(data, base_offset, valid_header):
    parsed = [
        OFFSET_INDEX.parse(data, base_offset),
        TIME_INDEX.parse(data, base_offset),
        parse_transaction_index(data),
        parse_producer_snapshot(_snapshot_like(data) if valid_header else data),
        parse_offset_checkpoint(data),
        parse_leader_epoch_checkpoint(data),
        parse_properties(data),
    ]
    for result in parsed:
        for problem in result.problems:
            assert problem.check in CHECKS


checkpoint_text = st.lists(
    st.lists(
        st.one_of(
            st.text(max_size=8),
            st.integers(-(2**70), 2**70).map(str),
            st.sampled_from(["²", "--5", "٣", "9" * 30, "-", ""]),
        ),
        max_size=4,
    ).map(" ".join),
    max_size=5,
).map(lambda lines: "\n".join(lines).encode("utf-8", errors="surrogatepass"))


@FAST
@given(checkpoint_text)
def test_checkpoint_parsers_never_raise_on_text(data):
    for parse in (parse_offset_checkpoint, parse_leader_epoch_checkpoint, parse_properties):
        result = parse(data)
        for entry in result.entries:
            for name in ("partition", "epoch"):
                if hasattr(entry, name):
                    assert -(2**31) <= getattr(entry, name) < 2**31
            if hasattr(entry, "offset"):
                assert -(2**63) <= entry.offset < 2**63


@st.composite
def payloads(draw) -> tuple[int, bytes, int]:
    codec = draw(st.integers(-1, 8))
    magic = draw(st.sampled_from([0, 1, 2]))
    if 1 <= codec <= 4 and draw(st.booleans()):
        data = bytearray(compress(codec, draw(st.binary(max_size=300)) * draw(st.integers(1, 50)), magic))
        for _ in range(draw(st.integers(0, 3))):
            if data:
                data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        if draw(st.booleans()):
            data = data[: draw(st.integers(0, len(data)))]
        return codec, bytes(data), magic
    return codec, draw(st.binary(max_size=300)), magic


@FAST
@given(payloads(), st.integers(0, 4096))
def test_decompress_raises_only_decompression_error_and_respects_the_cap(payload, max_size):
    codec, data, magic = payload
    try:
        out = decompress(codec, data, magic, max_size)
    except DecompressionError:
        return
    assert len(out) <= max_size


# -- (e) the producer-state replay over random batch summaries -----------------------------------

sequences = st.one_of(st.integers(-1, 12), st.sampled_from([2**31 - 1, 2**31 - 2, -(2**31)]))


@st.composite
def summaries(draw) -> list[BatchSummary]:
    out = []
    offset = draw(st.integers(0, 5))
    for position in range(draw(st.integers(0, 25))):
        count = draw(st.integers(0, 3))
        base = offset if draw(st.integers(0, 6)) else draw(I64)
        last = base + max(count - 1, 0) if draw(st.integers(0, 6)) else draw(I64)
        control = draw(st.integers(0, 5)) == 0
        base_sequence = -1 if control else draw(sequences)
        # BatchSummary.of: RecordBatch.last_sequence wraps at 2^31-1 (DefaultRecordBatch.incrementSequence).
        last_sequence = increment_sequence(base_sequence, last - base) if base_sequence >= 0 and -(2**31) < last - base < 2**31 else base_sequence
        out.append(
            BatchSummary(
                topic="t",
                partition=0,
                segment=f"t-0/{draw(st.sampled_from([0, 100])):020d}.log",
                segment_base_offset=draw(st.sampled_from([0, 100])),
                position=position * 100,
                base_offset=base,
                last_offset=last,
                magic=draw(st.sampled_from([2, 2, 2, 1])),
                valid=draw(st.integers(0, 8)) != 0,
                producer_id=draw(st.sampled_from([-1, 1, 2, 3, 2**63 - 1])),
                producer_epoch=draw(st.one_of(st.integers(-1, 3), st.just(2**15 - 1))),
                base_sequence=base_sequence,
                last_sequence=last_sequence,
                is_transactional=draw(st.booleans()),
                is_control=control,
                control_type=draw(st.integers(-1, 6)) if control else -1,
                coordinator_epoch=draw(st.integers(-1, 3)) if control else -1,
                max_timestamp=draw(st.one_of(st.just(-1), st.integers(0, 2**41), I64)),
                record_count=count,
                size=100,
            )
        )
        offset = max(offset, last) + 1 if last < 2**62 else offset + 1
    return out


@st.composite
def snapshot_objects(draw):
    entries = [
        ProducerSnapshotEntry(
            producer_id=draw(st.sampled_from([1, 2, 3, 9])),
            producer_epoch=draw(st.one_of(st.integers(-1, 3), I16)),
            last_sequence=draw(st.one_of(sequences, I32)),
            last_offset=draw(st.one_of(st.integers(-1, 40), I64)),
            offset_delta=draw(st.one_of(st.integers(0, 3), I32)),
            timestamp=draw(I64),
            coordinator_epoch=draw(I32),
            current_txn_first_offset=draw(st.one_of(st.integers(-1, 40), I64)),
        )
        for _ in range(draw(st.integers(0, 3)))
    ]
    return ProducerSnapshot("s.snapshot", draw(st.integers(0, 60)), entries, [], True)


@FAST
@given(
    summaries(),
    st.lists(snapshot_objects(), max_size=2),
    st.integers(0, 10),
    st.booleans(),
    st.sampled_from(["t", "__consumer_offsets"]),
)
def test_the_producer_state_replay_never_raises(batches, snapshots, log_start, compacted, topic):
    batches = [b._replace(topic=topic) for b in batches]
    txn_index = {"t-0/" + f"{0:020d}.log": [AbortedTxn(0, 1, 0, 3, 0)]}
    log = PartitionLog(topic, 0, log_start, snapshots, txn_index, ReplaySettings(compacted=compacted))
    for finding in replay_partition(log, batches):
        assert finding.check in CHECKS
    continuity = OffsetContinuity(compacted)
    for batch in batches:
        for finding in continuity.observe(batch):
            assert finding.check in CHECKS
