"""``scan``'s CI side (SPEC sections 1 and 3): the ``--baseline`` read before the audit, the
``--write-baseline`` written after it, and the CI formats (sarif, junit, github, gitlab) with
the GitHub step summary."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_audit.cli.options import TEXT_ERRORS, OutputFormat, fail

if TYPE_CHECKING:
    from kafka_audit.audit.results import ScanResult


def read_baseline(path: Path | None) -> frozenset[str]:
    """The fingerprints ``--baseline`` lists (none without it); a file that cannot be read or is
    not a baseline is exit 2 with one line naming the cause."""
    from kafka_audit.report.baseline import BaselineError, parse_baseline

    if path is None:
        return frozenset()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise fail(f"--baseline {path}: {reason}") from None
    try:
        return parse_baseline(text)
    except BaselineError as exc:
        raise fail(f"--baseline {path}: {exc}") from None


def write_baseline(path: Path | None, result: ScanResult) -> None:
    """``--write-baseline``: the fingerprints of the findings this scan reports."""
    from kafka_audit.report.baseline import baseline_json

    if path is None:
        return
    from kafka_audit.cli.output_file import write_text

    write_text(path, baseline_json(result.findings), "--write-baseline")


def ci_report(result: ScanResult, format: OutputFormat, fail_on: str, baseline_used: bool) -> str:
    """The report text of a CI format; for ``github`` also the step summary, appended to
    ``$GITHUB_STEP_SUMMARY`` when that is set."""
    from kafka_audit import __version__
    from kafka_audit.report.ci_formats import github, gitlab, junit, sarif

    if format is OutputFormat.sarif:
        return sarif.to_sarif(result, __version__, baseline_used)
    if format is OutputFormat.junit:
        return junit.to_junit(result, fail_on)
    if format is OutputFormat.gitlab:
        return gitlab.to_gitlab(result)
    _append_step_summary(result, fail_on)
    return github.to_github(result)


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
        raise fail(f"GITHUB_STEP_SUMMARY {target}: {exc.strerror or exc}") from None
