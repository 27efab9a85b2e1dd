"""Every report by view and format (SPEC section 3): :data:`WRITERS` is the one table of
``{view: {format: writer}}``, and :func:`writer` its one lookup, which refuses a combination the
table does not hold (a usage error, exit 2, never a fallthrough to another format).

A writer takes the filtered scan result, the :class:`Rendering` (what the command asked beyond
the result) and a :class:`Sink` (where the report goes: stdout or ``--output``, which the command
line provides). Adding a format is one writer and one line in :data:`WRITERS`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from rich.console import Console

from kafka_audit.audit.results import ScanResult
from kafka_audit.errors import KafkaAuditError
from kafka_audit.report.redact import Redactor
from kafka_audit.report.views import ReportFilter

# File names that are not UTF-8 reach reports as surrogate escapes; written escaped.
TEXT_ERRORS = "backslashreplace"


class ReportError(KafkaAuditError):
    """A report that cannot be written as asked: one exit-2 line (SPEC section 1)."""


class UnknownFormat(ReportError):
    """A view asked in a format the table does not hold for it."""


@dataclass(frozen=True, slots=True)
class Rendering:
    """What a report needs beside the result: the report filter, the ``--fail-on`` severity and
    the exit code it gives, whether a ``--baseline`` was read, the PATHs, and ``report``'s
    ``--redact`` hash."""

    keep: ReportFilter = ReportFilter()
    fail_on: str = "error"
    exit_code: int = 0
    baseline_used: bool = False
    paths: tuple[str, ...] = ()
    redactor: Redactor | None = field(default=None, repr=False)


class Sink(Protocol):
    """Where a report goes (stdout, or ``--output`` written whole or not at all)."""

    def text(self, text: str) -> None:
        """Write ``text`` (a final newline added where it lacks one)."""

    def console(self, force_terminal: bool | None = None) -> AbstractContextManager[Console]:
        """A console to print a table on: the terminal's, or the file's (160 columns)."""

    def file(self) -> AbstractContextManager[Path]:
        """A path to write the report file at, renamed into place when complete."""

    def wrote(self, details: str) -> None:
        """One line on stderr: where the report file went, with ``details`` (its size)."""


Writer = Callable[[ScanResult, Rendering, Sink], None]


def _scan_table(result: ScanResult, rendering: Rendering, sink: Sink) -> None:
    from kafka_audit.report.scan_report import render_table

    with sink.console(force_terminal=False) as console:
        render_table(result, console, exit_code=rendering.exit_code)


def _scan_text(render: Callable[[ScanResult], str]) -> Writer:
    def write(result: ScanResult, rendering: Rendering, sink: Sink) -> None:
        sink.text(render(result))

    return write


def _sarif(result: ScanResult, rendering: Rendering, sink: Sink) -> None:
    from kafka_audit import __version__
    from kafka_audit.report.ci_formats.sarif import to_sarif

    sink.text(to_sarif(result, __version__, rendering.baseline_used))


def _junit(result: ScanResult, rendering: Rendering, sink: Sink) -> None:
    from kafka_audit.report.ci_formats.junit import to_junit

    sink.text(to_junit(result, rendering.fail_on))


def _gitlab(result: ScanResult, rendering: Rendering, sink: Sink) -> None:
    from kafka_audit.report.ci_formats.gitlab import to_gitlab

    sink.text(to_gitlab(result))


def _github(result: ScanResult, rendering: Rendering, sink: Sink) -> None:
    """GitHub's workflow commands, and the job summary appended to ``$GITHUB_STEP_SUMMARY``."""
    from kafka_audit.report.ci_formats.github import to_github

    _append_step_summary(result, rendering.fail_on)
    sink.text(to_github(result))


def _append_step_summary(result: ScanResult, fail_on: str) -> None:
    """GitHub's job summary: appended to the file ``$GITHUB_STEP_SUMMARY`` names, within the 1 MiB
    a step's summary may hold (less what the step already wrote there)."""
    from kafka_audit.report.ci_formats.github import STEP_SUMMARY_LIMIT, step_summary

    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return
    try:
        used = os.path.getsize(target) if os.path.exists(target) else 0
        text = step_summary(result, fail_on, STEP_SUMMARY_LIMIT - used)
        if text:
            with open(target, "a", encoding="utf-8", errors=TEXT_ERRORS) as handle:
                handle.write(text)
    except OSError as exc:
        raise ReportError(f"GITHUB_STEP_SUMMARY {target}: {exc.strerror or exc}") from None


def _html(result: ScanResult, rendering: Rendering, sink: Sink) -> None:
    """``report``'s document (:mod:`kafka_audit.report.html`), with the culprit records read from
    the segments; where it went on stderr."""
    from kafka_audit.report.html import write_report
    from kafka_audit.report.html.evidence import segment_files

    with sink.file() as target:
        stats = write_report(
            target, result, rendering.keep,
            segment_paths=segment_files(list(rendering.paths), {f.segment for f in result.findings if f.segment}),
            redact=rendering.redactor,
        )
    sink.wrote(f"({stats.bytes:,} bytes, {stats.charts} charts)")


def _view_writers(name: str) -> dict[str, Writer]:
    """The ``producers`` or ``timeline`` view (:mod:`kafka_audit.report.view_reports`) in its four formats."""
    from kafka_audit.report import view_reports

    view = view_reports.VIEWS[name]

    def table(result: ScanResult, rendering: Rendering, sink: Sink) -> None:
        with sink.console() as console:
            view.render(result.summary, view.rows(result, rendering.keep), console)

    def json(result: ScanResult, rendering: Rendering, sink: Sink) -> None:
        sink.text(view_reports.to_json(result.summary, result.notes, view.key, view.rows(result, rendering.keep)))

    def ndjson(result: ScanResult, rendering: Rendering, sink: Sink) -> None:
        sink.text(view_reports.to_ndjson(view.rows(result, rendering.keep)))

    def csv(result: ScanResult, rendering: Rendering, sink: Sink) -> None:
        sink.text(view_reports.to_csv(view.rows(result, rendering.keep), view.fields))

    return {"table": table, "json": json, "ndjson": ndjson, "csv": csv}


def _scan_writers() -> dict[str, Writer]:
    from kafka_audit.report import scan_report

    return {
        "table": _scan_table,
        "json": _scan_text(scan_report.to_json),
        "ndjson": _scan_text(scan_report.to_ndjson),
        "csv": _scan_text(scan_report.to_csv),
        "sarif": _sarif,
        "junit": _junit,
        "github": _github,
        "gitlab": _gitlab,
    }


# The table: each view's formats, in the order ``--help`` lists them (the first is the default).
WRITERS: dict[str, dict[str, Writer]] = {
    "scan": _scan_writers(),
    "producers": _view_writers("producers"),
    "timeline": _view_writers("timeline"),
    "report": {"html": _html},
}


def formats(view: str | None = None) -> list[str]:
    """The formats of ``view`` (of every view when None), in the table's order."""
    views = [WRITERS[view]] if view is not None else list(WRITERS.values())
    return list(dict.fromkeys(name for table in views for name in table))


def writer(view: str, format: str) -> Writer:
    """The writer of ``view`` in ``format``; :class:`UnknownFormat` (one line naming what the view
    writes) for a combination the table does not hold."""
    found = WRITERS.get(view, {}).get(format)
    if found is not None:
        return found
    owners = [name for name, table in WRITERS.items() if format in table]
    what = f"a format of {_either(owners)}" if owners else "no format"
    raise UnknownFormat(f"--format {format} is {what}; {view} writes {_either(formats(view))}")


def _either(names: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return " or ".join([", ".join(names[:-1]), names[-1]]) if len(names) > 1 else "".join(names)
