"""The remedy of a finding (SPEC section 3): what an operator or the producing application does next.

A remedy is ``{"summary", "commands", "loses", "references"}``: one sentence, the exact command
lines or settings with the finding's values filled in, what the remedy gives up, and the KIP /
JIRA / Kafka document it rests on. Facts the log cannot give (the bootstrap server, the consumer
groups, which broker holds an intact replica) are named placeholders (:data:`BROKER`,
:data:`GROUP`, ...) and the summary says what to check; nothing is guessed. Every error and warning
finding gets the key ``remedy`` (null where Kafka offers none); info findings get none.

The tools and their arguments are those of Kafka's command-line tools (Kafka's "Operations"
documentation and the tools' classes): ``DeleteRecordsCommand`` (``--offset-json-file`` with
``{"version": 1, "partitions": [{"topic", "partition", "offset"}]}``), ``ConsumerGroupCommand``
(``--reset-offsets --to-offset N --topic T:P --execute``, refused while the group has members),
``TransactionsCommand`` (``abort --topic --partition --start-offset``, KIP-664), ``ConfigCommand``
(``--alter --entity-type topics --add-config``) and ``GetOffsetShell`` (KIP-635).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafka_audit.rules.catalogue import CheckId, Severity
from kafka_audit.rules.findings import Finding, partition_label, segment_file_name

# Placeholders for facts no log holds: each remedy's summary says where to find them.
BROKER = "<broker>"
GROUP = "<group>"
OFFSETS_FILE = "delete-records.json"
Remedy = dict[str, Any]


def remedy(summary: str, commands: Iterable[str], loses: str, references: Iterable[str]) -> Remedy:
    """The remedy object of SPEC section 3."""
    return {"summary": summary, "commands": list(commands), "loses": loses, "references": list(references)}


def attach_remedies(findings: Iterable[Finding], next_segment_offsets: Mapping[str, int]) -> None:
    """Put each error and warning finding's remedy into ``details.remedy`` (null where Kafka offers
    none), keeping one a rule already set. ``next_segment_offsets``: a segment's display path to
    the base offset of the next segment of its partition (the first offset after a damaged tail)."""
    for finding in findings:
        if finding.severity == Severity.INFO or "remedy" in finding.details:
            continue
        finding.details["remedy"] = remedy_for(finding, next_segment_offsets)


def remedy_for(finding: Finding, next_segment_offsets: Mapping[str, int] | None = None) -> Remedy | None:
    """The remedy of one finding, or None where Kafka offers none."""
    build = _BUILDERS.get(finding.check)
    return build(finding, next_segment_offsets or {}) if build is not None else None


def _topic(finding: Finding) -> str:
    return shlex.quote(finding.topic or "")


def _offset_after(finding: Finding, next_segment_offsets: Mapping[str, int]) -> int | None:
    """The first offset after the finding's batch: its last offset + 1 when its header could be
    read, else the next segment's base offset (the damage runs to its segment's end)."""
    if finding.batch_last_offset is not None:
        return finding.batch_last_offset + 1
    return next_segment_offsets.get(finding.segment or "")


def unreadable_batch(finding: Finding, next_segment_offsets: Mapping[str, int]) -> Remedy:
    """A batch no consumer can read (CorruptRecordException: the consumer stops at it, "If needed,
    please seek past the record to continue consumption", ``CompletedFetch``). Kafka's ways past it:
    re-replicate the partition from a replica that holds the batch intact (a follower whose
    partition directory is removed while it is stopped fetches the log again from the leader,
    ``ReplicaFetcherThread``); else move the log start offset past it (DeleteRecords, KIP-107);
    else move a stopped group's committed offset past it (``ConsumerGroupCommand``)."""
    tp = partition_label(finding.topic, finding.partition)
    after = _offset_after(finding, next_segment_offsets)
    offset = str(after) if after is not None else "<offset-after-damage>"
    where = "" if after is not None else (
        f" The damage runs to the end of the newest segment: the offset after it is the log end offset "
        f"(kafka-get-offsets.sh --bootstrap-server {BROKER} --topic {_topic(finding)} --partitions {finding.partition} --time -1)."
    )
    offsets_json = json.dumps(
        {"version": 1, "partitions": [{"topic": finding.topic, "partition": finding.partition,
                                       "offset": after if after is not None else offset}]},
        separators=(",", ":"),
    )
    return remedy(
        f"The batch at offset {finding.offset} of {tp} cannot be read: first check whether another replica of {tp} "
        f"holds it intact (scan that broker's copy) and re-replicate from it; otherwise skip to offset {offset} for "
        f"every consumer (delete-records) or for one stopped group ({GROUP}: the groups that read {finding.topic}).{where}",
        [
            f"kafka-audit scan <other-replica-log-dir>/{shlex.quote(tp)}",
            f"# on the broker with the damaged copy, stopped: move <log-dir>/{shlex.quote(tp)} aside, start it: it fetches {tp} from the leader",
            f"echo {shlex.quote(offsets_json)} > {OFFSETS_FILE}",
            f"kafka-delete-records.sh --bootstrap-server {BROKER} --offset-json-file {OFFSETS_FILE}",
            f"kafka-consumer-groups.sh --bootstrap-server {BROKER} --reset-offsets --to-offset {offset} "
            f"--group {GROUP} --topic {shlex.quote(f'{finding.topic}:{finding.partition}')} --execute",
        ],
        f"Re-replication loses nothing when the other replica is intact and in sync. Delete-records removes every "
        f"record of {tp} below offset {offset} for every consumer. The offset reset skips the records from the "
        f"group's position to offset {offset} for that group only (the damaged batch's among them).",
        ["KIP-107 (DeleteRecords)", "Kafka docs: Operations, kafka-consumer-groups.sh --reset-offsets",
         "KAFKA-15259", "KIP-467"],
    )


def invalid_record(finding: Finding, next_segment_offsets: Mapping[str, int]) -> Remedy:
    """A batch a broker's ``LogValidator`` rejects today (INVALID_RECORD, INVALID_TIMESTAMP): on disk
    it came from an older broker, a copy or a tool. The writer is fixed first; consumers that fail
    on it are moved past it as for an unreadable batch."""
    skip = unreadable_batch(finding, next_segment_offsets)
    writer = f"producer {finding.producer_id}, or " if finding.producer_id is not None and finding.producer_id >= 0 else ""
    return remedy(
        f"A broker would reject this batch ({finding.error_name}): find its writer ({writer}the tool or broker "
        f"version that wrote it) and fix it. If a consumer fails on the batch, move past it as for a corrupt batch.",
        skip["commands"][2:],
        skip["loses"],
        ["Kafka source: LogValidator (validateBatch, validateRecord)", "KIP-467", "KIP-107 (DeleteRecords)"],
    )


def timestamp_out_of_range(finding: Finding, _next: Mapping[str, int]) -> Remedy:
    """INVALID_TIMESTAMP: a CREATE_TIME timestamp outside the topic's window (KIP-937's
    ``message.timestamp.before.max.ms`` / ``after.max.ms``, Kafka 3.6; before it
    ``message.timestamp.difference.max.ms``). A far-future timestamp also holds back time-based
    retention of its segment (``LogSegment.largestTimestamp``)."""
    return remedy(
        f"Fix the clock of the producer that wrote this record (producer {finding.producer_id}), or let the "
        f"broker stamp the time (LogAppendTime) for topic {finding.topic}.",
        [f"kafka-configs.sh --bootstrap-server {BROKER} --alter --entity-type topics --entity-name {_topic(finding)} "
         "--add-config message.timestamp.type=LogAppendTime"],
        "LogAppendTime replaces every later record's own timestamp by the broker's append time.",
        ["KIP-937", "KIP-32", "Kafka docs: topic config message.timestamp.type"],
    )


def record_too_large(finding: Finding, _next: Mapping[str, int]) -> Remedy:
    """MESSAGE_TOO_LARGE against ``max.message.bytes`` (topic; broker default ``message.max.bytes``)
    or RECORD_LIST_TOO_LARGE against ``segment.bytes`` (``UnifiedLog.append``). Since KIP-74 a
    follower's ``replica.fetch.max.bytes`` and a consumer's ``max.partition.fetch.bytes`` /
    ``fetch.max.bytes`` are not absolute (the first batch is returned whatever its size), so only
    the append limits decide whether a broker accepts the batch."""
    size = finding.details.get("size", finding.batch_size)
    topic = _topic(finding)
    config = f"kafka-configs.sh --bootstrap-server {BROKER} --alter --entity-type topics --entity-name {topic} --add-config"
    if "segment_bytes" in finding.details:
        return remedy(
            f"The batch ({size} bytes) is larger than segment.bytes ({finding.details['segment_bytes']}): no "
            f"max.message.bytes lets a broker append it until segment.bytes is at least {size}.",
            [f"{config} segment.bytes={size},max.message.bytes={size}"],
            "Larger segments: retention and compaction act on fewer, bigger files.",
            ["Kafka source: UnifiedLog.append (RecordBatchTooLargeException)", "Kafka docs: topic config segment.bytes"],
        )
    return remedy(
        f"The batch ({size} bytes) exceeds max.message.bytes ({finding.details.get('max_message_bytes')}): a "
        f"topic max.message.bytes of at least {size} accepts it (the broker default is message.max.bytes); "
        f"replica.fetch.max.bytes and the consumers' max.partition.fetch.bytes are not absolute since KIP-74.",
        [f"{config} max.message.bytes={size}",
         f"# broker default for every topic: message.max.bytes={size}",
         f"# optional, fewer fetch round trips: replica.fetch.max.bytes={size} (broker), "
         f"max.partition.fetch.bytes={size} (consumers)"],
        "Nothing is lost; larger batches need more memory on brokers and clients.",
        ["KIP-74", "KAFKA-15259", "Kafka docs: topic config max.message.bytes"],
    )


def producer_error(finding: Finding, _next: Mapping[str, int]) -> Remedy:
    """What the producer saw and its application does, by the KIP-691 outcome of the finding's
    Kafka error (``TransactionManager``): fatal, close the producer and start a new instance (a
    transactional one fences the old through ``initTransactions``); abortable, abort the
    transaction and send it again; retriable, the client retries until ``delivery.timeout.ms``."""
    pid = finding.producer_id
    who = f"producer {pid}" + (f" ({finding.transactional_id})" if finding.transactional_id else "")
    exception = finding.details.get("client_exception") or finding.error_name or "the error"
    actions = {
        "fatal": (f"the client sees {exception}, a fatal error: the application closes that producer and creates "
                  "a new one (initTransactions fences the old instance); only one live instance per transactional.id"),
        "abortable": (f"the client sees {exception}, an abortable error: the application calls abortTransaction() "
                      "and sends the transaction again (an idempotent producer without transactions fails the batch)"),
        "retriable": f"the client sees {exception} and retries on its own until delivery.timeout.ms",
    }
    action = actions.get(finding.client_outcome, "no producer saw an error for it: the data in the log is what to check")
    return remedy(
        f"For {who}: {action}. Check that the application keeps acks=all and enable.idempotence=true, and that "
        f"only one instance uses its transactional.id.",
        ["producer config: enable.idempotence=true", "producer config: acks=all",
         "producer config: max.in.flight.requests.per.connection=5 (at most 5 with idempotence)"],
        "An aborted transaction's records are never seen by read_committed consumers; a fatal error ends the "
        "producer instance and whatever it had not yet sent.",
        ["KIP-691", "KIP-98", "KIP-360", "Kafka source: TransactionManager"],
    )


def duplicate_sequence(finding: Finding, _next: Mapping[str, int]) -> Remedy:
    """A batch a broker never writes twice (``ProducerStateEntry``'s last 5 batches: a retry is
    answered with the original offsets): no producer saw an error, consumers read it twice. No
    Kafka tool removes a batch from the middle of a log."""
    original = finding.details.get("original_offset")
    return remedy(
        f"Producer {finding.producer_id}'s batch first written at offset {original} is in the log again at offset "
        f"{finding.offset}: consumers read its records twice. Check what wrote the copy (a replication tool, a "
        f"restore, a broker bug); consumers that must not see it twice drop records by (producer id, sequence).",
        [],
        "Nothing: no command is run.",
        ["KIP-98 (idempotent producer)", "Kafka source: ProducerStateEntry (NUM_BATCHES_TO_RETAIN)"],
    )


# ``missing_sequences``: the gap's first and last sequence.
_GAP_ENDS = 2


def unknown_producer(finding: Finding, _next: Mapping[str, int]) -> Remedy:
    """The UnknownProducerId gap (KIP-360): a producer whose state the broker lost (retention,
    DeleteRecords, ``producer.id.expiration.ms``). Clients before 2.5 got UNKNOWN_PRODUCER_ID (an
    idempotent producer reset its producer id, a transactional one failed fatally); since 2.5 the
    client bumps its epoch and resets its sequences (abortable for a transaction), and brokers
    since 2.5 accept the batch with no state at all."""
    gap = finding.details.get("missing_sequences")
    missing = f" (sequences {gap[0]}-{gap[1]} are not in this log)" if isinstance(gap, list) and len(gap) == _GAP_ENDS else ""
    return remedy(
        f"Producer {finding.producer_id}'s earlier batches are gone{missing}: check the topic's retention and "
        "the broker's producer.id.expiration.ms against how long this producer stays idle, and that its "
        "clients are 2.5 or newer (KIP-360: they bump the epoch and go on instead of failing).",
        [f"kafka-configs.sh --bootstrap-server {BROKER} --describe --entity-type topics --entity-name {_topic(finding)}",
         "broker config: producer.id.expiration.ms (default 86400000) above the producer's longest idle time",
         "topic config: retention.ms / retention.bytes long enough to keep an idle producer's last batch"],
        "Longer retention and producer id expiration keep more data and more producer state on the brokers.",
        ["KIP-360", "Kafka docs: broker config producer.id.expiration.ms"],
    )


def hanging_transaction(finding: Finding, _next: Mapping[str, int]) -> Remedy:
    """A transaction no coordinator will end pins the last stable offset: ``kafka-transactions.sh
    abort`` (KIP-664, ``TransactionsCommand``) writes its ABORT marker; ``find-hanging`` confirms."""
    first = finding.details.get("first_offset", finding.offset)
    tp = partition_label(finding.topic, finding.partition)
    txn = f" ({finding.transactional_id})" if finding.transactional_id else ""
    return remedy(
        f"The transaction of producer {finding.producer_id}{txn} from offset {first} blocks every read_committed "
        f"consumer of {tp}: confirm it with find-hanging on the partition's leader (<broker-id>), then abort it.",
        [f"kafka-transactions.sh --bootstrap-server {BROKER} find-hanging --broker-id <broker-id>",
         f"kafka-transactions.sh --bootstrap-server {BROKER} abort --topic {_topic(finding)} "
         f"--partition {finding.partition} --start-offset {first}"],
        f"The open transaction's records from offset {first} are aborted: read_committed consumers never see them.",
        ["KIP-664", "KIP-98", "Kafka docs: kafka-transactions.sh"],
    )


def rebuilt_on_restart(
    what: str, suffixes: str, reference: str, per_segment: bool = True
) -> Callable[[Finding, Mapping[str, int]], Remedy]:
    """Sidecar files the broker rebuilds from the log when they are missing at start-up
    (``LogLoader``: a missing index is rebuilt by ``LogSegment.recover``; producer state is
    rebuilt from the log when no snapshot covers it)."""

    def build(finding: Finding, _next: Mapping[str, int]) -> Remedy:
        tp = partition_label(finding.topic, finding.partition)
        name = segment_file_name(finding.segment) or ""
        base = name.split(".", 1)[0] if per_segment and name.endswith(".log") else "*"
        files = " ".join(f"{base}{suffix}" for suffix in suffixes.split())
        return remedy(
            f"The {what} of {tp} disagrees with its log: with the broker stopped, remove {files} and start it; "
            "it rebuilds them from the log.",
            [f"# broker stopped: rm <log-dir>/{shlex.quote(tp)}/{files}", "# start the broker"],
            "Nothing but a slower start while the broker reads the segments again.",
            [reference],
        )

    return build


def check_only(summary: str, reference: str) -> Callable[[Finding, Mapping[str, int]], Remedy]:
    """No Kafka command mends it: what to check, as the finding's summary."""

    def build(finding: Finding, _next: Mapping[str, int]) -> Remedy:
        tp = partition_label(finding.topic, finding.partition)
        return remedy(summary.format(tp=tp, segment=finding.segment, offset=finding.offset), [],
                      "Nothing: no command is run.", [reference])

    return build


def broker_rejection(finding: Finding, next_segment_offsets: Mapping[str, int]) -> Remedy | None:
    """A produce error in a broker's log: the remedy of the check that matches its Kafka error."""
    by_error: dict[str | None, Callable[[Finding, Mapping[str, int]], Remedy | None]] = {
        "MESSAGE_TOO_LARGE": record_too_large, "RECORD_LIST_TOO_LARGE": record_too_large,
        "UNKNOWN_PRODUCER_ID": unknown_producer, "INVALID_TIMESTAMP": timestamp_out_of_range,
    }
    return by_error.get(finding.error_name, producer_error)(finding, next_segment_offsets)


_READ_CHECK = check_only(
    "Check the file {segment}: its permissions, the disk and, for an object store, the object; then audit it again.",
    "Kafka docs: Operations, hardware and OS",
)
_REPLICA_CHECK = check_only(
    "The offsets of {tp} near offset {offset} are inconsistent on this replica: compare the other replicas' "
    "copies (kafka-audit scan of each broker's log dir) and re-replicate from one that is intact.",
    "Kafka docs: Design, replication",
)
_BUILDERS: dict[str, Callable[[Finding, Mapping[str, int]], Remedy | None]] = {
    **{str(c): unreadable_batch for c in (CheckId.CRC_MISMATCH, CheckId.TRUNCATED_BATCH, CheckId.INVALID_BATCH_SIZE,
                                          CheckId.UNKNOWN_MAGIC, CheckId.DECOMPRESSION_FAILED)},
    **{str(c): invalid_record for c in (CheckId.NESTED_COMPRESSION, CheckId.INNER_MAGIC_MISMATCH,
                                        CheckId.MISSING_KEY_COMPACTED, CheckId.NON_MONOTONIC_OFFSETS,
                                        CheckId.INVALID_CONTROL_BATCH, CheckId.INVALID_PRODUCER_FIELDS,
                                        CheckId.INVALID_TIMESTAMP_TYPE)},
    **{str(c): producer_error for c in (CheckId.FENCED_EPOCH_WRITE, CheckId.NEW_EPOCH_NONZERO_SEQUENCE,
                                        CheckId.OUT_OF_ORDER_SEQUENCE,
                                        CheckId.TRANSACTION_STATE_VIOLATION, CheckId.COORDINATOR_EPOCH_REGRESSION)},
    str(CheckId.TIMESTAMP_OUT_OF_RANGE): timestamp_out_of_range,
    str(CheckId.RECORD_TOO_LARGE): record_too_large,
    str(CheckId.DUPLICATE_SEQUENCE): duplicate_sequence,
    str(CheckId.UNKNOWN_PRODUCER_ID): unknown_producer,
    str(CheckId.RETENTION_GAP): unknown_producer,
    str(CheckId.HANGING_TRANSACTION): hanging_transaction,
    str(CheckId.BROKER_REJECTION): broker_rejection,
    str(CheckId.INDEX_MISMATCH): rebuilt_on_restart("offset or time index", ".index .timeindex",
                                                    "Kafka source: LogLoader, LogSegment.recover"),
    str(CheckId.SNAPSHOT_MISMATCH): rebuilt_on_restart("producer state snapshot", ".snapshot",
                                                       "Kafka source: LogLoader, ProducerStateManager", per_segment=False),
    str(CheckId.TXN_INDEX_MISMATCH): rebuilt_on_restart("transaction index", ".txnindex",
                                                        "Kafka source: LogSegment.recover (TransactionIndex)"),
    str(CheckId.UNREADABLE_SEGMENT): _READ_CHECK,
    str(CheckId.OFFSET_OVERLAP): _REPLICA_CHECK,
    str(CheckId.OFFSET_GAP): _REPLICA_CHECK,
}
