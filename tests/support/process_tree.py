"""What a process and its descendants (the driver JVM, PySpark's worker daemon and workers) expose
while a scan runs: their listening sockets (psutil reads ``/proc/net/tcp*``, ``/proc/net/udp*``
and each process's ``/proc/PID/fd``), command lines and environments; and, after a command, the
processes still alive that carry an environment marker it was started with (:func:`marked`).

``python -m tests.support.process_tree DATA [SECRET_FILE]`` runs the Spark engine's audit of DATA
on ``local[2]`` (the same session code as ``kafka-audit scan``) and, from the audit's progress
hook, that is while the scan runs (the first call that finds PySpark's worker daemon up), prints
one JSON object: the tree's processes, listeners, command lines and environments, and the
permission bits of what is in the temporary folder.
"""

from __future__ import annotations

import ipaddress
import json
import sys
from dataclasses import asdict, dataclass

import psutil


@dataclass(frozen=True)
class Listener:
    pid: int
    process: str
    protocol: str
    address: str
    port: int


def tree(pid: int) -> list[psutil.Process]:
    """``pid`` and every process below it that is still there."""
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def marked(name: str, value: str) -> list[str]:
    """The command lines of the live processes (zombies aside) whose environment holds
    ``name=value``: a marker every descendant inherits, whichever session or group it moved to
    and whoever its parent is now (``/proc/PID/environ``, readable for this user's processes)."""
    needle = f"{name}={value}".encode()
    found = []
    for process in psutil.process_iter():
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                continue
            with open(f"/proc/{process.pid}/environ", "rb") as environ:
                if needle not in environ.read().split(b"\0"):
                    continue
            found.append(f"{process.pid} {' '.join(process.cmdline())}")
        except (OSError, psutil.Error):
            continue
    return found


def listeners(processes: list[psutil.Process]) -> list[Listener]:
    """The TCP sockets in LISTEN state and the bound UDP sockets of ``processes``."""
    found = []
    for process in processes:
        try:
            connections = process.net_connections(kind="inet")
            name = process.name()
        except psutil.NoSuchProcess:
            continue
        for connection in connections:
            udp = connection.type == 2  # socket.SOCK_DGRAM
            if connection.status == psutil.CONN_LISTEN or (udp and connection.laddr):
                found.append(Listener(process.pid, name, "udp" if udp else "tcp", connection.laddr.ip, connection.laddr.port))
    return found


def is_loopback(address: str) -> bool:
    """127.0.0.0/8, ::1, and an IPv4 loopback address written as IPv6 (``::ffff:127.0.0.1``)."""
    parsed = ipaddress.ip_address(address.split("%", maxsplit=1)[0])
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
        parsed = parsed.ipv4_mapped
    return parsed.is_loopback


def command_lines(processes: list[psutil.Process]) -> list[str]:
    lines = []
    for process in processes:
        try:
            lines.append(" ".join(process.cmdline()))
        except psutil.Error:
            continue
    return lines


def environments(processes: list[psutil.Process]) -> list[str]:
    texts = []
    for process in processes:
        try:
            texts.append("\n".join(f"{k}={v}" for k, v in process.environ().items()))
        except psutil.Error:
            continue
    return texts


def _probe(data: str, secret_file: str | None) -> dict:
    """Audit ``data`` on Spark; the first progress call records the process tree."""
    import os
    import tempfile

    from kafka_audit.audit.scan_options import ScanOptions
    from kafka_audit.engines.run import Engine, run_audit
    from kafka_audit.engines.spark_security import read_secret_file
    from kafka_audit.log.log_dir import discover

    seen: dict = {}

    class Probe:
        def starting_spark(self, where: str) -> None:
            pass

        def spark_started(self) -> None:
            pass

        def update(self, progress) -> None:
            if any("pyspark.worker" in line for line in seen.get("command_lines", ())):  # the worker daemon's argument
                return  # recorded with the Python workers up (the last call comes after the job, workers kept)
            processes = tree(os.getpid())
            seen["processes"] = [p.name() for p in processes]
            seen["listeners"] = [asdict(listener) for listener in listeners(processes)]
            seen["command_lines"] = command_lines(processes)
            seen["environments"] = environments(processes)
            folder = tempfile.gettempdir()
            seen["scratch"] = {name: os.stat(os.path.join(folder, name)).st_mode & 0o777 for name in os.listdir(folder)}

    secret = read_secret_file(secret_file) if secret_file else None
    result = run_audit(discover([data]), ScanOptions(), Engine.spark, "local[2]", display=Probe(), secret=secret)
    return {**seen, "findings": len(result.findings)}


if __name__ == "__main__":
    print(json.dumps(_probe(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)))
