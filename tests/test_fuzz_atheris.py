"""The coverage-guided fuzzer (bench/fuzz_atheris.py, issue 30 item 7) run briefly, as CI runs it:
the compiled screen against its Python reference, the streamed decoders against the one-buffer
ones, the codecs against their streams, on inputs mutated from fixtures/ and corpus/ seeds. A
crash, an exception that is not our own or a disagreement ends libFuzzer with a non-zero status.
The long run and its figures are in bench/README.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_the_fuzzer_finds_nothing_in_a_short_run(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "bench/fuzz_atheris.py", "--runs", "4000", "--seconds", "20", "--max-len", "4096",
         "--seeds", "120", "--corpus", str(tmp_path / "corpus")],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=240, check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Done " in result.stderr and "stat::number_of_executed_units" in result.stderr
    assert not list(tmp_path.glob("crash-*"))
