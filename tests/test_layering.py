"""The house rules of docs/DESIGN.md, checked on the source: which layer may import which, rules
without I/O, no Spark below the engines, the fault writer outside the product."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kafka_audit"

# Layer -> the kafka_audit modules (prefixes) it may import.
ALLOWED = {
    "formats": ("kafka_audit.formats",),
    "rules": ("kafka_audit.formats", "kafka_audit.rules", "kafka_audit.errors", "kafka_audit.findings"),
    "tasks": ("kafka_audit.formats", "kafka_audit.rules", "kafka_audit.tasks", "kafka_audit.errors", "kafka_audit.findings"),
}
# Modules a pure rule must not import: files, memory maps, processes, remote storage, Spark.
IO_MODULES = ("os", "io", "mmap", "pathlib", "shutil", "subprocess", "socket", "fsspec", "pyarrow", "pyspark", "gzip")


def _modules(layer: str) -> list[Path]:
    return sorted((PACKAGE / layer).glob("*.py"))


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_each_layer_imports_only_the_layers_below_it(layer):
    for path in _modules(layer):
        for name in _imports(path):
            if name.startswith("kafka_audit"):
                assert _within(name, ALLOWED[layer]), f"{path.relative_to(PACKAGE)} imports {name}"


@pytest.mark.parametrize("layer", ["formats", "rules", "tasks"])
def test_no_spark_below_the_engines(layer):
    for path in _modules(layer):
        assert not any(_within(n, ("pyspark", "py4j")) for n in _imports(path)), path.name


def test_rules_do_no_io():
    for path in _modules("rules"):
        tree = ast.parse(path.read_text(), str(path))
        imported = _imports(path)
        assert not [n for n in imported if _within(n, IO_MODULES)], f"{path.name} imports {imported}"
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
        assert not [c for c in calls if c.func.id == "open"], f"{path.name} opens files"


def test_the_fault_writer_is_not_part_of_the_product():
    assert importlib.util.find_spec("kafka_audit.formats.writer") is None
    for path in PACKAGE.rglob("*.py"):
        assert not any(_within(n, ("tests",)) for n in _imports(path)), path
