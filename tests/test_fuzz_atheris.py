"""The coverage-guided fuzzer (bench/fuzz_atheris.py, issues 30 item 7 and 34 item 2) run briefly,
as CI runs it, on both C extensions built with AddressSanitizer and UndefinedBehaviorSanitizer
(bench/sanitized_build.py): the compiled screen against its Python reference, dump's compiled
record lines against its Python loop, the streamed decoders against the one-buffer ones, the
codecs against their streams, on inputs mutated from fixtures/ and corpus/ seeds. A sanitizer
report, a crash, an exception that is not our own or a disagreement ends libFuzzer with a non-zero
status. The long run and its figures are in bench/README.md.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.fuzz_regressions import regression_inputs

REPO = Path(__file__).resolve().parent.parent


def _fuzz(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "bench/fuzz_atheris.py", "--asan", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=420, check=False)


def test_inputs_that_once_failed_pass_under_the_sanitizers(tmp_path: Path) -> None:
    paths = []
    for name, data in regression_inputs().items():
        paths.append(tmp_path / name)
        paths[-1].write_bytes(data)
    result = _fuzz("--inputs", *map(str, paths))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "sanitized build:" in result.stderr and "extension: " in result.stderr
    assert result.stderr.count("Executed ") == len(paths)


def test_the_fuzzer_finds_nothing_in_a_short_run(tmp_path: Path) -> None:
    result = _fuzz("--runs", "4000", "--seconds", "20", "--max-len", "4096", "--seeds", "120",
                   "--corpus", str(tmp_path / "corpus"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Done " in result.stderr and "stat::number_of_executed_units" in result.stderr
    assert not list(tmp_path.glob("crash-*"))
