"""No module-level state that a request mutates (issue 33 item 3): every module of kafka_audit is
read as a syntax tree, and a ``global`` statement, a module-level container that code mutates,
a module-level lock, pool, thread-local, context variable or counter, or an unbounded cache on
a function of arguments fails the test, unless the allow-list below names it with its reason.
What a request needs travels in explicit objects (``io.storage_context.StorageContext``)."""

from __future__ import annotations

import ast
from pathlib import Path

import kafka_audit

PACKAGE = Path(kafka_audit.__file__).parent

# (module, name) -> why this module-level object may stay.
ALLOWED = {
    ("kafka_audit.record.zstd_frame", "_zstd_local"): (
        "a thread-local codec context: each thread's zstd decompressor, reused, never shared or "
        "carrying a request's data"
    ),
    ("kafka_audit.record.lz4_frame", "_lz4_local"): (
        "a thread-local codec context: each thread's LZ4 output buffers, reused, never shared or "
        "carrying a request's data"
    ),
}

# Calls that build a container a later call may fill.
_CONTAINERS = frozenset({"dict", "list", "set", "bytearray", "deque", "defaultdict", "OrderedDict", "Counter"})
# Calls that build an object holding state of its own.
_STATEFUL = frozenset({
    "Lock", "RLock", "local", "Event", "Condition", "Semaphore", "BoundedSemaphore", "ThreadPoolExecutor",
    "ProcessPoolExecutor", "count", "Queue", "SimpleQueue", "ContextVar", "WeakValueDictionary",
    "WeakKeyDictionary", "WeakSet",
})
# Methods that change a container in place.
_MUTATORS = frozenset({
    "append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "setdefault", "add", "discard",
    "appendleft", "popleft", "extendleft", "sort", "reverse", "rotate", "move_to_end", "__setitem__",
    "__delitem__", "difference_update", "intersection_update", "symmetric_difference_update",
})


def _modules() -> dict[str, ast.Module]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return found


def _called(node: ast.expr) -> str | None:
    """The name a call calls (``deque`` for ``collections.deque(...)``), else None."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _module_bindings(tree: ast.Module) -> list[tuple[str, ast.expr]]:
    """(name, value) of every assignment at module level (also inside a module-level if/try)."""
    found: list[tuple[str, ast.expr]] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.If, ast.Try)):
            pending.extend(node.body + node.orelse + getattr(node, "finalbody", []))
            pending.extend(statement for handler in getattr(node, "handlers", []) for statement in handler.body)
        elif isinstance(node, ast.Assign) and node.value is not None:
            found.extend((target.id, node.value) for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
            found.append((node.target.id, node.value))
    return found


def _target_name(node: ast.expr) -> str | None:
    """The name whose object ``node`` changes: ``NAME`` or ``module.NAME``."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _mutated_names(tree: ast.Module) -> set[str]:
    """Names a statement of ``tree`` changes in place: ``X.append(...)``, ``X[k] = v``,
    ``del X[k]``, ``X[k] += v``, ``X += v`` inside a function."""
    mutated: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
            name = _target_name(node.func.value)
            if name:
                mutated.add(name)
        targets: list[ast.expr] = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Subscript):
                name = _target_name(target.value)
                if name:
                    mutated.add(name)
    return mutated


def _locally_bound(tree: ast.Module) -> set[str]:
    """Names some function binds for itself (a parameter or an assignment): a mutation of such a
    name inside a function may be of its own object, so only names never bound locally count."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            bound.update(a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg))
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                    bound.add(inner.id)
    return bound


def _unbounded_caches(tree: ast.Module) -> list[str]:
    """Functions of arguments under ``functools.cache`` or ``lru_cache(maxsize=None)``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not (node.args.args or node.args.vararg):
            continue
        for decorator in node.decorator_list:
            name = _called(decorator) or _target_name(decorator)
            unbounded = name == "cache" or (
                name == "lru_cache" and isinstance(decorator, ast.Call)
                and any(k.arg == "maxsize" and isinstance(k.value, ast.Constant) and k.value.value is None
                        for k in decorator.keywords)
            )
            if unbounded:
                found.append(node.name)
    return found


def hidden_state() -> list[str]:
    """Every module-level mutable state in kafka_audit that the allow-list does not name."""
    modules = _modules()
    # Per module, the names it changes in place that none of its functions binds for itself.
    mutated_anywhere = {name: _mutated_names(tree) - _locally_bound(tree) for name, tree in modules.items()}
    problems: list[str] = []
    for module, tree in modules.items():
        problems.extend(
            f"{module}:{node.lineno}: global {', '.join(node.names)}"
            for node in ast.walk(tree) if isinstance(node, ast.Global)
        )
        problems.extend(f"{module}: {name} is an unbounded cache" for name in _unbounded_caches(tree))
        for name, value in _module_bindings(tree):
            if (module, name) in ALLOWED:
                continue
            called = _called(value)
            if called in _STATEFUL:
                problems.append(f"{module}: {name} = {called}(...) holds state at module level")
                continue
            container = isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp))
            if not (container or called in _CONTAINERS):
                continue
            if any(name in names for names in mutated_anywhere.values()):
                problems.append(f"{module}: {name} is a module-level container that code mutates")
    return problems


def test_no_module_level_state_that_a_request_mutates():
    assert hidden_state() == []


def test_every_allowed_name_still_exists():
    """An allow-list entry whose name is gone is removed with it."""
    modules = _modules()
    for module, name in ALLOWED:
        assert name in {bound for bound, _ in _module_bindings(modules[module])}, (module, name)


def test_the_check_finds_each_kind_of_state(tmp_path, monkeypatch):
    """A module with a global, a filled module-level dict, a lock and an unbounded cache fails."""
    source = (
        "import functools, threading\n_seen = {}\n_LOCK = threading.Lock()\n_TABLE = {'a': 1}\n_n = 0\n"
        "def note(k):\n    global _n\n    _n += 1\n    _seen[k] = True\n    return _TABLE[k]\n"
        "@functools.cache\ndef parse(text):\n    return text\n"
    )
    package = tmp_path / "kafka_audit"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "bad.py").write_text(source)
    monkeypatch.setattr(kafka_audit, "__file__", str(package / "__init__.py"))
    monkeypatch.setattr(__import__(__name__, fromlist=["PACKAGE"]), "PACKAGE", package)
    assert sorted(hidden_state()) == [
        "kafka_audit.bad: _LOCK = Lock(...) holds state at module level",
        "kafka_audit.bad: _seen is a module-level container that code mutates",
        "kafka_audit.bad: parse is an unbounded cache",
        "kafka_audit.bad:7: global _n",
    ]
