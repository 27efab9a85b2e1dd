#!/usr/bin/env python
"""Write the guide's example outputs from real runs: ``python docs/examples/generate.py [OUT_DIR]``.

Every example is the output of a ``kafka-audit`` command run here on the bundled fixtures and
corpora (the local engine, a fixed terminal width), plus the option tables of every command (from
the CLI's own parameters) and the check catalogue (from ``kafka_audit.rules.catalogue``). The pages
include them with the snippets extension (``--8<-- "examples/NAME"``). ``tests/test_docs_examples.py``
runs this script into a temporary folder and fails when a file differs from the one committed.
The wall time and read rate of a summary are the only values that vary between runs: they are
replaced by ``N.N s`` (JSON: ``"<varies>"``).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import typer
from typer.testing import CliRunner

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))

from kafka_audit.cli.app import app  # noqa: E402
from kafka_audit.rules.catalogue import CHECKS  # noqa: E402

# The real Kafka 3.6.2 broker's log dir of a transaction its coordinator aborted on timeout.
_HANG = "corpus/real-broker/hanging-txn-timeout-aborted/data"
# (file, terminal width, command line after ``kafka-audit``, lines kept: None for all, N > 0 the
# first N, N < 0 the last -N after an ellipsis)
RUNS: tuple[tuple[str, int, str, int | None], ...] = (
    ("scan-producer-errors.txt", 100, "scan fixtures/producer-errors --engine local", None),
    ("scan-healthy-80.txt", 80, "scan fixtures/healthy --engine local", None),
    ("scan-faulty-tail-80.txt", 80, "scan fixtures/faulty --engine local --reference-time 1700003600000 "
     "--timestamp-before-max-ms 86400000 --timestamp-after-max-ms 3600000 --max-message-bytes 1000 "
     "--compacted-topic missing-key-compacted", -24),
    ("timeline-557891.txt", 100, "timeline fixtures/producer-errors --engine local --producer-id 557891", None),
    ("producers-idempotent-4x.txt", 100, "producers corpus/real-broker-4/idempotent-4x/data --engine local", None),
    ("scan-producer-errors.ndjson", 100, "scan fixtures/producer-errors --engine local --format ndjson", 1),
    ("scan-producer-errors.github", 100, "scan fixtures/producer-errors --engine local --format github", None),
    ("scan-healthy.json", 100, "scan fixtures/healthy --engine local --format json", None),
    ("dump-cluster-metadata.txt", 100, "dump fixtures/healthy/__cluster_metadata-0/00000000000000000000.log --records", 12),
    ("broker-log-scan.txt", 100, "scan fixtures/producer-errors --broker-log "
     "fixtures/broker-logs/producer-errors.server.log --engine local", -19),
    ("hang-scan.txt", 100, f"scan {_HANG} --engine local", -12),
    ("hang-producers.txt", 100, f"producers {_HANG} --engine local", -18),
    ("hang-timeline.txt", 100, f"timeline {_HANG} --engine local --producer-id 1", -15),
    ("fenced-timeline.txt", 100, "timeline corpus/real-broker/transactions/data --engine local --partition 0 "
     "--producer-id 0 --since 2026-11-23T08:45:17", -30),
)
_WALL = re.compile(r"(wall time\s+)(\d+\.\d s(?: \([^)]*\))?)")

# What to do about each check: the first step, in the check catalogue's table.
WHAT_TO_DO: dict[str, str] = {
    "crc_mismatch": "Read the segment from a healthy replica; if every copy is bad, delete the records up to the batch's end (`kafka-delete-records.sh`).",
    "truncated_batch": "A torn write at the tail: the broker's recovery truncates it on restart; on a copy, compare with the leader's log.",
    "invalid_batch_size": "The size field is damaged: restore the segment from a replica, or cut the log at this position.",
    "unknown_magic": "The bytes are not a record batch: restore the segment from a replica.",
    "decompression_failed": "Check the producer's codec library; restore the batch from a replica.",
    "nested_compression": "A client wrote a compressed message inside a compressed wrapper: upgrade or fix that client.",
    "inner_magic_mismatch": "An old client or proxy wrote mixed formats: upgrade it.",
    "missing_key_compacted": "Give every record of a compacted topic a key (fix the producer).",
    "non_monotonic_offsets": "The batch's offsets run backwards: restore it from a replica.",
    "invalid_control_batch": "Only brokers write control batches: find the client that sent one.",
    "invalid_producer_fields": "Producer id, epoch and sequence disagree: check the client library.",
    "timestamp_out_of_range": "Fix the producer's clock or CreateTime, or widen the timestamp bounds.",
    "invalid_timestamp_type": "A v0 message or a broker setting mismatch: check `message.timestamp.type`.",
    "record_too_large": "Raise `max.message.bytes` / `segment.bytes`, or split the records at the producer.",
    "offset_overlap": "Two batches claim the same offsets: compare replicas before a consumer reads them.",
    "offset_gap": "Expected on compacted topics; elsewhere look for deleted or lost segments.",
    "index_mismatch": "Delete the `.index` / `.timeindex` files: the broker rebuilds them on start.",
    "epoch_bump": "None: a producer instance was fenced by a newer one (the finding says which).",
    "fenced_epoch_write": "A zombie producer wrote after it was fenced: stop the old instance.",
    "new_epoch_nonzero_sequence": "The producer started a new epoch mid-sequence: upgrade the client.",
    "out_of_order_sequence": "Batches were lost or reordered: check `max.in.flight.requests.per.connection` and retries.",
    "duplicate_sequence": "A retried batch was written twice: compare with the consumer's view.",
    "unknown_producer_id": "The producer's earlier batches are missing: check retention against the producer's idle time.",
    "retention_gap": "Retention deleted the producer's batches: raise retention or `producer.id.expiration.ms`.",
    "snapshot_mismatch": "The `.snapshot` disagrees with the log: delete it so the broker rebuilds it.",
    "hanging_transaction": "Abort it with `kafka-transactions.sh abort` (the finding gives the offset).",
    "open_transaction": "None yet: it may still commit; check again after `transaction.timeout.ms`.",
    "transaction_state_violation": "Markers and data disagree: compare `__transaction_state` with the partition.",
    "orphan_marker": "A marker with no open transaction: usually harmless after retention.",
    "coordinator_epoch_regression": "A stale coordinator wrote a marker: check the coordinator's failover.",
    "txn_index_mismatch": "Delete the `.txnindex` files of the segment: the broker rebuilds them.",
    "producer_expired": "None: the broker forgot an idle producer, as `producer.id.expiration.ms` says.",
    "broker_rejection": "Read the explanation: what the broker knew of the producer when it refused.",
    "unreadable_segment": "Make the file readable (permissions, the link's target) and scan again.",
    "skipped_file": "None: the file is not part of a Kafka log.",
    "remote_segment_incomplete": "The copy to the remote store did not finish: the broker copies it again.",
    "remote_segment_overlap": "Two remote segments hold the same offsets: check the plugin's retention.",
    "remote_log_gap": "Offsets are missing between remote and local segments: check the remote store.",
    "remote_segment_missing": "`__remote_log_metadata` names a segment the store lacks: restore it.",
    "remote_txn_index_flag": "The metadata's transaction-index flag disagrees with the objects found.",
    "incomplete_tail": "On a live broker, a write in progress: scan again. On a still copy, the broker's "
    "recovery truncates it: the records it held are lost on this replica unless another holds them.",
    "segment_changed": "Retention or the cleaner changed the file mid-scan: scan again to read it.",
    "missing_segment": "A segment was not copied, or was removed by hand: copy the whole partition again.",
    "replica_divergence": "Two replicas hold different batches at one offset: read the `replica_truncation` "
    "findings for what Kafka drops.",
    "replica_truncation": "Records Kafka truncates on this replica: recover them from this copy with the "
    "`dump` in the remedy and produce them again.",
    "replica_lag": "A follower that is behind: it catches up by itself once it fetches again.",
}


def run(width: int, command: str) -> str:
    """The command's standard output at a terminal ``width`` columns wide (Rich reads COLUMNS),
    run in this process as a user's shell would run it (from the repository root)."""
    args = command.split()
    if args[0] != "dump":
        args.append("--quiet")
    cwd = Path.cwd()
    try:
        os.chdir(REPO)
        result = CliRunner().invoke(app, args, env={"COLUMNS": str(width)})
    finally:
        os.chdir(cwd)
    if result.exit_code not in (0, 1):
        raise SystemExit(f"kafka-audit {command} exited {result.exit_code}: {result.output.strip()}")
    return result.stdout


def normalise(name: str, text: str) -> str:
    """The wall time and read rate replaced (the only values that vary between runs)."""
    if name.endswith(".json"):
        data = json.loads(text)
        for key in ("wall_time_s", "mb_per_s"):
            data["summary"][key] = "<varies>"
        return json.dumps(data, indent=2) + "\n"
    return _WALL.sub(lambda m: m.group(1) + "N.N s".ljust(len(m.group(2))), text)


def examples(out: Path) -> None:
    for name, width, command, keep in RUNS:
        text = normalise(name, run(width, command))
        lines = text.splitlines()
        if keep is not None and keep < 0:
            lines = ["…"] + lines[keep:]
        elif keep is not None:
            lines = lines[:keep]
        body = "\n".join(line.rstrip() for line in lines)
        (out / name).write_text(f"$ kafka-audit {command}\n{body}\n", encoding="utf-8")


def option_tables(out: Path) -> None:
    """One Markdown table per command: every option, its value, default and help."""
    group: Any = typer.main.get_command(app)
    for name, command in sorted(group.commands.items()):
        ctx = group.context_class(command)
        rows = ["| option | value | default | what it does |", "|---|---|---|---|"]
        for param in command.params:
            if param.param_type_name != "option" or not param.opts[0].startswith("--"):
                continue
            names = ", ".join(f"`{opt}`" for opt in [*param.opts, *param.secondary_opts])
            value = "" if param.is_flag else f"`{param.display_type_rich(ctx=ctx)}`".replace("|", "/")
            default = "" if param.default in (None, (), [], False) else f"`{param.default}`"
            if param.default is not None and hasattr(param.default, "value"):
                default = f"`{param.default.value}`"
            multiple = " (repeatable)" if param.multiple and "repeatable" not in (param.help or "") else ""
            rows.append(f"| {names} | {value} | {default} | {(param.help or '').replace('|', '/')}{multiple} |")
        (out / f"options-{name}.md").write_text("\n".join(rows) + "\n", encoding="utf-8")


def check_table(out: Path) -> None:
    """The check catalogue: every check id with its group, severity, Kafka error, client outcome."""
    rows = ["| check | group | severity | Kafka error | client exception | client outcome | what to do |",
            "|---|---|---|---|---|---|---|"]
    for check_id, check in CHECKS.items():
        if check_id not in WHAT_TO_DO:
            raise SystemExit(f"docs/examples/generate.py: no 'what to do' for check {check_id}")
        error = f"{check.error.name} ({check.error.code})" if check.error else "none"
        rows.append(f"| `{check_id}` | {check.group} | {check.severity} | {error} | "
                    f"{check.client_exception or '-'} | {check.client_outcome} | {WHAT_TO_DO[check_id]} |")
    (out / "checks.md").write_text("\n".join(rows) + "\n", encoding="utf-8")


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    out.mkdir(parents=True, exist_ok=True)
    examples(out)
    option_tables(out)
    check_table(out)
    print(f"wrote the guide's examples under {out}")


if __name__ == "__main__":
    main()
