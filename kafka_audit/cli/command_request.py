"""The :class:`~kafka_audit.api.request.ScanRequest` of a command that audits PATHs (``scan``,
``producers``, ``timeline``, ``report``): its option values as the command line gives them
(text, files) turned into what the request holds, each value that cannot be used one exit-2
line naming it (SPEC section 1). Also the ``--output-parquet`` target and its folder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from kafka_audit.api.request import RequestError, ScanRequest, audit_options, read_baseline, read_broker_logs
from kafka_audit.cli.options import fail, parse_conf, parse_reference_time, parse_storage_options, spark_secret
from kafka_audit.report.views import ReportFilter

T = TypeVar("T")


def command_request(paths: list[str], values: dict[str, Any], *, timeline: bool, started_at: float) -> ScanRequest:
    """The request of a command's PATHs and option values (by the option table's names); the
    replay's timeline events collected when the command shows them (``timeline``)."""
    options = audit_options(
        values,
        baseline=_usage(read_baseline, values["baseline"]),
        broker_log=_usage(read_broker_logs, [str(p) for p in values["broker_logs"] or ()]),
        reference_time=parse_reference_time(values["reference_time"]) if values["reference_time"] is not None else None,
        timeline=timeline,
    )
    keep = _report_filter(values["producer_ids"], values["since"], values["until"])
    parquet = parquet_target(values["output_parquet"])
    storage_options = parse_storage_options(values["storage_options"] or [])
    conf = parse_conf(values["conf"] or [])
    secret = spark_secret(values["engine"], values["remote"], values["spark_secret_file"])
    return ScanRequest(
        tuple(str(p) for p in paths), options, tuple(values["topics"] or ()), tuple(values["partitions"] or ()), keep,
        engine=values["engine"], master=values["master"], conf=conf, remote=values["remote"], secret=secret,
        output_parquet=parquet, progress=not values["quiet"], started_at=started_at, storage_options=storage_options,
        rsm_key_file=str(values["rsm_key_file"]) if values["rsm_key_file"] is not None else None,
        max_read_rate=values["max_read_rate"],
    )


def _usage(read: Callable[[Any], T], value: Any) -> T:
    """``read(value)``, a :class:`RequestError` made one exit-2 line."""
    try:
        return read(value)
    except RequestError as exc:
        raise fail(str(exc)) from None


def _report_filter(producer_ids: list[int] | None, since: str | None, until: str | None) -> ReportFilter:
    """``--producer-id``, ``--since`` and ``--until``: what the reports keep."""
    start = parse_reference_time(since, "--since") if since is not None else None
    end = parse_reference_time(until, "--until") if until is not None else None
    if start is not None and end is not None and start > end:
        raise fail(f"--since {since!r} is after --until {until!r}")
    return ReportFilter(frozenset(producer_ids) if producer_ids else None, start, end)


def parquet_target(target: str | None) -> str | None:
    """``--output-parquet``: a URI as given, a local folder made absolute (executors write it)."""
    if target is None or "://" in target:
        return target
    path = Path(target).absolute()
    if path.exists() and not path.is_dir():
        raise fail(f"--output-parquet {target}: not a directory")
    return str(path)


@contextmanager
def parquet_folder(target: str | None) -> Iterator[str | None]:
    """Where the audit writes ``--output-parquet``: a local folder's datasets are written
    beside it and moved into it when complete (:func:`kafka_audit.cli.output_file.atomic_path`)."""
    if target is None or "://" in target:
        yield target
        return
    from kafka_audit.cli.output_file import atomic_path

    with atomic_path(Path(target), "--output-parquet", directory=True) as folder:
        yield str(folder)
