"""``kafka-audit report PATH... [--output incident.html]``: the HTML postmortem document (SPEC
sections 1 and 3). It takes the options of ``scan`` (the same audit, the same exit codes) except
``--format``, writes ``--output`` (default :data:`DEFAULT_REPORT`) instead of printing, and adds
``--redact`` / ``--redact-key``. Its parameters are ``scan``'s, so the two cannot drift apart:
:func:`report` hands them to ``scan``, which writes the document for the ``report`` command."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from kafka_audit.cli.options import OutputFormat, RedactKeyOption, RedactOption, fail

DEFAULT_REPORT = "kafka-audit-report.html"
REPORT_HELP = ("Write one self-contained HTML postmortem document: summary, findings, per-partition "
               "timeline charts and producers (takes scan's options).")
_META = "kafka_audit.report"


def report(ctx: typer.Context, **options: Any) -> None:
    """Run ``scan``'s audit and write the document (see :func:`write_html`)."""
    from kafka_audit.cli.app import scan

    redact, redact_key = options.pop("redact"), options.pop("redact_key")
    if redact_key is not None and not redact:
        raise fail("--redact-key needs --redact")
    ctx.meta[_META] = (redact, redact_key)
    options["output"] = options["output"] or Path(DEFAULT_REPORT)
    scan(ctx, format=OutputFormat.table, **options)


def _signature() -> inspect.Signature:
    """``scan``'s parameters without ``--format``, ``--output`` defaulting to the document's
    name, and the redaction options."""
    from kafka_audit.cli.app import scan

    output = Annotated[Optional[Path], typer.Option("--output", help=f"Where to write the document (default {DEFAULT_REPORT}).")]
    params = []
    for param in inspect.signature(scan, eval_str=True).parameters.values():
        if param.name == "format":
            continue
        params.append(param.replace(annotation=output) if param.name == "output" else param)
    keyword = inspect.Parameter.KEYWORD_ONLY
    params += [inspect.Parameter("redact", keyword, annotation=RedactOption, default=False),
               inspect.Parameter("redact_key", keyword, annotation=RedactKeyOption, default=None)]
    # ``ctx`` first as scan has it, every option keyword-only after it (Typer passes them by name).
    return inspect.Signature([params[0], *(p.replace(kind=keyword) for p in params[1:])])


def write_html(ctx: typer.Context, result, keep, output: Optional[Path], paths: list[str]) -> None:
    """Write the document of a ``report`` command's audit to ``output`` and say where on stderr."""
    from kafka_audit.report.html import write_report
    from kafka_audit.report.html.evidence import segment_files
    from kafka_audit.report.redact import Redactor

    redact, redact_key = ctx.meta[_META]
    target = output or Path(DEFAULT_REPORT)
    stats = write_report(
        target, result, keep,
        segment_paths=segment_files([str(p) for p in paths], {f.segment for f in result.findings if f.segment}),
        redact=Redactor(redact_key) if redact else None,
    )
    typer.echo(f"kafka-audit: wrote {target} ({stats.bytes:,} bytes, {stats.charts} charts)", err=True)


def register(app: typer.Typer) -> None:
    report.__signature__ = _signature()  # type: ignore[attr-defined]
    app.command("report", help=REPORT_HELP)(report)
