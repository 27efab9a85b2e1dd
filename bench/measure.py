"""The measurements of ``bench/run.py``, one function each; also the peak-RSS probe's entry point.

Every in-process measurement walks the same ``.log`` files and returns a :class:`Measurement`
(bytes, records, wall and CPU seconds). The Spark scan and the peak-RSS probe run in
subprocesses: one JVM per Spark run, and a fresh interpreter whose high-water mark is the audit's.

    python bench/measure.py rss SEGMENT.log           # the RSS probe: prints one JSON object
    python bench/measure.py spark DIR MASTER REPEAT   # the Spark probe: prints one JSON object
    python bench/measure.py startup DIR on|off        # the Spark start-up probe: one JSON object
"""

from __future__ import annotations

import json
import math
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import crc32c

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from kafka_audit.record.record_batch import (  # noqa: E402
    LOG_OVERHEAD,
    V2_ATTRIBUTES_OFFSET,
    V2_CRC_OFFSET,
    V2_RECORD_BATCH_OVERHEAD,
    V2_RECORDS_COUNT_OFFSET,
)

# baseOffset i64, batchLength i32 | partitionLeaderEpoch i32, magic i8, crc u32 (v2 layout).
_LOG_OVERHEAD = struct.Struct(">qi")
_CRC = struct.Struct(">I")
_RECORD_COUNT = struct.Struct(">i")


@dataclass
class Measurement:
    name: str
    bytes: int
    records: int
    wall_s: float
    cpu_s: float
    note: str = ""

    @property
    def mb_s(self) -> float:
        return self.bytes / 1e6 / self.wall_s if self.wall_s else 0.0

    @property
    def records_s(self) -> float:
        return self.records / self.wall_s if self.wall_s else 0.0


def segment_files(root: Path) -> list[Path]:
    return sorted(root.glob("*/*.log"))


def best_of(repeat: int, name: str, run) -> Measurement:
    """Run ``run() -> (bytes, records, note)`` ``repeat`` times; keep the fastest (wall time).

    The machine is shared: the fastest run is the one least disturbed by the neighbours.
    """
    best: Measurement | None = None
    for _ in range(max(1, repeat)):
        wall, cpu = time.perf_counter(), time.process_time()
        size, records, note = run()
        result = Measurement(name, size, records, time.perf_counter() - wall, time.process_time() - cpu, note)
        if best is None or result.wall_s < best.wall_s:
            best = result
    return best


def warm(files: list[Path]) -> None:
    """Read every file once so that every measurement starts from the page cache."""
    buffer = bytearray(1 << 20)
    for path in files:
        with open(path, "rb", buffering=0) as f:
            while f.readinto(buffer):
                pass


# -- (a) the limit -----------------------------------------------------------------------------


def limit(files: list[Path], inflate: bool = False):
    """Read each file into memory and CRC-32C every v2 batch body (attributes to the end); with
    ``inflate``, also decompress every compressed payload (compression.decompress, the audit's
    own inflation, bounded as the audit bounds it).

    The least any audit must do: touch every byte once and checksum it (and read its records:
    inflate them), with a Python step per batch only to find the next one.
    """
    from kafka_audit.record.byte_stream import STREAM_BOUND
    from kafka_audit.record.compression import decompress

    def run():
        total = records = 0
        buffer = bytearray()
        for path in files:
            with open(path, "rb", buffering=0) as f:
                size = os.fstat(f.fileno()).st_size
                if len(buffer) < size:
                    buffer = bytearray(size)
                view = memoryview(buffer)[:size]
                f.readinto(view)
            pos = 0
            while pos + V2_RECORD_BATCH_OVERHEAD <= size:
                _, length = _LOG_OVERHEAD.unpack_from(view, pos)
                end = pos + LOG_OVERHEAD + length
                if crc32c.crc32c(view[pos + V2_ATTRIBUTES_OFFSET : end]) != _CRC.unpack_from(view, pos + V2_CRC_OFFSET)[0]:
                    raise SystemExit(f"bench: bad CRC in {path} at {pos}: the benchmark data is damaged")
                records += _RECORD_COUNT.unpack_from(view, pos + V2_RECORDS_COUNT_OFFSET)[0]
                codec = view[pos + V2_ATTRIBUTES_OFFSET + 1] & 0x07
                if inflate and codec:
                    decompress(codec, view[pos + V2_RECORD_BATCH_OVERHEAD : end], 2, STREAM_BOUND)
                pos = end
            view.release()
            total += size
        return total, records, ""

    return run


# -- (b) kafka-audit's batch walk --------------------------------------------------------------


def walk(files: list[Path]):
    """kafka-audit's batch-level walk: FileRecords.batches() (framing, header, CRC-32C per batch)."""
    from kafka_audit.record.file_records import FileRecords
    from kafka_audit.record.record_batch import RecordBatch

    def run():
        total = records = 0
        for path in files:
            with FileRecords(path) as segment:
                for item in segment.batches():
                    if isinstance(item, RecordBatch):
                        records += item.record_count or 0
                total += segment.size
        return total, records, ""

    return run


# -- (c) kafka-audit's audit core --------------------------------------------------------------


def audit(root: Path):
    """The whole audit in one process (audit_in_process): every check, every record."""
    from kafka_audit.audit.scan_options import ScanOptions
    from kafka_audit.engines.local import audit_in_process
    from kafka_audit.log.log_dir import discover

    def run():
        # CPU seconds when the last segment task is done: the segment step's share of the run.
        started, segments_done = time.process_time(), []

        def on_progress(progress) -> None:
            if progress.segments_done == progress.segments_total and not segments_done:
                segments_done.append(time.process_time())

        result = audit_in_process(discover([str(root)]), ScanOptions(), on_progress)
        ended = time.process_time()
        summary = result.summary
        split = segments_done[0] if segments_done else ended
        steps = f"segment step {split - started:.2f} + partition step {ended - split:.2f} cpu s"
        return summary["bytes"], summary["records"], f"{len(result.findings)} findings; {steps}"

    return run


# -- (d) kafka-python --------------------------------------------------------------------------


def kafka_python(files: list[Path]):
    """kafka-python's MemoryRecords iteration over the same segments: each batch's CRC checked
    (as its consumer does with check_crcs) and every record decoded."""
    from kafka.record import MemoryRecords

    def run():
        total = records = 0
        for path in files:
            with open(path, "rb") as f:
                data = f.read()
            total += len(data)
            for batch in MemoryRecords(data):
                if not batch.validate_crc():
                    raise SystemExit(f"bench: kafka-python finds a bad CRC in {path}")
                for _ in batch:
                    records += 1
        return total, records, ""

    return run


# -- (e) the Spark scan ------------------------------------------------------------------------


def spark_probe(root: Path, master: str, repeat: int) -> dict:
    """One JVM: start a session, start its Python workers with a trivial job, then scan ``root``
    ``repeat`` times with the same session (``run_scan``, as ``kafka-audit scan`` runs it).

    The first scan of a session also pays for its Python workers' start; the later ones show the
    steady rate a long audit runs at. Both are reported, with the start-up costs on their own."""
    from kafka_audit.audit.scan_options import ScanOptions
    from kafka_audit.engines.spark_job import run_scan
    from kafka_audit.engines.spark_session import spark_session
    from kafka_audit.log.log_dir import discover

    started = time.perf_counter()
    with spark_session(master, {}) as spark:
        session_s = time.perf_counter() - started
        found = discover([str(root)])
        scans, cpus = [], []
        for _ in range(repeat + 1):
            began, cpu = time.perf_counter(), tree_cpu_s()
            result = run_scan(spark, found, ScanOptions())
            scans.append(time.perf_counter() - began)
            cpus.append(tree_cpu_s() - cpu)
    return {
        "session_s": session_s,
        "cold_scan_s": scans[0],
        "warm_scan_s": min(scans[1:]),
        "warm_cpu_s": min(cpus[1:]),
        "bytes": result.summary["bytes"],
        "records": result.summary["records"],
    }


def tree_cpu_s() -> float:
    """CPU seconds (user + system) of this process and every live descendant (the driver JVM and
    its Python workers), from /proc; those of exited children are counted by their parents."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = fields
            children.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        fields = stats.get(pid)
        if fields is not None:  # utime, stime, cutime, cstime
            total += sum(int(v) for v in fields[11:15])
        todo.extend(children.get(pid, ()))
    return total / tick


def spark_scan(root: Path, master: str, repeat: int) -> tuple[Measurement, Measurement]:
    """The Spark scan on ``master`` in a subprocess (its own JVM): the steady rate (the fastest
    of ``repeat`` scans after the first) and the cold one (the session's first scan, Python
    workers' start included; the JVM's start is left out of both)."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "spark", str(root), master, str(repeat)],
        capture_output=True,
        text=True,
        cwd=REPO, check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"bench: the Spark probe on {master} failed:\n{done.stderr[-2000:]}")
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    note = f"JVM start {probe['session_s']:.1f} s"
    warm = Measurement(f"scan {master}", probe["bytes"], probe["records"], probe["warm_scan_s"], float("nan"), note)
    cold = Measurement(
        f"scan {master}, first", probe["bytes"], probe["records"], probe["cold_scan_s"], float("nan"),
        "Python workers start in this one",
    )
    return warm, cold


# -- (f) the command end to end, and where a Spark scan's seconds go ---------------------------


def command(args: list[str], repeat: int) -> float:
    """The fastest of ``repeat`` runs of ``python -m kafka_audit ARGS`` (process start to exit),
    output to /dev/null."""
    return command_times(args, repeat)[0]


def command_times(args: list[str], repeat: int) -> tuple[float, float]:
    """(wall, CPU) seconds of the fastest of ``repeat`` runs of ``python -m kafka_audit ARGS``;
    the CPU seconds are the process's own (user + system), not those of a JVM it starts."""
    best = (math.inf, math.nan)
    for _ in range(max(1, repeat)):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "kafka_audit", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO, check=False
        )
        took = time.perf_counter() - began
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 1):
            raise SystemExit(f"bench: kafka-audit {' '.join(args)} failed:\n{done.stderr.decode()[-2000:]}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = min(best, (took, cpu))
    return best


def import_time(module: str = "kafka_audit.cli.app") -> float:
    """Seconds ``python -X importtime`` reports for importing ``module`` (cumulative), fastest of 5."""
    best = math.inf
    for _ in range(5):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True, text=True, cwd=REPO, check=False
        )
        for line in done.stderr.splitlines():
            parts = [p.strip() for p in line.split("|")]
            if len(parts) == 3 and parts[2] == module:
                best = min(best, int(parts[1]) / 1e6)
    return best


def startup_probe(root: Path, sharing: bool) -> dict:
    """Where the seconds of one Spark scan go, as ``kafka-audit scan`` runs it: imports, the
    session's start (JVM, SparkContext, SparkSession), the job (its first one: the Python workers
    start in it), the stop. ``sharing`` False starts the JVM without the class-data archive."""
    began = time.perf_counter()
    import pyspark.sql  # noqa: F401

    from kafka_audit.audit.scan_options import ScanOptions
    from kafka_audit.engines import jvm_class_archive, spark_session
    from kafka_audit.engines.spark_job import run_scan
    from kafka_audit.log.log_dir import discover

    marks = {"imports_s": time.perf_counter() - began}
    found = discover([str(root)])
    scratch = tempfile.mkdtemp(prefix="kafka-audit-bench-")
    at = time.perf_counter()
    options = None if sharing else jvm_class_archive.ClassDataSharing("")
    spark = spark_session.create_spark_session("local[*]", {}, scratch, options)
    marks["session_s"] = time.perf_counter() - at
    at = time.perf_counter()
    run_scan(spark, found, ScanOptions())
    marks["scan_s"] = time.perf_counter() - at
    at = time.perf_counter()
    spark_session._stop(spark)
    marks["stop_s"] = time.perf_counter() - at
    marks["total_s"] = time.perf_counter() - began
    shutil.rmtree(scratch, ignore_errors=True)
    marks["sharing"] = jvm_class_archive.class_data_sharing({}, record=False).java_options if sharing else ""
    return marks


def spark_startup(root: Path, sharing: bool, repeat: int) -> dict:
    """:func:`startup_probe` in fresh processes: the run with the smallest total."""
    runs = []
    for _ in range(max(1, repeat)):
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "startup", str(root), "on" if sharing else "off"],
            capture_output=True,
            text=True,
            cwd=REPO, check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"bench: the start-up probe failed:\n{done.stderr[-2000:]}")
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return min(runs, key=lambda run: run["total_s"])


# -- (g) dump ----------------------------------------------------------------------------------


def dump_rate(segment: Path, records: int, repeat: int) -> Measurement:
    """``kafka-audit dump --records --print-data SEGMENT > /dev/null``, process start to exit."""
    wall, cpu = command_times(["dump", "--records", "--print-data", str(segment)], repeat)
    return Measurement("", segment.stat().st_size, records, wall, cpu)


def kafka_python_records(segment: Path):
    """kafka-python decoding every record of ``segment`` with its key and value (CRCs checked)."""
    from kafka.record import MemoryRecords

    def run():
        data = segment.read_bytes()
        records = 0
        for batch in MemoryRecords(data):
            if not batch.validate_crc():
                raise SystemExit(f"bench: kafka-python finds a bad CRC in {segment}")
            for record in batch:
                record.key, record.value  # noqa: B018 (decoded, as dump prints them)
                records += 1
        return len(data), records, ""

    return run


# -- peak RSS ----------------------------------------------------------------------------------


def _vm_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rss_probe(path: Path) -> dict:
    """Audit one whole segment as a single task (no byte-range split), streaming its findings and
    summaries away as a Spark worker does, and report the process's memory high-water mark."""
    import resource

    from kafka_audit.audit.segment_audit import SegmentAuditor
    from kafka_audit.rules.validation.log_validator import ValidationConfig
    from tests.support.segment_tasks import segment_task

    size = path.stat().st_size
    topic, partition = path.parent.name.rsplit("-", 1)
    task = segment_task(topic, int(partition), path.parent.name, str(path), f"{path.parent.name}/{path.name}",
                        int(path.stem), size=size)
    before = _vm_kib("VmHWM")
    auditor = SegmentAuditor(task, ValidationConfig())
    for _ in auditor.run():
        pass
    return {
        "segment_mb": size / 1e6,
        "batches": auditor.stats.batches,
        "records": auditor.stats.records,
        "baseline_rss_mb": before / 1024,
        "peak_rss_mb": _vm_kib("VmHWM") / 1024,
        "ru_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def peak_rss(path: Path) -> dict:
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "rss", str(path)], capture_output=True, text=True, cwd=REPO, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"bench: the RSS probe failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "rss":
        print(json.dumps(rss_probe(Path(sys.argv[2]))))
    elif len(sys.argv) == 5 and sys.argv[1] == "spark":
        print(json.dumps(spark_probe(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]))))
    elif len(sys.argv) == 4 and sys.argv[1] == "startup":
        print(json.dumps(startup_probe(Path(sys.argv[2]), sys.argv[3] == "on")))
    else:
        raise SystemExit(
            "usage: python bench/measure.py rss SEGMENT.log | spark DIR MASTER REPEAT | startup DIR on|off"
        )
