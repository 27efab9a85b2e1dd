"""One exception base (issue 33): every exception class of the package derives from
``KafkaAuditError``, keeps the built-in base it had (every ``except`` that caught it still does),
and carries the SPEC section 1 exit code that the command line maps it to in one place."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from kafka_audit.cli.options import OutputFailed, ReaderGone, exit_code_of
from kafka_audit.engines.spark_errors import SparkFailure
from kafka_audit.errors import EXIT_OK, EXIT_USAGE, KafkaAuditError
from kafka_audit.io.broker_log import BrokerLogError
from kafka_audit.io.local_file import FileChanged
from kafka_audit.io.rsm_manifest import ManifestError
from kafka_audit.io.rsm_objects import EncryptedSegment
from kafka_audit.report.baseline import BaselineError

PACKAGE = Path(__file__).resolve().parent.parent / "kafka_audit"


def _exception_classes() -> list[type[BaseException]]:
    """Every class the package's modules define that is an exception (found by reading the
    source, then imported: no module is left out for not being imported yet)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        classes = [node.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ClassDef)]
        if not classes:
            continue
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        module = importlib.import_module(name)
        found += [
            cls for cls in (getattr(module, c, None) for c in classes)
            if isinstance(cls, type) and issubclass(cls, BaseException) and cls.__module__ == name
        ]
    return found


def test_every_exception_of_the_package_derives_from_the_one_base():
    classes = _exception_classes()
    assert len(classes) >= 15  # the decoders', the storage's, Spark's, the command line's
    assert [c.__qualname__ for c in classes if not issubclass(c, KafkaAuditError)] == []


@pytest.mark.parametrize(
    ("error", "builtin"),
    [(BaselineError, ValueError), (ManifestError, ValueError), (FileChanged, OSError), (EncryptedSegment, OSError),
     (SparkFailure, RuntimeError)],
)
def test_an_error_keeps_the_builtin_base_it_had(error: type[Exception], builtin: type[Exception]):
    assert issubclass(error, builtin) and issubclass(error, KafkaAuditError)


def test_os_errors_keep_their_errno_and_message():
    changed = FileChanged("shrank", "the file is shorter than listed")
    assert (changed.errno, changed.strerror, str(changed)) == (116, "the file is shorter than listed",
                                                               "[Errno 116] the file is shorter than listed")


def test_an_error_reaching_the_command_line_is_one_line_and_its_exit_code(capsys):
    assert exit_code_of(BrokerLogError("server.log: not a broker log")) == EXIT_USAGE
    assert capsys.readouterr().err == "kafka-audit: server.log: not a broker log\n"
    # Data in the message is shown escaped, as in every other exit-2 line.
    assert exit_code_of(SparkFailure("master \x1b[31mred")) == EXIT_USAGE
    assert capsys.readouterr().err == "kafka-audit: master \\x1b[31mred\n"


def test_a_reader_gone_ends_quietly_with_exit_0_and_a_failed_output_with_one_line(capsys, monkeypatch):
    monkeypatch.setattr("kafka_audit.cli.options.os.dup2", lambda fd, to: None)  # keep pytest's stdout
    assert ReaderGone.exit_code == EXIT_OK
    assert exit_code_of(ReaderGone()) == EXIT_OK
    assert capsys.readouterr().err == ""
    assert exit_code_of(OutputFailed(OSError(28, "No space left on device"))) == EXIT_USAGE
    assert capsys.readouterr().err == "kafka-audit: cannot write the output to standard output: No space left on device\n"
