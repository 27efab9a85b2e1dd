"""The C extensions (kafka_audit/record/*.c, built by setup.py) built with AddressSanitizer and
UndefinedBehaviorSanitizer into a build dir of their own, never over the package's in-place .so
files (issue 34 item 2), and the environment to load them in (the runtime an uninstrumented Python
needs preloaded).

With clang (preferred): -fsanitize=address,undefined,fuzzer-no-link, so libFuzzer also sees the C
code's edges and comparisons, and one preload, ``asan_with_fuzzer.so``: clang's ASan runtime (UBSan's
handlers are in it) and libFuzzer linked into one shared library, as atheris's setup builds it for
native extensions (its native_extension_fuzzing.md: ASan's weak coverage hooks must not win over
libFuzzer's). atheris then says "Using preloaded libfuzzer".

Without clang: gcc with -fsanitize=address,undefined and gcc's libasan preloaded: the same checks,
but libFuzzer is blind to the C code (gcc has no inline 8-bit counters), so only the Python side
of each target guides the mutations.

    python bench/sanitized_build.py                  # build; print the dir, the compiler, the preload
    python bench/sanitized_build.py --compiler gcc   # the gcc build
    python bench/fuzz_atheris.py --asan ...          # build, then fuzz the sanitized build

Every -fno-sanitize-recover=all: the first report ends the process (libFuzzer keeps the input).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build" / "sanitized"
EXTENSIONS = ("_record_screen", "_record_text", "_batch_walk")
SANITIZE = "-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1"
# What the sanitizers are told at run time: the interpreter's own leaks are no finding; a report
# ends the process with a stack (libFuzzer then writes the input as crash-*).
RUNTIME_OPTIONS = {
    "ASAN_OPTIONS": "detect_leaks=0:allocator_may_return_null=1:abort_on_error=0:verify_asan_link_order=0",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
    # Every allocation through malloc, so ASan sees PyMem buffers of any size (no pymalloc arenas).
    "PYTHONMALLOC": "malloc",
}


@dataclass(frozen=True)
class SanitizedBuild:
    """A sanitized build: where its extensions are, what to preload, whether libFuzzer sees the C."""

    compiler: str
    lib_dir: Path
    preload: Path
    c_coverage: bool

    def env(self) -> dict[str, str]:
        """The environment a Python process loads this build in (with the repository importable)."""
        return {**os.environ, **RUNTIME_OPTIONS, "LD_PRELOAD": str(self.preload), "PYTHONPATH": str(REPO)}

    def record_dir(self) -> Path:
        """Where the sanitized kafka_audit.record extension modules are."""
        return self.lib_dir / "kafka_audit" / "record"


def _run(command: list[str], env: dict[str, str] | None = None) -> str:
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"sanitized build: {' '.join(command[:3])} failed:\n{done.stderr[-3000:]}")
    return done.stdout.strip()


def _asan_with_fuzzer(out: Path) -> Path:
    """clang's static ASan runtime (less its preinit object, which only an executable may carry)
    and libFuzzer without main, linked into one shared library to preload."""
    runtime = Path(_run(["clang", "-print-resource-dir"])) / "lib" / "linux"
    asan, fuzzer = runtime / "libclang_rt.asan-x86_64.a", runtime / "libclang_rt.fuzzer_no_main-x86_64.a"
    merged = out / "asan_with_fuzzer.so"
    if merged.exists() and merged.stat().st_mtime > max(asan.stat().st_mtime, fuzzer.stat().st_mtime):
        return merged
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "asan.a"
        shutil.copyfile(asan, archive)
        _run(["ar", "d", str(archive), "asan_preinit.cpp.o"])
        _run(["clang++", "-shared", "-o", str(merged), "-Wl,--whole-archive", str(fuzzer), str(archive),
              "-Wl,--no-whole-archive", "-lpthread", "-ldl"])
    return merged


def build(compiler: str | None = None) -> SanitizedBuild:
    """Build both extensions sanitized into build/sanitized/<compiler>/ (clang when found, unless
    ``compiler`` says otherwise) and answer where they are and what to preload."""
    compiler = compiler or ("clang" if shutil.which("clang") else "gcc")
    out = BUILD / compiler
    lib_dir = out / "lib"
    # A build of another ABI tag (a stale *.cpython-311-*.so) would shadow the one built now.
    suffix = ".abi3.so" if sys.version_info >= (3, 11) else str(sysconfig.get_config_var("EXT_SUFFIX"))
    for stale in lib_dir.rglob("*.so"):
        if not stale.name.endswith(suffix):
            stale.unlink()
    flags = SANITIZE + (" -fsanitize=fuzzer-no-link" if compiler == "clang" else "")
    env = {**os.environ, "CC": compiler, "LDSHARED": f"{compiler} -shared", "CFLAGS": flags,
           "LDFLAGS": "-fsanitize=address,undefined"}
    stamp = out / "flags"  # setup.py rebuilds on newer sources; new flags need --force
    force = ["--force"] if not stamp.exists() or stamp.read_text() != flags else []
    _run([sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(lib_dir), "--build-temp",
          str(out / "tmp"), *force], env=env)
    stamp.write_text(flags)
    built = SanitizedBuild(
        compiler, lib_dir,
        _asan_with_fuzzer(out) if compiler == "clang" else Path(_run(["gcc", "-print-file-name=libasan.so"])),
        compiler == "clang",
    )
    missing = [name for name in EXTENSIONS if not list(built.record_dir().glob(f"{name}.*so"))]
    if missing:  # setup.py reports a failed optional build on one line and goes on: not here
        raise SystemExit(f"sanitized build: {', '.join(missing)} not built with {compiler} (see setup.py's line)")
    return built


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compiler", choices=("clang", "gcc"), default=None, help="default: clang when found")
    built = build(parser.parse_args().compiler)
    print(f"compiler: {built.compiler}\nextensions: {built.record_dir()}\npreload: {built.preload}\n"
          f"libFuzzer sees the C code: {'yes' if built.c_coverage else 'no'}")


if __name__ == "__main__":
    main()
