"""How a Spark session of the audit is secured (SPEC section 1, ``--spark-secret-file``).

- A ``local[...]`` master runs the whole job in this machine: the driver's RPC server and its
  block manager (``NettyBlockTransferService``, bound to ``spark.driver.bindAddress``) listen on
  127.0.0.1 only, and the driver advertises that address (``spark.driver.host``). Spark's default
  is the host's name, which resolves to its network address: anyone who reaches the host could
  talk to the process that holds the audited records. The UI stays off (spark_session). PySpark's
  own servers (the Py4J gateway, the Python worker daemon, the accumulator and the Arrow/serving
  sockets) bind to the loopback address already (``PythonGatewayServer``, ``daemon.py``,
  ``SocketAuthServer``).
- A shared secret turns on what Spark's security guide (docs/security.md) names for a deployment
  that is not YARN or Kubernetes: ``spark.authenticate`` with ``spark.authenticate.secret`` (the
  same secret as the standalone master's and workers'), AES-based RPC encryption
  (``spark.network.crypto.enabled``) and encryption of shuffle and spill files
  (``spark.io.encryption.enabled``): they hold log data.

The secret comes from ``--spark-secret-file`` or, as Spark's ``SecurityManager`` reads it
(``ENV_AUTH_SECRET``), from the ``_SPARK_AUTH_SECRET`` environment variable. It is never put on a
command line (PySpark starts the JVM with ``spark-submit --conf KEY=VALUE`` for every setting it
has before the JVM is up, readable by every user of the machine in ``/proc/PID/cmdline``): it is
set on the JVM's configuration through the authenticated Py4J connection once the JVM runs
(:mod:`kafka_audit.engines.spark_session`). Spark redacts it from its logs and UI
(``spark.redaction.regex`` matches ``secret``).
"""

from __future__ import annotations

import os
import re

from kafka_audit.errors import KafkaAuditError

LOOPBACK = "127.0.0.1"
# Spark's SparkMasterRegex: "local", "local[N]", "local[*]", "local[N, F]", "local[*, F]".
_LOCAL_MASTER = re.compile(r"local(\[\s*(\*|\d+)\s*(,\s*\d+\s*)?\])?")
# The variable Spark's SecurityManager reads the secret from before spark.authenticate.secret.
SECRET_ENVIRONMENT = "_SPARK_AUTH_SECRET"
SECRET_SETTING = "spark.authenticate.secret"
AUTHENTICATION = {
    "spark.authenticate": "true",
    "spark.network.crypto.enabled": "true",
    "spark.io.encryption.enabled": "true",
}


class SecretError(KafkaAuditError, ValueError):
    """A secret file that cannot be used; ``str()`` names the file and why, never the content."""


def is_local_master(master: str) -> bool:
    """Whether ``master`` runs the job in this process (Spark's LOCAL_N_REGEX and
    LOCAL_N_FAILURES_REGEX, and plain ``local``)."""
    return _LOCAL_MASTER.fullmatch(master.strip()) is not None


def loopback_settings(master: str) -> dict[str, str]:
    """The settings that keep every listener of a local run on 127.0.0.1 (none for a cluster,
    whose executors must reach the driver)."""
    if not is_local_master(master):
        return {}
    return {"spark.driver.bindAddress": LOOPBACK, "spark.driver.host": LOOPBACK}


def read_secret_file(path: str) -> str:
    """The secret in ``path``: its text without the line end an editor adds. Raises
    :class:`SecretError` naming the file when it cannot be read or holds nothing."""
    try:
        with open(path, encoding="utf-8") as handle:
            secret = handle.read().strip("\r\n")
    except UnicodeDecodeError:
        raise SecretError(f"--spark-secret-file {path}: not UTF-8 text") from None
    except OSError as exc:
        raise SecretError(f"--spark-secret-file {path}: {exc.strerror or exc}") from None
    if not secret.strip():
        raise SecretError(f"--spark-secret-file {path}: the file is empty")
    return secret


def given_secret(secret_file: str | None) -> str | None:
    """The secret of a classic session: the file's when one is given, else ``_SPARK_AUTH_SECRET``
    when it is set and not empty, else None (no authentication)."""
    if secret_file is not None:
        return read_secret_file(secret_file)
    return os.environ.get(SECRET_ENVIRONMENT) or None
