"""What the broker's log lines say, in every wording Kafka 2.x to 4.x used for them.

Produce errors. ``ReplicaManager.appendToLocalLog`` logs an append that failed with
``error(s"Error processing append operation on partition $topicPartition", t)`` (Kafka 3.7+:
``$topicIdPartition``, printed ``<topicId>:<topic>-<partition>``; InvalidProducerEpoch at INFO),
the exception on the following lines. The exceptions come from ``ProducerAppendInfo`` (sequence,
epoch, transaction state) and ``LogValidator.processRecordErrors`` (InvalidRecord,
InvalidTimestamp). CorruptRecord and RecordTooLarge are "known" exceptions ReplicaManager does not
log: only ``KafkaApis.handleProduceRequest``'s DEBUG line ``Produce request with correlation id %d
from client %s on partition %s failed due to %s`` (the exception class) records them.

Fields come from the exception message by the phrases each version used (the message shapes
are quoted in ``tests/test_broker_log.py``): the producer id (absent from Kafka < 2.4's new-epoch
and fencing messages), the request epoch, the incoming sequence, the broker's current epoch and
end sequence, the offset the batch would have taken.

Retention. ``UnifiedLog.maybeIncrementLogStartOffset`` logs ``Incremented log start offset to N
due to <reason>`` (2.8+; ``Incrementing log start offset to N`` before) under the prefix
``[UnifiedLog partition=<tp>, dir=...]`` (``[Log partition=...`` before 3.0);
``UnifiedLog.deleteSegments`` logs ``Deleting segment LogSegment(baseOffset=B, ...) due to
<reason>`` (3.x+; ``Deleting segments due to log start offset N breach: LogSegment(...),...``
after DeleteRecords) and Kafka 2.x ``Found deletable segments with base offsets [B,...] due to
<reason>``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

REJECTION, LOG_START, SEGMENT_DELETED = "rejection", "log_start", "segment_deleted"

# The produce-path exceptions of SPEC broker_rejection (simple class names); the error code each
# answers is the catalogue's (errors.ERRORS, by exception).
PRODUCE_EXCEPTIONS = frozenset(
    {
        "OutOfOrderSequenceException",
        "UnknownProducerIdException",
        "InvalidProducerEpochException",
        "ProducerFencedException",
        "DuplicateSequenceException",
        "CorruptRecordException",
        "InvalidRecordException",
        "InvalidTimestampException",
        "RecordTooLargeException",
        "RecordBatchTooLargeException",
        "InvalidTxnStateException",
    }
)

_APPEND_FAILED = re.compile(r"Error processing append operation on partition (?P<tp>\S+)")
_PRODUCE_DEBUG = re.compile(
    r"Produce request with correlation id \d+ from client \S* on partition (?P<tp>\S+) failed due to (?P<cls>[\w.$]+)"
)
_EXCEPTION_LINE = re.compile(r"^(?:Caused by: )?(?P<cls>[A-Za-z_][\w.$]*(?:Exception|Error))(?::\s?(?P<msg>.*))?$")
_BROKER_ID = re.compile(r"(?:[Bb]roker[= ]|KafkaApi-|[Bb]roker id=)(?P<id>\d+)")
_LOG_PREFIX = re.compile(r"\[(?:UnifiedLog|Log|LocalLog) partition=(?P<tp>[^,\]\s]+)")
_LOG_START = re.compile(r"Increment(?:ed|ing) log start offset to (?P<offset>\d+)(?: due to (?P<reason>.+?))?\s*(?:\([\w.$]+\))?$")
_DELETING = re.compile(
    r"Deleting segment (?:LogSegment\((?P<props>(?:[^()]|\([^()]*\))*)\)|(?P<plain>\d+))\s+due to (?P<reason>.+?)(?:\. Log size after.*)?\.?\s*(?:\([\w.$]+\))?$"
)
_DELETING_BELOW_START = re.compile(r"Deleting segments due to (?P<reason>log start offset \d+ breach): (?P<segments>.*)$")
_DELETABLE = re.compile(r"Found deletable segments with base offsets \[(?P<bases>[\d,\s]*)\] due to (?P<reason>.+?)\s*(?:\([\w.$]+\))?$")
_BASE_OFFSET = re.compile(r"baseOffset=(\d+)")

# Message phrases (every version's wording; see the module docstring).
_PHRASES = {
    "producer_id": re.compile(r"(?:[Pp]roducer(?:Id)?[ =]|producerId=|[Ee]poch of producer |for producer )(?P<v>\d+)"),
    "offset": re.compile(r"at offset \(?(?:offset=)?(?P<v>\d+)"),
    "request_epoch": re.compile(r"(?P<v>-?\d+) \(request epoch\)|(?:in|partition) \S+ is (?P<w>-?\d+), which is"),
    "sequence": re.compile(r"(?:found )?(?P<v>-?\d+) \((?:incoming )?seq\. number\)"),
    "current_epoch": re.compile(
        r"(?P<v>-?\d+) \((?:current producer epoch|server epoch|current epoch)\)|last seen epoch (?P<w>-?\d+)|matches expected epoch (?P<x>-?\d+)"
    ),
    "current_sequence": re.compile(r"(?P<v>-?\d+) \((?:current end sequence number|earliest seen sequence|expected seq\. number)\)|but (?P<w>expected 0)"),
    "duplicate_range": re.compile(r"\((?P<v>-?\d+), (?P<w>-?\d+)\)\.?$"),
}


@dataclass(slots=True)
class LogEntry:
    """One log event: its time (epoch ms), level, the header's message, the header line as logged
    (from its timestamp on) and the lines after it (a multi-line exception)."""

    file: str
    line_number: int
    time: int
    level: str
    message: str
    raw: str
    more: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class BrokerLogLine:
    """One broker log line about a partition: a produce error (``REJECTION``), a log start
    offset increment (``LOG_START``, ``offset`` the new log start) or a segment scheduled for
    deletion (``SEGMENT_DELETED``, ``offset`` its base offset). ``text`` is the line as logged
    with its exception line; fields the message does not carry are None."""

    kind: str
    time: int
    topic: str
    partition: int
    broker_id: int | None
    file: str
    line_number: int
    text: str
    exception: str | None = None
    exception_message: str | None = None
    producer_id: int | None = None
    producer_epoch: int | None = None
    sequence: int | None = None
    last_sequence: int | None = None
    current_epoch: int | None = None
    current_sequence: int | None = None
    offset: int | None = None
    reason: str | None = None

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)


def parse_topic_partition(text: str) -> tuple[str, int] | None:
    """``test-8``, ``<topicId>:test-8`` (TopicIdPartition), or Kafka 0.x's ``[test,8]``."""
    text = text.strip().rstrip(".,;")
    old = re.fullmatch(r"\[(?P<topic>[^,\]]+),(?P<partition>\d+)\]", text)
    if old:
        return old["topic"], int(old["partition"])
    head, sep, tail = text.partition(":")
    if sep and re.fullmatch(r"[A-Za-z0-9_-]{22}", head):
        text = tail
    topic, dash, number = text.rpartition("-")
    if not dash or not topic or not number.isdigit():
        return None
    return topic, int(number)


# Words every line of interest holds: a cheap test before the patterns.
_KEYWORDS = re.compile(r"append operation|Produce request|log start offset|Deleting segment|deletable segments")


def classify(entries: Iterable[LogEntry]) -> Iterator[BrokerLogLine]:
    """The broker log lines of interest among ``entries``; all others are passed over."""
    for entry in entries:
        if not _KEYWORDS.search(entry.message):
            continue
        line = _rejection(entry) or _retention(entry)
        if isinstance(line, list):
            yield from line
        elif line is not None:
            yield line


def _where(entry: LogEntry, tp: str) -> dict | None:
    parsed = parse_topic_partition(tp)
    if parsed is None:
        return None
    broker = _BROKER_ID.search(entry.message)
    return {
        "time": entry.time,
        "topic": parsed[0],
        "partition": parsed[1],
        "broker_id": int(broker["id"]) if broker else None,
        "file": entry.file,
        "line_number": entry.line_number,
    }


def _rejection(entry: LogEntry) -> BrokerLogLine | None:
    failed = _APPEND_FAILED.search(entry.message)
    if failed:
        thrown = next((m for m in map(_EXCEPTION_LINE.match, entry.more) if m), None)
        if thrown is None:
            return None
        cls, message = thrown["cls"], thrown["msg"] or ""
        text = f"{entry.raw}\n{thrown.group(0)}"
        tp = failed["tp"]
    else:
        debug = _PRODUCE_DEBUG.search(entry.message)
        if debug is None:
            return None
        cls, message, text, tp = debug["cls"], "", entry.raw, debug["tp"]
    exception = cls.rsplit(".", 1)[-1]
    where = _where(entry, tp)
    if exception not in PRODUCE_EXCEPTIONS or where is None:
        return None
    return BrokerLogLine(
        REJECTION, **where, text=text, exception=exception, exception_message=message, **_producer_fields(message)
    )


def _producer_fields(message: str) -> dict:
    """The producer id, epochs, sequences and offset an exception message names."""
    found: dict = {}
    for name, pattern in _PHRASES.items():
        match = pattern.search(message)
        if match is None:
            continue
        value = next(v for v in match.groups() if v is not None)
        if name == "duplicate_range":
            if not message.startswith("Duplicate"):
                continue
            found["sequence"], found["last_sequence"] = int(match["v"]), int(match["w"])
        elif name == "current_sequence" and value == "expected 0":
            found["current_sequence"] = -1  # "but expected 0": the broker's state had no sequence
        elif name == "request_epoch":
            found["producer_epoch"] = int(value)
        else:
            found[name] = int(value)
    return found


def _retention(entry: LogEntry) -> BrokerLogLine | list[BrokerLogLine] | None:
    prefix = _LOG_PREFIX.search(entry.message)
    if prefix is None:
        return None
    where = _where(entry, prefix["tp"])
    if where is None:
        return None
    text = entry.raw
    moved = _LOG_START.search(text)
    if moved:
        return BrokerLogLine(LOG_START, **where, text=text, offset=int(moved["offset"]), reason=moved["reason"])
    deleting = _DELETING.search(text)
    if deleting:
        base = _BASE_OFFSET.search(deleting["props"] or "") or re.fullmatch(r"(\d+)", deleting["plain"] or "")
        if base is None:
            return None
        return BrokerLogLine(SEGMENT_DELETED, **where, text=text, offset=int(base[1]), reason=deleting["reason"])
    deletable = _DELETABLE.search(text)
    if deletable:
        bases = [int(b) for b in re.split(r"[,\s]+", deletable["bases"].strip()) if b]
        return [BrokerLogLine(SEGMENT_DELETED, **where, text=text, offset=b, reason=deletable["reason"]) for b in bases]
    below_start = _DELETING_BELOW_START.search(text)
    if below_start:
        bases = [int(b) for b in _BASE_OFFSET.findall(below_start["segments"])]
        return [BrokerLogLine(SEGMENT_DELETED, **where, text=text, offset=b, reason=below_start["reason"]) for b in bases]
    return None
