"""``dump`` (SPEC section 3): decode segments and sidecar files, like kafka-dump-log --deep-iteration."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from kafka_audit.cli.options import DumpFormat, RedactKeyOption, RedactOption, check_paths, fail


def dump(
    files: Annotated[list[Path], typer.Argument(metavar="FILE", help="Segment (.log) or sidecar files to decode.")],
    format: Annotated[DumpFormat, typer.Option("--format", help="text (kafka-dump-log-like) or json lines.")] = DumpFormat.text,
    records: Annotated[bool, typer.Option("--records", help="Also decode every record (deep iteration).")] = False,
    print_data: Annotated[bool, typer.Option("--print-data", help="Also print keys and values (implies --records).")] = False,
    redact: RedactOption = False,
    redact_key: RedactKeyOption = None,
) -> None:
    """Decode segments and sidecar files, like kafka-dump-log --deep-iteration."""
    from kafka_audit.report.dump import dump_file
    from kafka_audit.report.redact import Redactor

    if redact_key is not None and not redact:
        raise fail("--redact-key needs --redact")
    redactor = Redactor(redact_key) if redact else None

    check_paths(files)
    for path in files:
        if path.is_dir():
            raise fail(f"{path}: is a directory; dump takes files")
        if not path.is_file():
            raise fail(f"{path}: not a regular file")
    write = sys.stdout.write
    for path in files:
        for chunk in dump_file(str(path), as_json=format is DumpFormat.json, records=records or print_data,
                               print_data=print_data, redact=redactor):
            write(chunk)
