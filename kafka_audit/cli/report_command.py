"""``kafka-audit report PATH... [--output incident.html]``: the HTML postmortem document (SPEC
sections 1 and 3). It takes the options of ``scan`` (the same audit, the same exit codes) except
``--format``, writes ``--output`` (default :data:`DEFAULT_REPORT`) instead of printing, and adds
``--redact`` / ``--redact-key``. Its parameters are ``scan``'s, so the two cannot drift apart:
:func:`report` hands them to ``scan``, which writes the document for the ``report`` command
(:func:`kafka_audit.cli.audit_commands.write_html`)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer

from kafka_audit.cli.options import OutputFormat, RedactKeyOption, RedactOption, fail

DEFAULT_REPORT = "kafka-audit-report.html"
REPORT_HELP = ("Write one self-contained HTML postmortem document: summary, findings, per-partition "
               "timeline charts and producers (takes scan's options).")


def report(ctx: typer.Context, **options: Any) -> None:
    """Run ``scan``'s audit, which writes the document for this command."""
    from kafka_audit.cli.audit_commands import REDACTION, scan

    redact, redact_key = options.pop("redact"), options.pop("redact_key")
    if redact_key is not None and not redact:
        raise fail("--redact-key needs --redact")
    ctx.meta[REDACTION] = (redact, redact_key)
    options["output"] = options["output"] or Path(DEFAULT_REPORT)
    scan(ctx, format=OutputFormat.table, **options)


def _signature() -> inspect.Signature:
    """``scan``'s parameters without ``--format``, ``--output`` defaulting to the document's
    name, and the redaction options."""
    from kafka_audit.cli.audit_commands import scan

    output = Annotated[Path | None, typer.Option("--output", help=f"Where to write the document (default {DEFAULT_REPORT}).")]
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


def register(app: typer.Typer) -> None:
    report.__signature__ = _signature()  # type: ignore[attr-defined]
    app.command("report", help=REPORT_HELP)(report)
