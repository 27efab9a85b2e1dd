"""Spark failures told in one line: the root cause from the JVM's log or the Python worker's
traceback, the executor it happened on, and where the kept log is (SPEC section 1, exit 2).

A failed start surfaces in PySpark as ``[JAVA_GATEWAY_EXITED] Java gateway process exited``; a failed
job as a Py4J error whose first line says which Java method was called. Neither is the cause: that
is the JVM's first error in ``spark.log`` (an invalid master URL, ``Invalid maximum heap size``, a
master that refuses connections) or the last line of the Python worker's traceback
(``ModuleNotFoundError: No module named 'kafka_audit'``, ``[PYTHON_VERSION_MISMATCH] ...``).
"""

from __future__ import annotations

import re
import socket
from contextlib import suppress
from urllib.parse import urlsplit

from kafka_audit.errors import KafkaAuditError

# How long after the driver's JVM is up a standalone master may take to accept the application.
MASTER_ANSWER_S = 20.0
# What Spark's StandaloneAppClient logs when an attempt to register with the master fails, and
# what StandaloneSchedulerBackend logs (at INFO) once the application is registered.
MASTER_FAILURE = "Failed to connect to master"
MASTER_CONNECTED = "Connected to Spark cluster with app ID"
MASTER_CONNECTED_LOGGER = "org.apache.spark.scheduler.cluster.StandaloneSchedulerBackend"
# What the driver logs when a master with spark.authenticate on gets a connection without it
# (SaslRpcHandler / AuthRpcHandler: the first message is not an authentication message), and when
# its own handshake fails (TransportClientFactory, AuthClientBootstrap then SaslClientBootstrap):
# the master closes the channel on a secret it does not share.
AUTH_REQUIRED = "Expected SaslMessage"
AUTH_FAILED = "Exception while bootstrapping client"
# Spark's own log lines: "26/11/25 02:23:06 WARN Utils: ..."
_LOG_LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (?P<level>[A-Z]+) (?P<source>[^:]+): (?P<text>.*)$")
# WARN lines that are the cause, not noise.
_MEANINGFUL_WARNINGS = (MASTER_FAILURE,)
# "org.apache.spark.SparkException: text" / "pyspark.errors...PySparkRuntimeError: text".
_EXCEPTION = re.compile(r"^(?:Exception in thread \"[^\"]*\" )?(?:[a-z_][\w$]*\.)*(?P<name>[A-Z][\w$]*(?:Exception|Error))(?::\s*(?P<text>.*))?$")
_NOISE_PREFIXES = (
    "WARNING:",
    "Using Spark's default log4j profile",
    "Setting default log level",
    "To adjust logging level",
    "Error: A fatal exception has occurred",
    "Error: Could not create the Java Virtual Machine",
)
# "Lost task 0.3 in stage 1.0 (TID 7) (127.0.0.1 executor 1): ..."
_LOST_TASK = re.compile(r"Lost task [\d.]+ in stage [\d.]+ \(TID \d+\) \((?P<where>[^)]*)\)")
_MAX_CAUSE = 300
# "/path/module.py:127: FutureWarning: ..." (Python warnings the driver printed while starting).
_PYTHON_WARNING = re.compile(r"^\S+:\d+: \w*Warning: ")
# HotSpot's unified logging below error ("[0.135s][warning][cds,dynamic] Unable to use shared
# archive..."): the JVM went on.
_JVM_LOG_NOTICE = re.compile(r"^\[[\d.]+s\]\[(?:warning|info|debug|trace)\s*\]\[")


class SparkFailure(KafkaAuditError, RuntimeError):
    """Spark failed to start or to run; ``str()`` is the one line for the user: the root cause,
    where it happened, and the kept ``spark.log``."""


def root_cause(text: str) -> str | None:
    """The first line of ``text`` (an exception's message or a ``spark.log``) that names a cause."""
    lines = [line.rstrip() for line in text.splitlines()]
    python = _python_exception(lines)
    if python:
        return python
    for index, line in enumerate(lines):
        stripped = line.strip()
        if (
            not stripped
            or line[0].isspace()  # stack frames, quoted source lines
            or stripped.startswith(("at ", "...", "Caused by:"))
            or stripped.startswith(_NOISE_PREFIXES)
            or _PYTHON_WARNING.match(stripped)
            or _JVM_LOG_NOTICE.match(stripped)
        ):
            continue
        logged = _LOG_LINE.match(stripped)
        if logged:
            level, text_part = logged.group("level"), logged.group("text")
            if level in ("ERROR", "FATAL") or any(w in text_part for w in _MEANINGFUL_WARNINGS):
                return _with_deepest_cause(text_part, lines[index + 1 :])
            continue
        exception = _EXCEPTION.match(stripped)
        cause = f"{exception.group('name')}: {exception.group('text') or ''}".rstrip(": ") if exception else stripped
        return _with_deepest_cause(cause, lines[index + 1 :])
    return None


def _python_exception(lines: list[str]) -> str | None:
    """The exception line closing the first Python traceback in ``lines``, if there is one."""
    try:
        start = next(i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line)
    except StopIteration:
        return None
    for line in lines[start + 1 :]:
        if line and not line[0].isspace() and not line.startswith(("Traceback", "During handling")):
            match = _EXCEPTION.match(line.strip())
            if match:
                return f"{match.group('name')}: {match.group('text') or ''}".rstrip(": ")
            return line.strip()
    return None


def _with_deepest_cause(text: str, following: list[str]) -> str:
    """``text``, and the last ``Caused by:`` of the stack trace right after it when it adds something."""
    deepest = None
    for line in following:
        stripped = line.strip()
        if stripped.startswith("Caused by:"):
            match = _EXCEPTION.match(stripped.removeprefix("Caused by:").strip())
            deepest = match.group("text") if match and match.group("text") else stripped.removeprefix("Caused by:").strip()
        elif stripped and not stripped.startswith(("at ", "...")) and not _EXCEPTION.match(stripped):
            break  # past the stack trace (a logged line is followed by its exception, then frames)
    if deepest and deepest not in text:
        return f"{text} ({deepest})"
    return text


def exception_text(exc: BaseException) -> str:
    """The exception's message and, for an error PySpark captured from the JVM, the Java
    exception's own message (where Spark says which task failed on which executor)."""
    text = str(exc)
    origin = getattr(exc, "_origin", None)
    if origin is not None:
        with suppress(Exception):  # the JVM may be gone
            text += "\n" + str(origin.getMessage())
    return text


def executor_of(text: str) -> str | None:
    """The executor a failed task last ran on, from Spark's "Lost task" line."""
    found = _LOST_TASK.findall(text)
    return found[-1] if found else None


def describe(exc: BaseException, log_path: str | None) -> str:
    """One line: the root cause (from the exception, else from ``spark.log``), where, and the log."""
    message = exception_text(exc)
    cause = root_cause(message) if "Traceback" in message or not log_path else None
    if cause is None and log_path:
        try:
            with open(log_path, encoding="utf-8", errors="replace") as log:
                cause = root_cause(log.read())
        except OSError:
            cause = None
    if cause is None:
        cause = root_cause(message) or type(exc).__name__
    where = executor_of(message)
    line = cause[:_MAX_CAUSE] + (f" (on {where})" if where else "")
    return f"{line}; Spark's log: {log_path}" if log_path else line


def authentication_problem(log_text: str, master: str, with_secret: bool) -> str | None:
    """Why ``master`` turned the application away, when ``spark.log`` shows it was the
    authentication: a secret missing, or one that is not the cluster's (never quoted)."""
    if not with_secret and AUTH_REQUIRED in log_text:
        return (
            f"the Spark master {master} requires authentication: give the cluster's shared secret "
            "with --spark-secret-file (or _SPARK_AUTH_SECRET)"
        )
    if with_secret and AUTH_FAILED in log_text:
        return (
            f"the Spark master {master} refused the authentication: the secret given "
            "(--spark-secret-file or _SPARK_AUTH_SECRET) is not the cluster's"
        )
    return None


def not_accepted(log_text: str, master: str, with_secret: bool) -> str:
    """Why a master that gave no answer in time (:data:`MASTER_ANSWER_S`) did not take the
    application, from the driver's log: its authentication refused, or the log's root cause."""
    refused = authentication_problem(log_text, master, with_secret)
    if refused:
        return refused
    cause = root_cause(log_text)
    return f"the Spark master {master} did not accept the application within {MASTER_ANSWER_S:.0f} s" + (
        f" ({cause})" if cause else ""
    )


def check_master_reachable(master: str, timeout: float = 5.0) -> str | None:
    """For a standalone master (``spark://host:port[,host:port]``), why none of its addresses takes
    a TCP connection, or None when one does (or the master is of another kind). Spark itself
    retries an unreachable master for over a minute before it gives up."""
    if not master.startswith("spark://"):
        return None
    problems = []
    for address in master.removeprefix("spark://").split(","):
        parsed = urlsplit(f"spark://{address}")
        try:
            host, port = parsed.hostname, parsed.port or 7077
        except ValueError as exc:
            return f"invalid master URL {master}: {exc}"
        if not host:
            return f"invalid master URL {master}"
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return None
        except OSError as exc:
            problems.append(f"{host}:{port} ({exc.strerror or exc})")
    return f"cannot reach the Spark master at {', '.join(problems)}"
