"""The segment step's quick path through a v2 batch's payload: inflated and screened in one call.

:func:`screen_payload` answers whether a batch's records, decompressed as
:func:`~kafka_audit.record.batch_records.v2_records_data` decompresses them, pass a
:class:`RecordScreen`; the compiled ``_record_screen.screen_payload`` does it without building a
Python object per batch (LZ4 and zstd framing walked in C, the same library calls inflating).
"""

from __future__ import annotations

from kafka_audit.record.batch_records import max_decompressed_size, v2_records_data
from kafka_audit.record.compression import LZ4_BLOCK_INTO, ZSTD_DECOMPRESSOR, DecompressionError
from kafka_audit.record.default_record import RecordScreen, decode_records, screen_records_py
from kafka_audit.record.record_batch import RecordBatch

try:  # the optional C build of screen_payload_py (see screen_payload)
    from kafka_audit.record._record_screen import screen_payload as _compiled_payload_screen
except ImportError:  # not built: the pure-Python screen runs
    _compiled_payload_screen = None


def screen_payload(buf, batch: RecordBatch, screen: RecordScreen, want_record: bool = False):
    """Whether a v2 batch's records, decompressed, pass ``screen``: the audit's fast path, one
    call per batch. The compiled ``_record_screen.screen_payload`` when built, else
    :func:`screen_payload_py`; None where the compiled one does not take the batch on (a codec
    or framing it leaves to :mod:`.compression`, a library error): the caller then reads the
    batch with ``batch_records.read_batch_records``, as it does for False. Where it answers, it
    answers as :func:`screen_payload_py` (``tests/test_quick_path.py`` holds the two to it)."""
    if _compiled_payload_screen is not None:
        return _compiled_payload_screen(
            buf, batch, screen, max_decompressed_size(batch), want_record, LZ4_BLOCK_INTO, ZSTD_DECOMPRESSOR
        )
    return screen_payload_py(buf, batch, screen, want_record)


def screen_payload_py(buf, batch: RecordBatch, screen: RecordScreen, want_record: bool = False):
    """True when the v2 batch's payload decompresses (:func:`v2_records_data`) and its records
    pass ``screen`` (:func:`screen_records_py`), else False. With ``want_record``, a batch of one
    record that passes answers its ``(key, value)`` instead of True (a control batch's record)."""
    try:
        data = v2_records_data(buf, batch)
    except DecompressionError:
        return False
    count = batch.record_count or 0
    if not screen_records_py(data, batch.base_timestamp, count, screen):
        return False
    if want_record and count == 1:
        record = decode_records(bytes(data), batch.base_offset, batch.base_timestamp, 1, None).records[0]
        return record.key, record.value
    return True
