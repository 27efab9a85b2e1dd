"""Reports that appear complete or not at all (SPEC section 1): ``--output``, ``report``,
``--write-baseline`` and a local ``--output-parquet`` are written beside their target and renamed
into place when complete, where the target is a regular file or absent. A target that is
something else (``/dev/stdout``, a FIFO, a device) is written in place, as it cannot be replaced.
A write error (full disk, I/O error) is one exit-2 line naming the file, and the temporary file
is removed. :class:`OutputSink`: where the reports' writers put them."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import TextIO

import typer
from rich.console import Console

from kafka_audit.cli.options import TEXT_ERRORS, fail


def replaceable(path: Path) -> bool:
    """Whether ``path`` is absent or a regular file (following a symbolic link), so that a file
    written beside it can be renamed over it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return True


def _mode_for(path: Path, new: int) -> int:
    """The permissions the target has, or those a new one gets (``new`` less the umask), rather
    than the 0600/0700 of a temporary file or folder."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return new & ~mask


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with suppress(OSError):
            os.unlink(path)


@contextmanager
def atomic_path(path: Path, option: str, directory: bool = False) -> Iterator[Path]:
    """A temporary path beside ``path`` (a folder when ``directory``) to write, renamed over
    ``path`` when the block ends; exit 2 with one line naming ``path`` when it cannot be
    written. A target that cannot be replaced is handed back as it is."""
    if not directory and not replaceable(path):
        try:
            yield path
        except OSError as exc:
            raise fail(f"{option} {path}: {exc.strerror or exc}") from None
        return
    folder = path.parent if str(path.parent) else Path(".")
    if directory:
        folder.mkdir(parents=True, exist_ok=True)
    make = tempfile.mkdtemp if directory else tempfile.mkstemp
    try:
        made = make(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise fail(f"{option} {path}: {exc.strerror or exc}") from None
    temporary = made if isinstance(made, str) else made[1]
    if not isinstance(made, str):
        os.close(made[0])
    try:
        yield Path(temporary)
        _move_into_place(Path(temporary), path, directory)
    except OSError as exc:
        _remove(temporary)
        raise fail(f"{option} {path}: {exc.strerror or exc}") from None
    except BaseException:
        _remove(temporary)
        raise


def _move_into_place(temporary: Path, path: Path, directory: bool) -> None:
    """Rename the finished ``temporary`` over ``path``. For a folder (``--output-parquet``), each
    dataset in it replaces the one of its name in ``path`` (created when absent): whatever else
    the folder holds stays."""
    if not directory:
        os.chmod(temporary, _mode_for(path, 0o666))
        os.replace(temporary, path)
        return
    path.mkdir(exist_ok=True)
    for entry in sorted(os.listdir(temporary)):
        target = path / entry
        old = None
        if os.path.lexists(target):
            old = tempfile.mkdtemp(dir=path, prefix=f".{entry}.", suffix=".old")
            os.replace(target, os.path.join(old, entry))
        os.replace(temporary / entry, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    os.rmdir(temporary)


@contextmanager
def output_text(path: Path, option: str = "--output") -> Iterator[TextIO]:
    """A text file to write a report to (:func:`atomic_path`): flushed to disk before the
    rename, so that a full disk is seen here and not after."""
    with atomic_path(path, option) as target, open(target, "w", encoding="utf-8", errors=TEXT_ERRORS) as handle:
        yield handle
        handle.flush()
        if replaceable(target):
            os.fsync(handle.fileno())


def write_text(path: Path, text: str, option: str = "--output") -> None:
    """``text`` written to ``path`` whole or not at all."""
    with output_text(path, option) as handle:
        handle.write(text)


class OutputSink:
    """Where a command's report goes (:class:`kafka_audit.report.formats.Sink`): stdout, or
    ``output`` written whole or not at all."""

    def __init__(self, output: Path | None) -> None:
        self.output = output

    def text(self, text: str) -> None:
        if text and not text.endswith("\n"):
            text += "\n"
        if self.output:
            write_text(self.output, text)
        else:
            sys.stdout.write(text)

    @contextmanager
    def console(self, force_terminal: bool | None = None) -> Iterator[Console]:
        if not self.output:
            yield Console()
            return
        with output_text(self.output) as handle:
            yield Console(file=handle, width=160, force_terminal=force_terminal)

    def file(self) -> AbstractContextManager[Path]:
        assert self.output is not None  # a command that writes a file gives it its default
        return atomic_path(self.output, "--output")

    def wrote(self, details: str) -> None:
        from kafka_audit.report.safe_text import escape_text

        typer.echo(f"kafka-audit: wrote {escape_text(str(self.output))} {details}", err=True)
