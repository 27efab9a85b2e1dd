"""SPEC section 1, "Memory is bounded whatever the input" (issue 30 item 2): a v2 gzip batch of
22 MB that inflates to 768 MiB (under the 64x ratio cap) is CRC-checked by ranged reads, inflated
and walked as a stream. A scan of it, next to a healthy partition, runs in a child process whose
peak RSS (VmHWM) stays under the 576 MiB bound; the batch gets exactly Kafka's answer
(``record_too_large``: UnifiedLog.analyzeAndValidateRecords checks the size first), the batches
around it are read, and the other partition keeps its finding. bench/crafted_memory.py measures
the full crafted set (3.1 GiB gzip, a sparse 4 GiB file, zstd and lz4 bombs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.crafted import PEAK_CHILD, write_healthy_segment, write_repeated_gzip_bomb

REPO = Path(__file__).resolve().parent.parent
BOUND_KIB = 576 * 1024
SEGMENT = "00000000000000000000.log"


def test_a_gzip_batch_inflating_past_the_bound_is_audited_in_bounded_memory(tmp_path: Path) -> None:
    (tmp_path / "bomb-0").mkdir()
    (tmp_path / "healthy-0").mkdir()
    bomb = write_repeated_gzip_bomb(tmp_path / "bomb-0" / SEGMENT, value_mib=96, records=8)
    assert bomb.inflated > 768 * 1024 * 1024 and bomb.inflated < 64 * bomb.size  # under the ratio cap
    write_healthy_segment(tmp_path / "healthy-0" / SEGMENT)
    report, peak = tmp_path / "report.json", tmp_path / "peak"
    result = subprocess.run(
        [sys.executable, "-c", PEAK_CHILD, str(peak), "scan", str(tmp_path / "bomb-0"), str(tmp_path / "healthy-0"),
         "--engine", "local", "--format", "json", "--output", str(report), "--quiet"],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 1, result.stderr  # error findings
    findings = json.loads(report.read_text())["findings"]
    assert [(f["topic"], f["check"], f["severity"], f["offset"], f["position"]) for f in findings] == [
        ("bomb", "record_too_large", "error", 1, bomb.position),
        ("healthy", "crc_mismatch", "error", 2, 140),
    ]
    assert findings[0]["details"]["size"] == bomb.size
    summary = json.loads(report.read_text())["summary"]
    # The healthy batches around the bomb, the bomb's 8 records counted from the stream, and the
    # two healthy partition's batches whose CRC holds.
    assert summary["batches"] == 6 and summary["records"] == 1 + 8 + 1 + 2
    assert int(peak.read_text()) < BOUND_KIB


def test_dump_prints_a_bounded_prefix_of_a_huge_value_with_its_length(tmp_path: Path) -> None:
    """A record of 9 MiB (a batch past the one-buffer bound): dump --print-data shows its first
    4096 bytes and its length, in text and in JSON."""
    from kafka_audit.record.default_record import encode_record
    from kafka_audit.record.record_batch import encode_v2_batch
    from kafka_audit.record.stream_records import DATA_PREFIX
    from kafka_audit.report.dump import dump_file

    value = b"v" * (9 * 1024 * 1024)
    segment = tmp_path / SEGMENT
    segment.write_bytes(encode_v2_batch(
        encode_record(0, 0, 0, b"key", value), base_offset=0, partition_leader_epoch=0, attributes=0,
        last_offset_delta=0, base_timestamp=1, max_timestamp=1, producer_id=-1, producer_epoch=-1,
        base_sequence=-1, record_count=1,
    ))
    text = "\n".join(dump_file(str(segment), as_json=False, records=True, print_data=True))
    record_line = next(line for line in text.splitlines() if line.startswith("| offset: 0"))
    assert record_line.endswith(f" key: key payload: {'v' * DATA_PREFIX}... ({DATA_PREFIX} of {len(value)} bytes shown)")
    lines = "\n".join(dump_file(str(segment), as_json=True, records=True, print_data=True)).splitlines()
    batch = json.loads(next(line for line in lines if line.startswith("{")))
    (record,) = batch["records"]
    assert record["value"] == "v" * DATA_PREFIX and record["value_truncated"] is True
    assert record["value_size"] == len(value) and record["key"] == "key" and "key_truncated" not in record
