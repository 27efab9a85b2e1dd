#!/usr/bin/env python
"""The house's figures for one tree of kafka-audit (issue 33): what makes a change harder to make.

    python bench/house.py --tree .                 # this checkout
    python bench/house.py --tree /tmp/house-before # another checkout, e.g. a worktree of the base

Prints, as JSON: modules and packages, modules over 400 lines, functions over 60 lines (with
their names), ``Any`` in annotations per layer, raw check-id strings outside the catalogue, and
the ``mypy --strict`` error count on the three core layers (``record``, ``log``, ``rules``) and on
the whole package (run with this interpreter's mypy, from the tree).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

MODULE_LINES = 400
FUNCTION_LINES = 60
CORE_LAYERS = ("record", "log", "rules")


def long_functions(package: Path) -> list[str]:
    """``path:function (lines)`` of every function longer than FUNCTION_LINES, longest first."""
    found: list[tuple[int, str]] = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > FUNCTION_LINES:
                    found.append((lines, f"{path.relative_to(package)}:{node.name} ({lines})"))
    return [name for _, name in sorted(found, reverse=True)]


def any_annotations(package: Path) -> dict[str, int]:
    """Annotations naming ``Any`` (parameters, returns, fields), per top-level package."""
    counts: dict[str, int] = {}
    for path in sorted(package.rglob("*.py")):
        layer = path.relative_to(package).parts[0] if len(path.relative_to(package).parts) > 1 else "(top)"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            annotations = []
            if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
                annotations.append(node.annotation)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
                annotations.append(node.returns)
            hits = sum(1 for a in annotations for n in ast.walk(a) if isinstance(n, ast.Name) and n.id == "Any")
            if hits:
                counts[layer] = counts.get(layer, 0) + hits
    return counts


def raw_check_ids(package: Path) -> int:
    """String literals equal to a check id, outside the module that defines ``CheckId``."""
    homes = [package / "check_ids.py", package / "rules" / "catalogue.py"]  # the enum's home, then and now
    catalogue = next(path for path in homes if path.exists() and "class CheckId" in path.read_text(encoding="utf-8"))
    ids = set(re.findall(r'^\s+[A-Z_]+ = "([a-z_]+)"', catalogue.read_text(encoding="utf-8"), re.MULTILINE))
    count = 0
    for path in sorted(package.rglob("*.py")):
        if path == catalogue:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in ids:
                count += 1
    return count


def mypy_strict_errors(tree: Path, targets: list[str]) -> int:
    """The errors ``mypy --strict`` finds in the targets' own files, under no configuration but
    the strict flags (so that two trees compare alike)."""
    with tempfile.NamedTemporaryFile("w", suffix=".ini") as empty:  # the tree's own relaxations left out
        empty.write("[mypy]\n")
        empty.flush()
        run = subprocess.run(
            [sys.executable, "-m", "mypy", "--config-file", empty.name, "--strict", "--ignore-missing-imports",
             "--no-incremental", *targets],
            cwd=tree, capture_output=True, text=True, check=False,
        )
    # Only the errors inside the targets: mypy also reports the modules it follows out of them
    # (the package's __init__ reaches the whole package), which another figure counts.
    return sum(1 for line in run.stdout.splitlines() if ": error:" in line and line.startswith(tuple(targets)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=Path("."))
    parser.add_argument("--no-mypy", action="store_true", help="skip the two mypy runs (about a minute each)")
    args = parser.parse_args()
    package = args.tree.resolve() / "kafka_audit"
    modules = sorted(package.rglob("*.py"))
    figures: dict[str, object] = {
        "modules": len(modules),
        "packages": sum(1 for m in modules if m.name == "__init__.py"),
        "modules_over_400_lines": sorted(
            f"{m.relative_to(package)} ({n})"
            for m in modules
            if (n := len(m.read_text(encoding="utf-8").splitlines())) > MODULE_LINES
        ),
        "functions_over_60_lines": long_functions(package),
        "any_annotations": any_annotations(package),
        "raw_check_id_strings": raw_check_ids(package),
    }
    if not args.no_mypy:
        figures["mypy_strict_errors_core"] = mypy_strict_errors(args.tree, [f"kafka_audit/{layer}" for layer in CORE_LAYERS])
        figures["mypy_strict_errors_package"] = mypy_strict_errors(args.tree, ["kafka_audit"])
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
