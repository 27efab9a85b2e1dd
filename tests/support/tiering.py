"""Tiering a real partition for the tests and the bench: its first segments uploaded to a
"remote" tree in the Aiven plugin's layout (tests.support.rsm_writer), the rest left local, as a
broker with ``remote.log.storage.enable`` leaves a partition after ``local.retention``."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.rsm_writer import object_stem, segment_id_for, write_segment

TOPIC_ID = "lZ6vvmajTWKDBUTV6SQAtQ"


def segment_indexes(log: Path) -> dict[str, bytes | None]:
    """A local segment's indexes as RemoteLogManager hands them to the plugin (LogSegmentData)."""
    def read(ext: str) -> bytes:
        path = log.with_suffix(ext)
        return path.read_bytes() if path.exists() else b""

    txn = log.with_suffix(".txnindex")
    return {
        "offset": read(".index"), "timestamp": read(".timeindex"), "producerSnapshot": b"",
        "leaderEpoch": (log.parent / "leader-epoch-checkpoint").read_bytes() if (log.parent / "leader-epoch-checkpoint").exists() else b"",
        "transaction": txn.read_bytes() if txn.exists() else None,
    }


def upload(log: Path, topic: str, partition: int, prefix: str, chunk_size: int, compression: bool, public_key=None) -> dict[str, bytes]:
    """One local segment as the plugin's objects (key -> bytes)."""
    base = int(log.name.split(".")[0])
    stem = object_stem(prefix, topic, TOPIC_ID, partition, base, segment_id_for(base))
    return write_segment(stem, log.read_bytes(), segment_indexes(log), chunk_size, compression, public_key).objects


def tier(log_dir: Path, partition_dir: str, remote_count: int, local_out: Path, remote_out: Path, keep_local: int = 0, **upload_args) -> list[str]:
    """Copy ``log_dir`` to ``local_out`` with the partition's first ``remote_count`` segments
    moved to ``remote_out`` in the plugin's layout (the last ``keep_local`` of them also kept
    locally, as local retention does); returns the uploaded ``.log`` keys."""
    shutil.copytree(log_dir, local_out)
    topic, _, number = partition_dir.rpartition("-")
    folder = local_out / partition_dir
    logs = sorted(folder.glob("*.log"))[:remote_count]
    keys = []
    for index, log in enumerate(logs):
        for key, data in upload(log, topic, int(number), "", **upload_args).items():
            target = remote_out / key
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            keys.append(key)
        if index < len(logs) - keep_local:
            for sidecar in folder.glob(log.stem + ".*"):
                if sidecar.suffix != ".snapshot":
                    sidecar.chmod(0o644)
                    sidecar.unlink()
    return [k for k in keys if k.endswith(".log")]
