"""Test helper: Microsoft's SARIF multitool (npm ``@microsoft/sarif-multitool``, a self-contained
.NET build per platform), as ``.ci/run`` installs it into ``.ci/node_modules``, run with GitHub's
ingestion rules (``validate --rule-kind "Sarif;Ghas"``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

INSTALL_LINE = "npm install --prefix .ci --no-audit --no-fund @microsoft/sarif-multitool@5.7.0"
# The platform package's executable, called directly: the npm wrapper (bin.js) passes its
# arguments through a shell, which splits "Sarif;Ghas" at the semicolon.
_LOCAL = REPO / ".ci" / "node_modules" / "@microsoft" / "sarif-multitool-linux" / "Sarif.Multitool"


def multitool() -> str:
    """The multitool's path; the test is skipped with the install line where it is absent."""
    if _LOCAL.is_file():
        return str(_LOCAL)
    found = shutil.which("sarif-multitool")
    if found is None:
        pytest.skip(f"SARIF multitool not installed: {INSTALL_LINE}")
    return found


def ghas_problems(files: list[Path], out: Path) -> list[str]:
    """Every error and warning the multitool's ``Sarif;Ghas`` rules report on ``files``, as
    ``file: ruleId level message`` lines (empty when GitHub's rules pass)."""
    done = subprocess.run(
        [multitool(), "validate", "--rule-kind", "Sarif;Ghas", "--output", str(out), *map(str, files)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert out.is_file(), f"the multitool wrote no log (exit {done.returncode}): {done.stdout[-1500:]}{done.stderr[-500:]}"
    problems = []
    for run in json.loads(out.read_text(encoding="utf-8-sig"))["runs"]:
        for result in run.get("results", []):
            level = result.get("level", "warning")  # SARIF's default level
            if level in ("error", "warning"):
                where = result.get("locations", [{}])[0].get("physicalLocation", {}).get("artifactLocation", {}).get("uri")
                problems.append(f"{where}: {result['ruleId']} {level} {result['message'].get('text', '')[:300]}")
    return problems
