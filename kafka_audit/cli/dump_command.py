"""``dump`` (SPEC section 3): decode segments and sidecar files, like kafka-dump-log --deep-iteration."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kafka_audit.cli.options import DumpFormat, fail, option_annotation
from kafka_audit.log.log_names import (
    CLUSTER_METADATA,
    CONSUMER_OFFSETS,
    REMOTE_LOG_METADATA,
    SHARE_GROUP_STATE,
    TRANSACTION_STATE,
)

if TYPE_CHECKING:  # what the option table gives Typer, as types
    from kafka_audit.io.storage_context import StorageContext

    RsmKeyFileOption = Path | None
    RedactOption = bool
    RedactKeyOption = str | None
else:  # report's options, as the option table declares them
    RsmKeyFileOption = option_annotation("rsm_key_file")
    RedactOption = option_annotation("redact")
    RedactKeyOption = option_annotation("redact_key")


def _not_negative(value: int | None) -> int | None:
    """``--max-bytes``: checked here, not by ``min=``, whose range typer prints beside the metavar
    (and so cuts option names at 80 columns)."""
    if value is not None and value < 0:
        raise typer.BadParameter("must be 0 or more")
    return value


def _decoder_flag(flag: str, topic: str) -> Any:
    """A decoder option: a flag alone, as kafka-dump-log's (no ``--no-`` form)."""
    return typer.Option(flag, help=f"Decode every record as {topic} records, whatever the folder (implies --print-data).")


# kafka-dump-log's decoder options (DumpLogSegmentsOptions), each the internal topic whose records it decodes.
_DECODERS = {
    "offsets_decoder": ("--offsets-decoder", CONSUMER_OFFSETS),
    "transaction_log_decoder": ("--transaction-log-decoder", TRANSACTION_STATE),
    "cluster_metadata_decoder": ("--cluster-metadata-decoder", CLUSTER_METADATA),
    "remote_log_metadata_decoder": ("--remote-log-metadata-decoder", REMOTE_LOG_METADATA),
    "share_group_state_decoder": ("--share-group-state-decoder", SHARE_GROUP_STATE),
}


def dump(
    files: Annotated[list[Path], typer.Argument(metavar="FILE", help="Segment (.log) or sidecar files to decode.")],
    format: Annotated[DumpFormat, typer.Option("--format", metavar="FORMAT", help="text (kafka-dump-log-like) or json lines.")] = DumpFormat.text,
    records: Annotated[bool, typer.Option("--records", help="Also decode every record (deep iteration).")] = False,
    print_data: Annotated[bool, typer.Option("--print-data", help="Also print keys and values (implies --records).")] = False,
    offsets_decoder: Annotated[bool, _decoder_flag("--offsets-decoder", CONSUMER_OFFSETS)] = False,
    transaction_log_decoder: Annotated[bool, _decoder_flag("--transaction-log-decoder", TRANSACTION_STATE)] = False,
    cluster_metadata_decoder: Annotated[bool, _decoder_flag("--cluster-metadata-decoder", CLUSTER_METADATA)] = False,
    remote_log_metadata_decoder: Annotated[bool, _decoder_flag("--remote-log-metadata-decoder", REMOTE_LOG_METADATA)] = False,
    share_group_state_decoder: Annotated[bool, _decoder_flag("--share-group-state-decoder", SHARE_GROUP_STATE)] = False,
    max_bytes: Annotated[int | None, typer.Option(
        "--max-bytes", metavar="N", callback=_not_negative,
        help="Read only the batches within a segment's first N bytes.")] = None,
    skip_record_metadata: Annotated[bool, typer.Option(
        "--skip-record-metadata", help="Print each record's data without its offset, timestamp, sizes and headers.")] = False,
    verify_index_only: Annotated[bool, typer.Option(
        "--verify-index-only", help="Check .index/.timeindex entries against their segment without printing them.")] = False,
    index_sanity_check: Annotated[bool, typer.Option(
        "--index-sanity-check", help="Only the sanity check a broker runs on an index at start-up.")] = False,
    rsm_key_file: RsmKeyFileOption = None,
    redact: RedactOption = False,
    redact_key: RedactKeyOption = None,
) -> None:
    """Decode segments and sidecar files, like kafka-dump-log --deep-iteration."""
    from kafka_audit.report.dump import dump_file
    from kafka_audit.report.dump_checks import DumpOptions
    from kafka_audit.report.redact import Redactor
    from kafka_audit.report.safe_text import escape_text

    if redact_key is not None and not redact:
        raise fail("--redact-key needs --redact")
    chosen = [name for name, given in (
        ("offsets_decoder", offsets_decoder), ("transaction_log_decoder", transaction_log_decoder),
        ("cluster_metadata_decoder", cluster_metadata_decoder),
        ("remote_log_metadata_decoder", remote_log_metadata_decoder),
        ("share_group_state_decoder", share_group_state_decoder)) if given]
    if len(chosen) > 1:
        raise fail(f"{' and '.join(_DECODERS[name][0] for name in chosen)}: give one decoder")
    if skip_record_metadata and format is DumpFormat.json:
        raise fail("--skip-record-metadata applies to --format text (JSON records keep their fields)")
    options = DumpOptions(
        decoder_topic=_DECODERS[chosen[0]][1] if chosen else None,
        max_bytes=max_bytes,
        skip_record_metadata=skip_record_metadata,
        index_mode="sanity" if index_sanity_check else "verify" if verify_index_only else None,
    )
    # A decoder turns on record printing by itself (DumpLogSegmentsOptions.shouldPrintDataLog).
    print_data = print_data or bool(chosen)
    redactor = Redactor(redact_key) if redact else None

    with _storage_and_paths(files, rsm_key_file) as storage:  # the key, if given
        for path in files:
            if path.is_dir():
                raise fail(f"{path}: is a directory; dump takes files")
            if not path.is_file():
                raise fail(f"{path}: not a regular file")
        write = sys.stdout.write
        for path in files:
            for chunk in dump_file(str(path), as_json=format is DumpFormat.json, records=records or print_data,
                                   print_data=print_data, redact=redactor, options=options, storage=storage):
                write(chunk)
        sys.stdout.flush()
    # What DumpLogSegments says after the last file: index mismatches, non-consecutive offsets.
    for line in options.summaries.lines():
        print(escape_text(line), file=sys.stderr)  # file names in them are data: shown escaped


def _storage_and_paths(files: list[Path], rsm_key_file: Path | None) -> StorageContext:
    """The command's storage context, holding the ``--rsm-key-file`` key, with the FILEs checked
    under it (exit 2 naming the cause)."""
    from kafka_audit.api.request import RequestError
    from kafka_audit.api.runner import check_paths, read_rsm_key
    from kafka_audit.io.storage import StorageSettings
    from kafka_audit.io.storage_context import StorageContext

    try:
        key = read_rsm_key(str(rsm_key_file)) if rsm_key_file else None
    except RequestError as exc:
        raise fail(str(exc)) from None
    storage = StorageContext(StorageSettings(rsm_key=key))
    try:
        check_paths([str(f) for f in files], storage)
    except RequestError as exc:
        storage.close()
        raise fail(str(exc)) from None
    return storage
