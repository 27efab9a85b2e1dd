"""A local S3 API server for tests and the benchmark: moto's server mode on 127.0.0.1.

Started as a child process and stopped by its PID; every wait is bounded in time. Clients reach
it through ``endpoint_url`` with dummy credentials (moto accepts any).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import closing
from pathlib import Path

HOST = "127.0.0.1"
# Dummy credentials for the local server; they must never reach a real store.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
_START_TIMEOUT_S = 60.0
# A request line of the server's log: '127.0.0.1 - - [date] "GET /bucket/key HTTP/1.1" 206 -'.
_REQUEST = re.compile(r'"(?:\x1b\[[0-9;]*m)*([A-Z]+ \S+) HTTP/1\.1')
_STOP_TIMEOUT_S = 10.0


def _free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


class S3Server:
    """``python -m moto.server -H 127.0.0.1 -p PORT`` as a child process."""

    def __init__(self, log_path: Path) -> None:
        self.port = _free_port()
        self.endpoint = f"http://{HOST}:{self.port}"
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    def start(self) -> S3Server:
        log = open(self.log_path, "wb")  # noqa: SIM115 - the server's stdout, closed in stop()
        env = {**os.environ, **CREDENTIALS, "PYTHONUNBUFFERED": "1"}  # its request log written as it goes
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(self.port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        log.close()
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"moto server exited with {self.process.returncode}: see {self.log_path}")
            try:
                with urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=2):
                    return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"moto server did not answer on {self.endpoint} within {_START_TIMEOUT_S:.0f} s")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=_STOP_TIMEOUT_S)

    def requests_logged(self) -> list[str]:
        """The requests the server has logged so far (method and path), in order."""
        lines = self.log_path.read_text(errors="replace").splitlines()
        return [match.group(1) for line in lines if (match := _REQUEST.search(line))]

    def filesystem(self):
        """An s3fs filesystem on this server (no instance cache: tests change the settings)."""
        import s3fs

        return s3fs.S3FileSystem(
            key=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            secret=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            endpoint_url=self.endpoint,
            skip_instance_cache=True,
        )

    def storage(self):
        """A storage context of :meth:`storage_options` (a test's request)."""
        from kafka_audit.io.storage import StorageSettings
        from kafka_audit.io.storage_context import StorageContext

        return StorageContext(StorageSettings.of(self.storage_options()))

    def storage_options(self) -> dict:
        """The ``--storage-option`` settings that reach this server."""
        return {
            "endpoint_url": self.endpoint,
            "key": CREDENTIALS["AWS_ACCESS_KEY_ID"],
            "secret": CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        }


def upload_tree(fs, local: Path, target: str) -> None:
    """Copy every file under ``local`` to ``target`` (``bucket/prefix``), names kept as they are
    (``__consumer_offsets-0``, ``.lock`` included)."""
    for path in sorted(local.rglob("*")):
        if path.is_file():
            fs.pipe_file(f"{target}/{path.relative_to(local).as_posix()}", path.read_bytes())
