"""docs/design.md's file inventory is generated from the modules' docstrings (issue 33 item 6):
``python docs/inventory.py`` writes it, and this test fails when the page and the tree differ."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"


@pytest.fixture(scope="module")
def inventory():
    spec = importlib.util.spec_from_file_location("docs_inventory", DOCS / "inventory.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_design_page_lists_every_module_as_its_docstring_says(inventory):
    page = (DOCS / "design.md").read_text()
    assert inventory.updated(page, inventory.render()) == page, "run `python docs/inventory.py` and commit docs/design.md"


def _module(path: Path, docstring: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'"""{docstring}"""\n')


def test_the_inventory_follows_the_layers_and_each_first_sentence(inventory, tmp_path):
    package = tmp_path / "pkg"
    _module(package / "__init__.py", "The package.")
    _module(package / "low" / "__init__.py", "The bottom layer.")
    _module(package / "low" / "reader.py", "Bytes to :class:`Batch` values (``FileRecords``). More after the first sentence.")
    _module(package / "top" / "__init__.py", "The top layer: e.g. the command line.\n\nA second paragraph.")
    _module(package / "top" / "app.py", "An app whose first sentence is much too long for the line, "
                                         "so it is cut at its last clause, and then at a word " + "x " * 40)
    _module(package / "shared.py", "Below every layer.")
    (package / "low" / "_fast.c").write_text("/*\n * The compiled walk of\n * reader.py. Faster.\n */\n")
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[[c]]\nname = "Layers, top to bottom"\nlayers = [\n    "pkg.top",\n    "pkg.low",\n]\n')
    assert inventory.render(package, pyproject).splitlines() == [
        "```",
        "pkg/           The package.",
        "  top/         The top layer: e.g. the command line.",
        "    app.py     An app whose first sentence is much too long for the line, so it is cut at its last clause …",
        "  low/         The bottom layer.",
        "    _fast.c    The compiled walk of reader.py.",
        "    reader.py  Bytes to Batch values (FileRecords).",
        "  shared.py    Below every layer.",
        "```",
    ]


def test_a_changed_docstring_is_drift(inventory, tmp_path):
    page = f"# Design\n\n{inventory.START}\nthe old list\n{inventory.END}\n\nThe rest.\n"
    assert inventory.updated(page, "the new list\n") == f"# Design\n\n{inventory.START}\nthe new list\n{inventory.END}\n\nThe rest.\n"
    with pytest.raises(SystemExit):
        inventory.updated("# Design without markers\n", "the new list\n")
