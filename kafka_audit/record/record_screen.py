"""The audit's fast path through a v2 batch's records: may they need no closer look?

A :class:`RecordScreen` holds the conditions under which the record rules
(:func:`kafka_audit.rules.validation.log_validator.validate_records`, their one home) find nothing to
report; :func:`kafka_audit.rules.validation.log_validator.record_screen` builds it from the rules' settings.
The screen only ever decides that there is nothing to report, as Kafka's
``DefaultRecordBatch.skipKeyValueIterator`` skips what it need not read: where it says False (or
cannot answer), the caller decodes the records and validates them with the one implementation.

The screening is the compiled ``_record_screen`` (C: ``_record_screen.c``, which reads records
through ``_record_grammar.h`` and inflates LZ4/zstd payloads through ``_payload_inflate.h``). It is
optional: an install without a C compiler has none (``setup.py`` says so in one line), and then
:data:`COMPILED` is False and every screen answers False, so every batch is validated in full: the
same findings, more slowly (the driver says so, :data:`SLOWER_NOTICE`). A pure-Python reference
of the same screen, which the tests hold the C one to, is in
``tests/support/record_screen_reference.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_audit.record.batch_records import max_decompressed_size, v2_records_data
from kafka_audit.record.byte_stream import STREAM_BOUND, Buffer
from kafka_audit.record.compression import DecompressionError
from kafka_audit.record.default_record import decode_records
from kafka_audit.record.lz4_frame import LZ4_BLOCK_INTO
from kafka_audit.record.record_batch import RecordBatch
from kafka_audit.record.zstd_frame import ZSTD_DECOMPRESSOR

try:
    from kafka_audit.record import _record_screen  # type: ignore[attr-defined]  # compiled: no stub
except ImportError:  # installed without a C compiler (setup.py said so), or copied without its build
    _compiled_payload = _compiled_records = None
else:
    _compiled_payload, _compiled_records = _record_screen.screen_payload, _record_screen.screen_records

# Whether this process screens batches with the compiled screen (fixed at import).
COMPILED: bool = _compiled_payload is not None
# The driver's one line on stderr when it has no compiled screen.
SLOWER_NOTICE = (
    "kafka-audit: notice: the compiled record screen is not built (installed without a C compiler): "
    "every batch is validated in full, slower, with the same findings"
)


@dataclass(frozen=True, slots=True)
class RecordScreen:
    """The per-record conditions a batch's records are screened against.

    A record passes when its offset delta equals its index, it has a key if ``require_key``, and
    its timestamp (the batch's base timestamp plus the record's delta) is at least
    ``min_timestamp`` and at most ``max_timestamp`` where those are set. The record validator
    builds the screen so that a record passing it cannot break one of its rules.
    """

    require_key: bool = False
    min_timestamp: int | None = None
    max_timestamp: int | None = None


def screen_records(data: bytes | memoryview, base_timestamp: int, record_count: int, screen: RecordScreen) -> bool:
    """True when the v2 records in ``data`` (decompressed) are well-formed and all pass
    ``screen``: ``record_count`` records read as ``decode_records`` reads them, no byte left
    over. False means "look closer", never "wrong" (always False without the compiled screen)."""
    if _compiled_records is None:
        return False
    passed: bool = _compiled_records(
        data, base_timestamp, record_count, screen.require_key, screen.min_timestamp, screen.max_timestamp
    )
    return passed


def screen_payload(
    buf: Buffer, batch: RecordBatch, screen: RecordScreen, want_record: bool | int = False
) -> bool | tuple[bytes | None, bytes | None]:
    """Whether a v2 batch's records, decompressed as :func:`v2_records_data` decompresses them,
    pass ``screen``: the segment step's quick path, one call per batch. With ``want_record``, a
    batch of one record that passes answers its ``(key, value)`` instead of True (a control
    batch's record). Uncompressed, LZ4 and zstd payloads are inflated and screened in one C call;
    other codecs (and framings the C inflater leaves alone) are decompressed here first. A batch
    larger than :data:`STREAM_BOUND`, on disk or inflated, is not screened (False): the full path
    reads it as a stream. Without the compiled screen, always False: the caller validates the
    batch in full."""
    if _compiled_payload is None or batch.size > STREAM_BOUND:
        return False
    passed: bool | tuple[bytes | None, bytes | None] | None = _compiled_payload(
        buf, batch, screen, min(max_decompressed_size(batch), STREAM_BOUND), want_record, LZ4_BLOCK_INTO,
        ZSTD_DECOMPRESSOR,
    )
    if passed is not None:
        return passed
    try:
        data = v2_records_data(buf, batch)
    except DecompressionError:
        return False
    count = batch.record_count or 0
    if not screen_records(data, batch.base_timestamp, count, screen):
        return False
    if want_record and count == 1:
        record = decode_records(bytes(data), batch.base_offset, batch.base_timestamp, 1, None).records[0]
        return record.key, record.value
    return True
