"""An install without a C compiler: no compiled record screen, the same audit.

Without ``_record_screen`` every batch is validated in full (``record_screen.COMPILED`` is False,
every screen answers "look closer"): the findings are byte-identical to a scan with the screen,
over the fixtures and the bundled corpora, and the summary counts the same batches and records.
The scan says so once on stderr (``record_screen.SLOWER_NOTICE``).
"""

from __future__ import annotations

import json

from kafka_audit.record.record_screen import SLOWER_NOTICE
from tests.conftest import REPO
from tests.support.audit_run import BUNDLED_CORPORA, corpus_dir
from tests.support.compiled_screen import findings_bytes, scan_json

FIXTURES = ("healthy", "faulty", "producer-errors", "transactions-v2")
# What differs between two runs of one scan whatever the screen: its duration.
_TIMINGS = ("wall_time_s", "mb_per_s")


def _summary(report: bytes) -> dict:
    summary = json.loads(report)["summary"]
    for key in _TIMINGS:
        summary.pop(key)
    return summary


def test_a_scan_without_the_compiled_screen_gives_the_same_findings(tmp_path):
    paths = [REPO / "fixtures" / name for name in FIXTURES] + [corpus_dir(name) for name in BUNDLED_CORPORA]
    built, built_err = scan_json(paths, tmp_path / "built", hidden=False)
    hidden, hidden_err = scan_json(paths, tmp_path / "hidden", hidden=True)
    assert SLOWER_NOTICE not in built_err
    assert hidden_err.splitlines().count(SLOWER_NOTICE) == len(paths)
    found = 0
    for path, with_screen, without in zip(paths, built, hidden):
        assert findings_bytes(without) == findings_bytes(with_screen), path
        assert _summary(without) == _summary(with_screen), path
        found += len(json.loads(with_screen)["findings"])
    assert found > 100  # the fixtures' and corpora's findings were compared, not empty reports
