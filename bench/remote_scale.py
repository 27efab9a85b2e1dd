#!/usr/bin/env python
"""kafka-audit on S3 at request scale: listing and planning 10,000 partitions, requests per segment.

    python bench/remote_scale.py --partitions 10000 --scan-partitions 500

1. Writes one partition with the fixture writer: three segments of small batches (an
   idempotent and a transactional producer, one transaction in four aborted), each with its
   ``.index``, ``.timeindex`` and ``.txnindex`` where Kafka writes one, a producer snapshot per
   roll, ``leader-epoch-checkpoint`` and ``partition.metadata``.
2. Starts moto's S3 server on 127.0.0.1 in a child process (stopped by its PID) that holds that
   partition's objects under ``--partitions`` names (``t<NN>-<P>``, 500 partitions a topic), put
   into its store directly (no upload requests: the benchmark is the scan's requests).
3. Measures, in this process, fastest of ``--repeat``:
   (l) the listing of the root as one chain of pages (s3fs ``find``) against page chains side by
       side (:mod:`kafka_audit.io.s3_listing`, what discovery uses): wall time, requests; with
       ``--latency-ms``, also through a relay adding that round trip to each request (a distant
       store; ``--listing-only`` stops there);
   (p) discovery and planning of all partitions (``discover`` + ``plan_tasks`` +
       ``partition_metas``): wall time, requests, and the Python heap they allocate (tracemalloc
       peak, a separate run) and the process's resident set after them;
   (s) the in-process audit of ``--scan-partitions`` of them (one topic per 500): requests per
       segment, GET requests per second, wall time; the figures the summary reports
       (``requests``, ``bytes_fetched``) against the server's own request log.
4. The last line is one JSON object of the figures.

Every request to the local server costs its process a few ms of CPU on the same cores as the
scan, so rates here are the server's, not a store's: compare requests per segment, and the
request rate with S3's published ceiling of 5,500 GET/HEAD requests per second per prefix.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from kafka_audit.audit.plan import partition_metas, plan_tasks  # noqa: E402
from kafka_audit.audit.scan_options import ScanOptions  # noqa: E402
from kafka_audit.engines.local import audit_in_process  # noqa: E402
from kafka_audit.io import s3_listing  # noqa: E402
from kafka_audit.io.storage import StorageSettings  # noqa: E402
from kafka_audit.io.storage_context import StorageContext  # noqa: E402
from kafka_audit.log.log_dir import discover  # noqa: E402
from tests.support.s3_server import CREDENTIALS, HOST, _free_port  # noqa: E402
from tests.support.writer import LogDirWriter, Producer, records  # noqa: E402

BUCKET = "bench"
PER_TOPIC = 500
_SERVE = r"""
import bisect
import hashlib
import sys
from pathlib import Path
from moto.core import DEFAULT_ACCOUNT_ID
from moto.s3.models import s3_backends
from moto.server import ThreadedMotoServer

port, template, count, per_topic, bucket = int(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
names = []


def list_objects_v2(self, bucket, prefix, delimiter, continuation_token, start_after, max_keys):
    # moto sorts every key of the bucket for each page (hours for 170,000 keys); S3 answers a
    # page from its sorted index: the same answers, from a sorted list of the (unchanging) keys.
    if not names:
        names.extend(sorted(bucket.keys.keys()))
    prefix = prefix or ""
    after = self._pagination_tokens.get(continuation_token) if continuation_token else start_after
    if after and delimiter and after.endswith(delimiter):
        i = bisect.bisect_left(names, after[:-1] + chr(ord(delimiter) + 1))
    elif after:
        i = bisect.bisect_right(names, after)
    else:
        i = bisect.bisect_left(names, prefix)
    out = []
    while i < len(names) and names[i].startswith(prefix) and len(out) < max_keys:
        rest = names[i][len(prefix):]
        if delimiter and delimiter in rest:
            folder = prefix + rest.split(delimiter)[0] + delimiter
            out.append(folder)
            i = bisect.bisect_left(names, folder[:-1] + chr(ord(delimiter) + 1))
        else:
            out.append(bucket.keys[names[i]])
            i += 1
    truncated = i < len(names) and names[i].startswith(prefix)
    token = None
    if truncated:
        last = out[-1] if isinstance(out[-1], str) else out[-1].name
        token = hashlib.md5(last.encode()).hexdigest()
        self._pagination_tokens[token] = last
    return out, truncated, token


type(backend).list_objects_v2 = list_objects_v2
backend.create_bucket(bucket, "us-east-1")
files = [(p.relative_to(template).as_posix(), p.read_bytes()) for p in sorted(template.rglob("*")) if p.is_file()]
for name, data in files:
    if "/" not in name:
        backend.put_object(bucket, f"logs/{name}", data)
for n in range(count):
    folder = f"t{n // per_topic:02d}-{n % per_topic}"
    for name, data in files:
        if name.startswith("part-0/"):
            backend.put_object(bucket, f"logs/{folder}/{name[len('part-0/'):]}", data)
server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=True)
server.start()
print("ready", flush=True)
sys.stdin.read()
server.stop()
"""


def write_template(root: Path) -> dict:
    """One partition of three segments, with sidecars, as a broker writes them."""
    with LogDirWriter(root) as out:
        writer = out.partition("part", 0, segment_bytes=16 << 10, index_interval_bytes=2 << 10)
        plain, txn = Producer(1000), Producer(1001, transactional=True)
        turn = 0
        while len(writer.segments) < 3 or writer.segments[-1].size < (12 << 10):
            turn += 1
            values = [f"value-{turn}-{i}-{'x' * 120}".encode() for i in range(8)]
            if turn % 2:
                plain.send(writer, records(values))
            else:
                txn.begin()
                txn.send(writer, records(values))
                txn.abort() if turn % 8 == 0 else txn.commit()
    for checkpoint in ("log-start-offset-checkpoint", "recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        (root / checkpoint).unlink(missing_ok=True)  # they would name one partition of thousands
    files = sorted(p.relative_to(root).as_posix() for p in (root / "part-0").iterdir())
    return {"files_per_partition": files, "segments_per_partition": sum(f.endswith(".log") for f in files)}


class Server:
    def __init__(self, template: Path, count: int, log: Path) -> None:
        self.port = _free_port()
        self.endpoint = f"http://{HOST}:{self.port}"
        self.log = log
        args = [sys.executable, "-c", _SERVE, str(self.port), str(template), str(count), str(PER_TOPIC), BUCKET]
        env = {**os.environ, **CREDENTIALS, "PYTHONUNBUFFERED": "1"}
        with open(log, "wb") as out:
            self.process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=out, env=env)
        for line in self.process.stdout:  # bounded: the child exits (EOF) if it fails
            if line.strip() == b"ready":
                break
        else:
            self.stop()
            raise RuntimeError("the S3 server did not start: " + log.read_text(errors="replace")[-2000:])

    def requests_logged(self) -> int:
        return sum(" HTTP/1.1" in line for line in self.log.read_text(errors="replace").splitlines())

    def options(self) -> dict:
        return {"endpoint_url": self.endpoint, "key": CREDENTIALS["AWS_ACCESS_KEY_ID"], "secret": CREDENTIALS["AWS_SECRET_ACCESS_KEY"]}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


class LatencyProxy:
    """A TCP relay on 127.0.0.1 in front of the server that holds each chunk the client sends
    for ``latency_ms`` first: a request's round trip to a distant store, which the local server
    (answering in a few ms) does not have. Threads, stopped with the process (daemons)."""

    def __init__(self, target_port: int, latency_ms: float) -> None:
        self.delay = latency_ms / 1000
        self.target = (HOST, target_port)
        self.listener = socket.create_server((HOST, 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            client, _ = self.listener.accept()
            upstream = socket.create_connection(self.target)
            threading.Thread(target=self._pump, args=(client, upstream, self.delay), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, 0.0), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket, delay: float) -> None:
        try:
            while chunk := source.recv(1 << 16):
                if delay:
                    time.sleep(delay)
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) / 1024


def plan_all(root: str, request: StorageContext):
    """Discovery and planning of every partition under ``root``: what the driver does first."""
    found = discover([root], storage=request)
    tasks = plan_tasks(found, ScanOptions().split_bytes)
    metas = partition_metas(found, ScanOptions())
    return found, tasks, metas


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--scan-partitions", type=int, default=PER_TOPIC, help="a multiple of 500, or less")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--latency-ms", type=float, default=0.0, help="also list through a relay adding this round trip")
    parser.add_argument("--listing-only", action="store_true", help="stop after the listing figures")
    args = parser.parse_args()
    figures: dict = {"partitions": args.partitions}
    with tempfile.TemporaryDirectory(prefix="kafka-audit-scale-") as scratch:
        template = Path(scratch) / "template"
        layout = write_template(template)
        figures.update(layout)
        started = time.monotonic()
        server = Server(template, args.partitions, Path(scratch) / "moto.log")
        print(f"server ready with {args.partitions} partitions in {time.monotonic() - started:.1f} s", file=sys.stderr)
        try:
            root = f"s3://{BUCKET}/logs"
            request = StorageContext(StorageSettings.of(server.options()))
            listing_figures(figures, root, server, args)
            if args.latency_ms:
                listing_figures(figures, root, server, args, args.latency_ms)
            if args.listing_only:
                print(json.dumps(figures))
                return
            rss_before = _rss_mb()
            best = None
            for _ in range(args.repeat):
                request.filesystem(root)[0].invalidate_cache()
                sent, logged = request.requests_sent(), server.requests_logged()
                began = time.monotonic()
                found, tasks, metas = plan_all(root, request)
                wall = time.monotonic() - began
                requests = request.fetched_since(sent)[0]
                best = min(best or (wall, 0, 0), (wall, requests, server.requests_logged() - logged))
            figures["plan_s"], figures["plan_requests"], figures["plan_requests_logged"] = round(best[0], 2), best[1], best[2]
            figures["plan_segments"], figures["plan_tasks"] = found.segment_count, len(tasks)
            figures["plan_rss_after_mb"] = round(_rss_mb(), 1)
            figures["plan_rss_growth_mb"] = round(_rss_mb() - rss_before, 1)
            print(json.dumps(figures), file=sys.stderr, flush=True)  # so far: a long run may be cut short
            del found, tasks, metas
            request.filesystem(root)[0].invalidate_cache()
            tracemalloc.start()
            plan_all(root, request)
            figures["plan_heap_peak_mb"] = round(tracemalloc.get_traced_memory()[1] / 1e6, 1)
            tracemalloc.stop()
            scan_figures(figures, root, server, args, request)
        finally:
            server.stop()
    print(json.dumps(figures))


def listing_figures(figures: dict, root: str, server: Server, args, latency_ms: float = 0.0) -> None:
    """The root listed as one chain of pages (s3fs ``find``) and as page chains side by side
    (``io/s3_listing.find``, what discovery uses), alternating, fastest of ``--repeat``: wall
    time and the requests the server logged; with ``latency_ms``, through a
    :class:`LatencyProxy` that adds that round trip to every request."""
    options = server.options()
    if latency_ms:
        options["endpoint_url"] = f"http://{HOST}:{LatencyProxy(server.port, latency_ms).port}"
    fs, key, _ = StorageContext(StorageSettings.of(options)).filesystem(root)
    ways = {"one_chain": lambda: fs.find(key, withdirs=True, detail=True), "chains": lambda: s3_listing.find(fs, key)}
    best: dict[str, tuple[float, int, int]] = {}
    for _ in range(args.repeat):
        for name, listing in ways.items():
            fs.invalidate_cache()
            logged, began = server.requests_logged(), time.monotonic()
            keys = len(listing())
            took = (time.monotonic() - began, server.requests_logged() - logged, keys)
            best[name] = min(best.get(name, took), took)
    tag = f"_{latency_ms:g}ms" if latency_ms else ""
    for name, (wall, requests, keys) in best.items():
        figures[f"list_{name}{tag}_s"], figures[f"list_{name}{tag}_requests"] = round(wall, 2), requests
        figures[f"list_{name}_entries"] = keys
    print(json.dumps(figures), file=sys.stderr, flush=True)


def scan_figures(figures: dict, root: str, server: Server, args, request: StorageContext) -> None:
    topics = [f"t{n:02d}" for n in range(max(1, args.scan_partitions // PER_TOPIC))]
    best = None
    for _ in range(args.repeat):
        request.filesystem(root)[0].invalidate_cache()
        logged = server.requests_logged()
        began = time.monotonic()
        found = discover([root], topics=topics, partitions=range(min(PER_TOPIC, args.scan_partitions)),
                         storage=request)
        result = audit_in_process(found, ScanOptions())
        wall = time.monotonic() - began
        if best is None or wall < best[0]:
            best = (wall, result.summary, server.requests_logged() - logged)
    wall, summary, logged = best
    listing = figures["plan_requests"]
    segments = summary["segments"]
    figures.update(
        scan_s=round(wall, 2), scan_partitions=summary["partitions"], scan_segments=segments,
        scan_requests=summary["requests"], scan_requests_logged=logged, scan_bytes_fetched=summary["bytes_fetched"],
        requests_per_segment=round((summary["requests"] - listing) / segments, 3),
        requests_per_s=round(summary["requests"] / wall, 1),
        findings=sum(summary["findings_by_check"].values()),
    )


if __name__ == "__main__":
    main()
