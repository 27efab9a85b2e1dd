"""``kafka-audit dump``: decode segments and sidecar files for a postmortem.

Text lines follow ``kafka.tools.DumpLogSegments`` (``kafka-dump-log --deep-iteration
--print-data-log``); ``--format json`` prints one object per batch (per top-level message for
v0/v1) or per sidecar entry, with the fields of SPEC section 3. Problems found while decoding
are printed in place, never raised.

Output goes out a batch at a time: :func:`dump_file` yields one text chunk per batch. The record
lines of a v2 data batch come from the compiled formatter (``_record_text.c``) when it is built:
it reads the records and writes their lines in one call, without a :class:`Record` per record;
anything it cannot format exactly as the Python path would (damaged records, control batches,
v0/v1) goes through :func:`record_lines`, the Python record-printing loop.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator, Sequence
from typing import Any, cast

from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.internal_topics import Decoder, decoder_for, decoder_for_topic, is_kraft_snapshot
from kafka_audit.log.metadata_records import decode_kraft_control
from kafka_audit.record.batch_records import v2_records_data
from kafka_audit.record.compression import DecompressionError
from kafka_audit.record.control_record import parse_control_record
from kafka_audit.record.file_records import FileRecords
from kafka_audit.record.problem import Problem
from kafka_audit.record.record_batch import (
    MAGIC_VALUE_V2,
    TIMESTAMP_TYPE_MASK,
    ControlRecordType,
    Record,
    RecordBatch,
    TimestampType,
)
from kafka_audit.report.dump_checks import (
    DumpOptions,
    OffsetFollower,
    compiled_offsets,
)
from kafka_audit.report.dump_sidecars import dump_sidecar, problem_line
from kafka_audit.report.redact import Redactor
from kafka_audit.report.safe_text import dumps, escape_text

try:
    from kafka_audit.record._record_text import record_text as _compiled_record_text
except ImportError:  # not built: the Python loop prints every record
    _compiled_record_text = None


def dump_file(
    path: str, as_json: bool, records: bool, print_data: bool, redact: Redactor | None = None,
    options: DumpOptions | None = None, storage: StorageContext | None = None,
) -> Iterator[str]:
    """Text describing ``path``, chosen by its name as DumpLogSegments does: chunks of whole
    lines, each line ending in a newline (a segment: one chunk per batch). With ``redact``
    (``--redact``) every record is printed with its key, value and header values replaced by
    their length and keyed hash; internal topics' records are then not decoded by their schema
    (their keys and values are group and transactional ids), control records still are.
    ``options``: kafka-dump-log's further options; what they find is added to its summaries.
    ``storage``: the command's (``--rsm-key-file``'s key for a tiered-storage plugin's segment)."""
    if redact is not None:
        records, print_data = True, True
    for chunk in _dump_chunks(path, as_json, records, print_data, redact, options or DumpOptions(), storage):
        yield chunk if chunk.endswith("\n") else chunk + "\n"


def _dump_chunks(
    path: str, as_json: bool, records: bool, print_data: bool, redact: Redactor | None, options: DumpOptions,
    storage: StorageContext | None,
) -> Iterator[str]:
    name = os.path.basename(path)
    stem = name.removesuffix(".deleted")
    if not as_json:
        yield f"Dumping {escape_text(path)}"
    try:
        if stem.endswith((".log", ".cleaned", ".swap")) or is_kraft_snapshot(path):
            yield from _dump_segment(path, as_json, records, print_data, redact, options, storage)
        else:
            yield from dump_sidecar(path, stem, as_json, options)
    except OSError as exc:
        yield problem_line(path, None, "unreadable", f"cannot read: {exc.strerror or exc}", as_json)


def _dump_segment(
    path: str, as_json: bool, records: bool, print_data: bool, redact: Redactor | None, options: DumpOptions,
    storage: StorageContext | None,
) -> Iterator[str]:
    """One chunk per batch: its line (or JSON object), its problems, its records' lines. With
    ``records``, an internal topic's records are also decoded by their schema, as DumpLogSegments'
    decoders do (``decoded``; ``options.decoder_topic`` names the topic whatever the folder). Then,
    without ``max_bytes``, DumpLogSegments' "Found N invalid bytes at the end" of a segment whose
    batches from its start do not reach its end."""
    decoder = None
    if records and redact is None:
        decoder = decoder_for_topic(options.decoder_topic) if options.decoder_topic else decoder_for(path)
    follower = OffsetFollower(path, options.summaries) if records else None
    valid_end, contiguous = 0, True
    with FileRecords(path, storage=storage) as segment:
        for item in segment.batches():
            if options.max_bytes is not None and (item.position or 0) + (0 if isinstance(item, Problem) else item.size) > options.max_bytes:
                break  # FileRecords.slice(0, maxBytes): the batches wholly within the first N bytes
            if isinstance(item, Problem):
                contiguous = False
                yield problem_line(path, item.position, item.check, item.message, as_json)
                continue
            if contiguous:
                valid_end = item.position + item.size
            yield _batch_chunk(segment, path, item, as_json, records, print_data, decoder, redact, options, follower)
        size = segment.size
    if options.max_bytes is None and size > valid_end:
        yield problem_line(path, valid_end, "invalid_bytes",
                            f"Found {size - valid_end} invalid bytes at the end of {os.path.basename(path)}", as_json, bare=True)


def _batch_chunk(
    segment: FileRecords, path: str, item: RecordBatch, as_json: bool, records: bool, print_data: bool,
    decoder: Decoder | None, redact: Redactor | None, options: DumpOptions, follower: OffsetFollower | None,
) -> str:
    """One batch's chunk of :func:`_dump_segment`: its line or JSON object, problems and records;
    the records' offsets go to ``follower`` (DumpLogSegments' non-consecutive offsets)."""
    with_data = print_data or item.is_control or decoder is not None
    if as_json:
        decoded = segment.records(item, with_data=with_data) if records or item.magic < MAGIC_VALUE_V2 else None
        if decoded is not None and decoded.batch is not None:
            item = decoded.batch  # a v0/v1 wrapper as its inner set describes it (base offset, count)
        if follower is not None and decoded is not None:
            follower.follow([r.offset for r in decoded.records])
        lines = [dumps(_batch_json(path, item, decoded if records else None, print_data, decoder, redact))]
        problems = decoded.problems if decoded is not None else []
        lines.extend(problem_line(path, p.position, p.check, p.message, True) for p in problems)
        return "\n".join(lines)
    if records:
        plain = decoder is None and redact is None and not options.skip_record_metadata
        text = _compiled_lines(segment, item, print_data) if plain else None
        if text is not None:
            if follower is not None:
                offsets = compiled_offsets(text, item.record_count)
                follower.follow(offsets if offsets is not None else
                                [r.offset for r in segment.records(item, with_data=False).records])
            return f"{_batch_text(item)}\n{text}"
    elif item.magic >= MAGIC_VALUE_V2:
        return _batch_text(item)
    decoded = segment.records(item, with_data=with_data)
    if decoded.batch is not None:
        item = decoded.batch  # a v0/v1 wrapper as its inner set describes it (base offset, count)
    lines = [_batch_text(item)]
    lines.extend(problem_line(path, p.position, p.check, p.message, False) for p in decoded.problems)
    if records:
        if follower is not None:
            follower.follow([r.offset for r in decoded.records])
        lines.append(record_lines(item, decoded.records, print_data, decoder, redact, options.skip_record_metadata))
    return "\n".join(lines)


def _compiled_lines(segment: FileRecords, batch: RecordBatch, print_data: bool) -> str | None:
    """The record lines of a v2 data batch from the compiled formatter, or None where it does not
    apply (not built, v0/v1, control batch) or cannot give exactly the Python path's text. It
    prints keys and values as text: records whose values dump decodes otherwise (a decoder hooked
    into :func:`record_lines`) must not come here."""
    if _compiled_record_text is None or batch.magic < MAGIC_VALUE_V2 or batch.is_control:
        return None
    try:
        data = v2_records_data(segment.buffer, batch)
    except DecompressionError:
        return None  # the Python path reports it
    log_append_time = batch.max_timestamp if batch.attributes & TIMESTAMP_TYPE_MASK else None
    return _compiled_record_text(
        data,
        batch.base_offset,
        batch.base_timestamp,
        log_append_time,
        _TIMESTAMP_TYPE_NAMES[batch.timestamp_type],
        batch.base_sequence,
        batch.record_count,
        print_data,
    )


def record_lines(
    batch: RecordBatch, records: Sequence[Record], print_data: bool, decoder: Decoder | None = None,
    redact: Redactor | None = None, skip_metadata: bool = False,
) -> str:
    """The Python record-printing loop: one :func:`_record_text` line per record, joined (no
    newline after the last). What the compiled formatter prints for a v2 data batch, and the only
    path for control batches, v0/v1 and records that need decoding of their own."""
    return "\n".join([_record_text(batch, record, print_data, decoder, redact, skip_metadata) for record in records])


def _batch_json(
    path: str, batch: RecordBatch, decoded, print_data: bool, decoder: Decoder | None = None,
    redact: Redactor | None = None,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "file": path,
        "position": batch.position,
        "base_offset": batch.base_offset,
        "last_offset": batch.last_offset,
        "magic": batch.magic,
        "size": batch.size,
        "compression": batch.compression,
        "crc": batch.stored_crc,
        "crc_valid": batch.crc_valid,
        "record_count": batch.record_count,
        "producer_id": batch.producer_id,
        "producer_epoch": batch.producer_epoch,
        "base_sequence": batch.base_sequence,
        "is_transactional": batch.is_transactional,
        "is_control": batch.is_control,
        "partition_leader_epoch": batch.partition_leader_epoch,
        "timestamp_type": batch.timestamp_type.name,
        "base_timestamp": batch.base_timestamp,
        "max_timestamp": batch.max_timestamp,
    }
    if decoded is not None and batch.is_control and decoded.records:
        control = parse_control_record(decoded.records[0])
        data["control"] = {"version": control.version, "type": control.type,
                           "coordinator_epoch": control.coordinator_epoch, "error": control.error}
    if decoded is not None:
        data["records"] = [_record_json(r, print_data, redact) for r in decoded.records]
        for entry, record in zip(data["records"], decoded.records):
            if batch.is_control:
                control = parse_control_record(record)
                kraft = None if control.error else decode_kraft_control(control.type, record.value)
                if kraft is not None:
                    entry["decoded"] = kraft
            elif decoder is not None:
                entry["decoded"] = decoder(record.key, record.value)
    return data


def _record_json(record: Record, print_data: bool, redact: Redactor | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key_size": record.key_size,
        "value_size": record.value_size,
        "headers": record.header_count,
    }
    if redact is not None:
        data["headers"] = [{"key": h.key, "value": redact(h.value)} for h in record.headers]
        data["key"], data["value"] = redact(record.key), redact(record.value)
    elif print_data:
        data["headers"] = [_bytes_field("key", h.key.encode(), {}) | _bytes_field("value", h.value, {}) for h in record.headers]
        _bytes_field("key", record.key, data, record.key_size)
        _bytes_field("value", record.value, data, record.value_size)
    return data


def _bytes_field(name: str, value: bytes | None, into: dict[str, Any], size: int | None = None) -> dict[str, Any]:
    """UTF-8 text where valid, else base64 under ``<name>_b64`` (SPEC section 3). A key or value
    of a batch read as a stream is a bounded prefix of its ``size`` bytes: ``<name>_truncated``."""
    if value is None:
        into[name] = None
        return into
    if size is not None and len(value) < size:
        into[f"{name}_truncated"] = True
    try:
        into[name] = value.decode("utf-8")
    except UnicodeDecodeError:
        into[f"{name}_b64"] = base64.b64encode(value).decode("ascii")
    return into


_TIMESTAMP_TYPE_NAMES = {
    TimestampType.NO_TIMESTAMP_TYPE: "NoTimestampType",
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}


def _batch_text(batch: RecordBatch) -> str:
    """DumpLogSegments' batch line (v2) or message line (v0/v1)."""
    ts_type = _TIMESTAMP_TYPE_NAMES[batch.timestamp_type]
    if batch.magic >= MAGIC_VALUE_V2:
        return (
            f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {batch.record_count} "
            f"baseSequence: {batch.base_sequence} lastSequence: {batch.last_sequence} "
            f"producerId: {batch.producer_id} producerEpoch: {batch.producer_epoch} "
            f"partitionLeaderEpoch: {batch.partition_leader_epoch} isTransactional: {str(batch.is_transactional).lower()} "
            f"isControl: {str(batch.is_control).lower()} position: {batch.position} {ts_type}: {batch.max_timestamp} "
            f"size: {batch.size} magic: {batch.magic} compresscodec: {batch.compression} crc: {batch.stored_crc} "
            f"isvalid: {str(batch.crc_valid).lower()}"
        )
    return (
        f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {batch.record_count} "
        f"position: {batch.position} {ts_type}: {batch.max_timestamp} size: {batch.size} magic: {batch.magic} "
        f"compresscodec: {batch.compression} crc: {batch.stored_crc} isvalid: {str(batch.crc_valid).lower()}"
    )


def _record_text(
    batch: RecordBatch, record: Record, print_data: bool, decoder: Decoder | None = None,
    redact: Redactor | None = None, skip_metadata: bool = False,
) -> str:
    """One record's line: its metadata, then its data (decoded, redacted or printed). With
    ``skip_metadata`` (DumpLogSegments' ``--skip-record-metadata``), the data alone."""
    control = batch.is_control and record.key is not None
    data = "" if control else _record_data(record, print_data, decoder, redact)
    if skip_metadata:
        return f"|{data}" if data else "| "
    return _record_metadata(batch, record, control) + data


def _record_metadata(batch: RecordBatch, record: Record, control: bool) -> str:
    ts_type = _TIMESTAMP_TYPE_NAMES[batch.timestamp_type]
    line = f"| offset: {record.offset} {ts_type}: {record.timestamp} keySize: {record.key_size} valueSize: {record.value_size}"
    if batch.magic >= MAGIC_VALUE_V2:
        sequence = -1 if batch.base_sequence < 0 else batch.base_sequence + record.index
        line += f" sequence: {sequence} headerKeys: [{','.join(escape_text(h.key) for h in record.headers)}]"
    else:
        line += f" magic: {record.magic} compresscodec: {batch.compression if record.magic == batch.magic else 'none'} crc: - isvalid: {str(record.crc_valid is not False).lower()}"
    if control:
        parsed = parse_control_record(record)
        if parsed.error:
            line += f" control: invalid ({parsed.error})"
        else:
            line += f" endTxnMarker: {ControlRecordType(cast(int, parsed.type)).name} coordinatorEpoch: {parsed.coordinator_epoch}" \
                if parsed.is_transaction_marker else f" controlType: {parsed.type}"
            kraft = decode_kraft_control(parsed.type, record.value)
            if kraft is not None:
                line += f" decoded: {dumps(kraft)}"
    return line


def _record_data(record: Record, print_data: bool, decoder: Decoder | None, redact: Redactor | None) -> str:
    if decoder is not None:
        return f" decoded: {dumps(decoder(record.key, record.value))}"
    if redact is not None:
        line = f" key: {redact(record.key) or 'null'} payload: {redact(record.value) or 'null'}"
        if record.headers:
            line += " headers: [" + ",".join(f"{escape_text(h.key)}={redact(h.value)}" for h in record.headers) + "]"
        return line
    if print_data:
        return f" key: {_text(record.key, record.key_size)} payload: {_text(record.value, record.value_size)}"
    return ""


def _text(value: bytes | None, size: int | None = None) -> str:
    """A key or value as text: UTF-8, other bytes as ``\\xNN``, nothing that can act in a
    terminal or CI log (:func:`~kafka_audit.report.safe_text.escape_text`); a bounded prefix (a
    batch read as a stream) says how much of ``size`` it is."""
    if value is None:
        return "null"
    text = escape_text(value.decode("utf-8", errors="surrogateescape"))
    if size is not None and len(value) < size:
        return f"{text}... ({len(value)} of {size} bytes shown)"
    return text
