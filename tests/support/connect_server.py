"""A local Spark Connect server from the installed pyspark, on 127.0.0.1, for tests.

Started with pyspark's ``sbin/start-connect-server.sh --wait`` in a process group of its own and
stopped by that group's id; every wait is bounded in time.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

START_TIMEOUT_S = 180
STOP_TIMEOUT_S = 30


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


@contextmanager
def connect_server(scratch: Path, master: str = "local[2]", conf: dict[str, str] | None = None) -> Iterator[str]:
    """Run a server on a free loopback port; yield its ``sc://127.0.0.1:PORT`` URL. Spark settings
    are its defaults, as a managed endpoint's are, except ``conf`` and what keeps it on loopback
    and in ``scratch``."""
    import pyspark

    home = Path(pyspark.__file__).parent
    port = free_port()
    scratch.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOG_DIR": str(scratch),
        "SPARK_PID_DIR": str(scratch),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    command = [
        str(home / "sbin" / "start-connect-server.sh"), "--wait",
        "--master", master,
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf", f"spark.connect.grpc.binding.port={port}",
        "--conf", "spark.ui.enabled=false",
        "--conf", f"spark.local.dir={scratch}",
        "--conf", f"spark.sql.warehouse.dir={scratch / 'warehouse'}",
        "--conf", "spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1",
    ]
    for key, value in (conf or {}).items():
        command += ["--conf", f"{key}={value}"]
    with open(scratch / "connect-server.log", "ab") as log:
        server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _listening(port):
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Spark Connect server did not start; see {scratch / 'connect-server.log'}")
            time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(STOP_TIMEOUT_S)
