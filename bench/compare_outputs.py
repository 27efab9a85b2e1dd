#!/usr/bin/env python
"""Byte-identical outputs across two trees of kafka-audit (issue 23: a redesign that changes no output).

    python bench/compare_outputs.py capture --tree /tmp/house-before --out /tmp/outputs-before
    python bench/compare_outputs.py capture --tree .                 --out /tmp/outputs-after
    python bench/compare_outputs.py compare /tmp/outputs-before /tmp/outputs-after

``capture`` runs ``python -m kafka_audit`` from ``--tree`` (``PYTHONPATH`` set to it, this
interpreter; every command in one process, through runpy) on every input dir: ``scan``, ``producers`` and ``timeline`` with
``--format json --engine local --quiet``, and ``dump --records`` with ``--format json`` and
``--format text`` over every segment and sidecar file of the dir. It saves stdout, stderr and the
exit code of each. ``compare`` says which differ; the summaries' ``wall_time_s`` and ``mb_per_s``
(the only fields that measure the run) are blanked first.

Inputs: ``fixtures/{healthy,faulty,producer-errors}``, every dir of the shared corpora
(``real/*``, ``real-broker/*/data``, ``real-broker-4/*/data``, ``real-broker-probes/cases/*``) and
a ``--bench-mb`` MiB dir (default 4) written by ``bench/datagen.py`` (deterministic: same bytes every time).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

SHARED = Path("/work/shared/corpus")
VIEW_COMMANDS = ("scan", "producers", "timeline")
DUMP_FORMATS = ("json", "text")
# Files dump decodes: segments, indexes, snapshots, checkpoints.
DUMP_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot", ".checkpoint", "-checkpoint")
TIMING = re.compile(rb'"(wall_time_s|mb_per_s)": [0-9.eE+-]+')


def inputs(bench_mb: int) -> list[tuple[str, Path]]:
    """(name, dir) of every input, in a fixed order."""
    found = [(f"fixtures-{name}", ROOT / "fixtures" / name) for name in ("healthy", "faulty", "producer-errors")]
    for corpus, pattern in (
        ("real", "*"),
        ("real-broker", "*/data"),
        ("real-broker-4", "*/data"),
        ("real-broker-probes", "cases/*"),
    ):
        for path in sorted((SHARED / corpus).glob(pattern)):
            if path.is_dir():
                parts = [part for part in path.relative_to(SHARED / corpus).parts if part not in ("cases", "data")]
                found.append((f"{corpus}-{'-'.join(parts)}", path))
    if bench_mb > 0:
        import datagen

        bench_dir = HERE / "data" / f"log-dir-{bench_mb}mb"
        datagen.ensure(bench_dir, bench_mb, log=lambda *_: None)
        found.append((f"bench-{bench_mb}mb", bench_dir))
    return found


def dump_files(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*") if p.is_file() and p.name.endswith(DUMP_SUFFIXES))


# One process per tree runs every command (a process per command took minutes on a loaded
# machine): ``python -m kafka_audit`` re-run with runpy, stdout and stderr caught per command.
WORKER = r"""
import io, json, runpy, sys
from pathlib import Path
out = Path(sys.argv[1])
for stem, args in json.loads(Path(sys.argv[2]).read_text()):
    stdout, stderr = io.BytesIO(), io.BytesIO()
    sys.stdout = io.TextIOWrapper(stdout, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(stderr, encoding="utf-8", write_through=True)
    sys.argv = ["kafka-audit", *args]
    code = 0
    try:
        runpy.run_module("kafka_audit", run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    sys.stdout.flush(); sys.stderr.flush()
    printed, said = stdout.getvalue(), stderr.getvalue()  # before the wrappers go (closing them)
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    (out / (stem + ".out")).write_bytes(printed)
    (out / (stem + ".err")).write_bytes(said)
    (out / (stem + ".rc")).write_text(f"{code}\n")
    print(f"captured {stem}", flush=True)
"""


def capture(tree: Path, out: Path, bench_mb: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    commands = []
    for name, path in inputs(bench_mb):
        for command in VIEW_COMMANDS:
            commands.append((f"{name}.{command}", [command, str(path), "--format", "json", "--engine", "local", "--quiet"]))
        files = dump_files(path)
        for fmt in DUMP_FORMATS:
            commands.append((f"{name}.dump-{fmt}", ["dump", *files, "--records", "--format", fmt]))
    (out / "COMMANDS.json").write_text(json.dumps(commands, indent=1) + "\n")
    env = dict(os.environ, PYTHONPATH=str(tree))
    subprocess.run([sys.executable, "-c", WORKER, str(out), str(out / "COMMANDS.json")], cwd=tree, env=env, check=True)


def normalized(path: Path) -> bytes:
    return TIMING.sub(rb'"\1": 0', path.read_bytes())


def compare(before: Path, after: Path) -> int:
    names = sorted(p.name for p in before.iterdir() if p.suffix in (".out", ".err", ".rc"))
    missing = sorted({p.name for p in after.iterdir()} ^ {p.name for p in before.iterdir()})
    differ = [name for name in names if (after / name).exists() and normalized(before / name) != normalized(after / name)]
    total = sum((before / n).stat().st_size for n in names)
    print(f"{len(names)} files ({total / 1e6:.1f} MB) compared; {len(differ)} differ; {len(missing)} only on one side")
    for name in differ + missing:
        print(f"  {name}")
    return 1 if differ or missing else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    cap = sub.add_parser("capture")
    cap.add_argument("--tree", type=Path, required=True)
    cap.add_argument("--out", type=Path, required=True)
    cap.add_argument("--bench-mb", type=int, default=4)
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("before", type=Path)
    cmp_.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.action == "capture":
        capture(args.tree.resolve(), args.out, args.bench_mb)
    else:
        sys.exit(compare(args.before, args.after))


if __name__ == "__main__":
    main()
