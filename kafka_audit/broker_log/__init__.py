"""Broker ``server.log`` files (``scan --broker-log``): the produce errors a broker logged and the
retention lines that moved a partition's log start offset, as :class:`BrokerLogLine` values that
the partition step joins with the replayed log (``rules/broker_rejection.py``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kafka_audit.broker_log.reader import BrokerLogError, broker_log_files, read_entries
from kafka_audit.broker_log.wording import LOG_START, REJECTION, SEGMENT_DELETED, BrokerLogLine, classify

__all__ = [
    "BrokerLog",
    "BrokerLogError",
    "BrokerLogLine",
    "LOG_START",
    "REJECTION",
    "SEGMENT_DELETED",
    "read_broker_logs",
]

# KafkaApis' DEBUG line for a failure ReplicaManager also logged comes within this time of it.
_SAME_FAILURE_MS = 1000
_KAFKA_APIS_LINE = "Produce request with correlation id"


@dataclass(slots=True)
class BrokerLog:
    """The lines of interest of every given file, in time order (file order for equal times)."""

    files: list[str]
    lines: list[BrokerLogLine] = field(default_factory=list)

    def for_partition(self, topic: str, partition: int) -> tuple[BrokerLogLine, ...]:
        return tuple(line for line in self.lines if line.key == (topic, partition))

    def summary(self, scanned: Iterable[tuple[str, int]]) -> dict[str, int]:
        """Counts for the scan summary: lines read, produce errors among them, and lines about
        partitions the scan did not hold (reported nowhere else)."""
        keys = set(scanned)
        return {
            "broker_log_files": len(self.files),
            "broker_log_lines": len(self.lines),
            "broker_log_rejections": sum(1 for line in self.lines if line.kind == REJECTION),
            "broker_log_lines_unmatched": sum(1 for line in self.lines if line.key not in keys),
        }


def read_broker_logs(paths: Iterable[str]) -> BrokerLog:
    """Read and classify every file (a directory: its ``server.log*`` files). Raises
    :class:`BrokerLogError` with a one-line reason for a file that cannot be read."""
    files = broker_log_files(paths)
    lines: list[BrokerLogLine] = []
    for path in files:
        lines.extend(classify(read_entries(path)))
    lines.sort(key=lambda line: line.time)
    return BrokerLog(files, _without_repeats(lines))


def _without_repeats(lines: list[BrokerLogLine]) -> list[BrokerLogLine]:
    """A failure that ReplicaManager logged at ERROR is also KafkaApis' DEBUG line when debug
    logging is on: one rejection, kept once (the ERROR line, which carries the message)."""
    logged = [line for line in lines if line.kind == REJECTION and not _from_kafka_apis(line)]

    def repeats(line: BrokerLogLine) -> bool:
        return line.kind == REJECTION and _from_kafka_apis(line) and any(
            other.key == line.key and other.error == line.error and 0 <= line.time - other.time <= _SAME_FAILURE_MS
            for other in logged
        )

    return [line for line in lines if not repeats(line)]


def _from_kafka_apis(line: BrokerLogLine) -> bool:
    return _KAFKA_APIS_LINE in line.text.split("\n", 1)[0]
