"""A Spark standalone cluster on 127.0.0.1 for tests: a master and workers started with the
installed PySpark's ``sbin/spark-daemon.sh``, stopped by the PIDs it records. Every wait is bounded.

A worker may be started in a mount namespace of its own (``unshare -m``) where a folder is hidden
under an empty tmpfs: its executors cannot see the files the driver sees there, as on a cluster
whose nodes do not mount the driver's disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).parent
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
START_TIMEOUT_S = 90.0
# A bound for daemons on a machine whose two cores are shared by several test runs at once.
SLOW_START_S = 240.0
STOP_TIMEOUT_S = 15.0


def authenticated(secret: str) -> dict[str, str]:
    """The settings of daemons that accept only applications holding ``secret`` over encrypted
    RPC (Spark's docs/security.md for a standalone cluster)."""
    return {"spark.authenticate": "true", "spark.authenticate.secret": secret, "spark.network.crypto.enabled": "true"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def can_hide_folders() -> bool:
    """Whether ``unshare -m`` with a tmpfs mount works here (root, or a user namespace)."""
    if shutil.which("unshare") is None:
        return False
    try:
        done = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", "mount -t tmpfs none /mnt"],
            capture_output=True,
            timeout=10, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@dataclass
class StandaloneCluster:
    """``start()`` a master and ``workers`` one-core workers; ``hidden``: for each worker number,
    a folder its executors do not see."""

    root: Path
    workers: int = 2
    hidden: dict[int, Path] = field(default_factory=dict)
    # Spark settings of the master and the workers (``--properties-file``, a 0600 file: it may
    # hold ``spark.authenticate.secret``).
    properties: dict[str, str] = field(default_factory=dict)
    start_timeout_s: float = START_TIMEOUT_S
    port: int = 0
    ui_port: int = 0

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_PID_DIR": str(self.root / "pids"),
            "SPARK_LOG_DIR": str(self.root / "logs"),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": "256m",
        }

    def start(self) -> StandaloneCluster:
        self.port, self.ui_port = free_port(), free_port()
        (self.root / "pids").mkdir(parents=True, exist_ok=True)
        settings = self._properties_file()
        self._daemon(MASTER_CLASS, 1, ["--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.ui_port), *settings])
        for number in range(1, self.workers + 1):
            work = self.root / f"work-{number}"
            work.mkdir(exist_ok=True)
            args = [self.url, "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", "0", "--work-dir", str(work)]
            args += settings
            self._daemon(WORKER_CLASS, number, args, hide=self.hidden.get(number))
        self._wait_for_workers()
        return self

    def _properties_file(self) -> list[str]:
        """``--properties-file FILE`` holding :attr:`properties` (none without any)."""
        if not self.properties:
            return []
        path = self.root / "daemons.properties"
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.writelines(f"{key} {value}\n" for key, value in self.properties.items())
        return ["--properties-file", str(path)]

    def _daemon(self, cls: str, number: int, args: list[str], hide: Path | None = None) -> None:
        command = [str(SPARK_HOME / "sbin" / "spark-daemon.sh"), "start", cls, str(number), *args]
        if hide is not None:
            command = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                       f'mount -t tmpfs none "{hide}" && exec "$@"', "sh", *command]
        subprocess.run(command, env=self.env(), check=True, capture_output=True, timeout=60)

    def _wait_for_workers(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        alive = None
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as answer:
                    alive = json.load(answer).get("aliveworkers", 0)
            except (OSError, ValueError):
                alive = None  # the master is not up yet
            if alive is not None and alive >= self.workers:
                return
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(
            f"{alive} of {self.workers} workers registered within {self.start_timeout_s:.0f} s; logs in {self.root / 'logs'}"
        )

    def pids(self) -> list[int]:
        found = []
        for pid_file in sorted((self.root / "pids").glob("*.pid")):
            try:
                found.append(int(pid_file.read_text().strip()))
            except (OSError, ValueError):
                continue
        return found

    def stop(self) -> None:
        """SIGTERM each daemon by its recorded PID, SIGKILL what is left after a bounded wait."""
        pids = self.pids()
        for pid in pids:
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
            time.sleep(0.2)
        for pid in pids:
            if _alive(pid):
                _signal(pid, signal.SIGKILL)


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) is gone for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


@dataclass
class ConnectServer:
    """A local Spark Connect server (``local[1]``) on 127.0.0.1, started with spark-daemon.sh."""

    root: Path
    port: int = 0

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def start(self) -> ConnectServer:
        self.port = free_port()
        (self.root / "pids").mkdir(parents=True, exist_ok=True)
        env = {**StandaloneCluster(self.root).env(), "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
        env.pop("SPARK_DAEMON_MEMORY")  # this daemon is a driver: spark-submit's --driver-memory
        command = [
            str(SPARK_HOME / "sbin" / "spark-daemon.sh"), "submit", CONNECT_CLASS, "1", "--name", "kafka-audit-tests",
            "--master", "local[1]", "--driver-memory", "512m",
            "--conf", "spark.ui.enabled=false",
            "--conf", f"spark.connect.grpc.binding.port={self.port}",
            "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        ]
        subprocess.run(command, env=env, check=True, capture_output=True, timeout=60)
        deadline = time.monotonic() + START_TIMEOUT_S
        pids = StandaloneCluster(self.root).pids()
        while time.monotonic() < deadline and all(_alive(pid) for pid in pids):
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the Spark Connect server is not listening after {START_TIMEOUT_S:.0f} s or died; logs in {self.root / 'logs'}")

    def stop(self) -> None:
        StandaloneCluster(self.root).stop()
