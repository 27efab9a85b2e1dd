"""The corpora real brokers wrote for this project are bundled in ``corpus/``; where the shared
originals sit beside the checkout (as in CI), the bundle must hold them unchanged, and a case the
shared corpora gained since is audited here too, so that a grown corpus is never silently unread."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

import kafka_audit
from tests.support.audit_run import BUNDLED, BUNDLED_CORPORA, SHARED


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", BUNDLED_CORPORA)
def test_every_bundled_corpus_is_present_with_its_readme(name):
    assert (BUNDLED / name / "README.md").is_file(), f"bundled corpus {name} is missing"


@pytest.mark.parametrize("name", BUNDLED_CORPORA)
def test_bundled_corpus_holds_the_shared_files_unchanged(name):
    shared = SHARED / "corpus" / name
    if not shared.is_dir():
        pytest.skip("shared corpora not beside the checkout: the bundled copy is the only one")
    bundled = BUNDLED / name
    common = sorted(_files(shared) & _files(bundled))
    _, mismatch, errors = filecmp.cmpfiles(shared, bundled, common, shallow=False)
    assert not mismatch and not errors, f"bundled files differ from ../shared: {mismatch[:5]} {errors[:5]}"


@pytest.mark.parametrize("name", BUNDLED_CORPORA)
def test_cases_the_shared_corpus_gained_are_audited(name):
    shared = SHARED / "corpus" / name
    if not shared.is_dir():
        pytest.skip("shared corpora not beside the checkout: the bundled copy is the only one")
    new_cases = sorted(p for p in shared.iterdir() if p.is_dir() and not (BUNDLED / name / p.name).exists())
    for case in new_cases:
        result = kafka_audit.scan([str(case)], engine="local")
        assert result.summary["segments"] > 0, f"{case}: no segment found"
        assert result.summary["segments_unreadable"] == 0, f"{case}: segments not read"
