"""The guide's example outputs are what the commands print (issue 31 item 4): ``docs/examples/generate.py``
run again into a temporary folder writes every committed file byte for byte, and the README's
example is the generated one."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "docs" / "examples"


def _generator():
    spec = importlib.util.spec_from_file_location("docs_examples_generate", EXAMPLES / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_examples_are_what_the_commands_print_now(tmp_path):
    generator = _generator()
    generator.examples(tmp_path)
    generator.option_tables(tmp_path)
    generator.check_table(tmp_path)
    written = sorted(p.name for p in tmp_path.iterdir())
    committed = sorted(p.name for p in EXAMPLES.iterdir() if p.name != "generate.py" and p.is_file())
    assert written == committed, "run `python docs/examples/generate.py` and commit docs/examples/"
    drifted = [name for name in written if (tmp_path / name).read_bytes() != (EXAMPLES / name).read_bytes()]
    assert not drifted, f"drifted from what the commands print: {drifted}; run `python docs/examples/generate.py`"


def test_every_example_is_included_by_a_page_and_the_readme_shows_a_generated_one():
    pages = "".join(p.read_text(encoding="utf-8") for p in (REPO / "docs").glob("*.md"))
    for example in EXAMPLES.iterdir():
        if example.name != "generate.py":
            assert f'--8<-- "examples/{example.name}"' in pages, example.name
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    example = (EXAMPLES / "scan-producer-errors.txt").read_text(encoding="utf-8")
    assert f"```text\n{example}```" in readme
    assert len(readme.splitlines()) <= 250


def test_the_timeline_example_shows_the_events_the_command_prints():
    """The drift issue 31 found: the README showed 5 events of producer 557891 where the command
    printed fewer. The generated example's title and its rows agree."""
    text = (EXAMPLES / "timeline-557891.txt").read_text(encoding="utf-8")
    title = next(line for line in text.splitlines() if line.startswith("timeline ("))
    count = int(title.split("(")[1].split()[0])
    rows = [line for line in text.splitlines() if line.startswith("  2023-")]
    assert count == len(rows) == 3
