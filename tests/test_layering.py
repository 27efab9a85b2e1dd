"""The house rules of docs/design.md that import-linter cannot state, checked on the source: the
rules do no I/O, and the fault writer stays outside the product. The layer contracts themselves
are declared in pyproject.toml ([tool.importlinter]) and checked by ``lint-imports``, here and in
CI."""

from __future__ import annotations

import ast
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "kafka_audit"
# Modules a pure rule must not import: files, memory maps, processes, remote storage, Spark.
IO_MODULES = ("os", "io", "mmap", "pathlib", "shutil", "subprocess", "socket", "fsspec", "pyarrow", "pyspark", "gzip")


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


def test_rules_do_no_io():
    for path in sorted((PACKAGE / "rules").glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        imported = _imports(path)
        assert not [n for n in imported if _within(n, IO_MODULES)], f"{path.name} imports {imported}"
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
        assert not [c for c in calls if c.func.id == "open"], f"{path.name} opens files"


def test_the_fault_writer_is_not_part_of_the_product():
    assert importlib.util.find_spec("kafka_audit.record.writer") is None
    for path in PACKAGE.rglob("*.py"):
        assert not any(_within(n, ("tests",)) for n in _imports(path)), path


def test_every_package_has_a_layer_in_the_contract():
    """A new package must be placed in the layers of pyproject.toml, or import-linter would not look at it."""
    text = (ROOT / "pyproject.toml").read_text()
    packages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    assert packages and all(f'"kafka_audit.{name}"' in text for name in packages), packages


def test_the_layer_contracts_hold():
    lint_imports = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint_imports is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    run = subprocess.run([lint_imports], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout[-3000:]
