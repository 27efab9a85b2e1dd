"""The postmortem of issue 16: a log dir holding ``test-8`` and ``test-55`` with producer 557891,
and the broker log lines the issue starts from, beside it.

- ``test-8``: producer 557891 writes epoch 2 (sequences 0..49) until 16:10:36; producer 900003
  writes at epoch 4. At 16:11:02.431 broker 23 refuses 557891's first batch of epoch 3, which
  starts at sequence 4 (the issue's first line, Kafka < 2.4 wording: no producer id); from
  16:11:04 557891's epoch 3 starts at sequence 0.
- ``test-55``: producer 557891 writes sequences 0..2519 (offsets 0..2519) by 16:01:02, producer
  600001 offsets 2520..2739 from 16:10:30; at 16:10:58 retention deletes the segments below 2620
  (the snapshot at 2620 keeps 557891's entry, as a broker's roll snapshot does). At 16:11:05
  broker 22 answers 557891 UNKNOWN_PRODUCER_ID (the issue's second line).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from tests.support.writer import LogDirWriter, Producer, records


def epoch_ms(text: str) -> int:
    """``2022-03-14 16:10:00`` (UTC) in epoch milliseconds."""
    return int(datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp() * 1000)


# The issue's lines as a Kafka 2.3 broker logs them, with the retention lines Kafka 2.3's
# Log.deleteSegments / maybeIncrementLogStartOffset wrote before them (2.x wording).
ISSUE_SERVER_LOG = """\
[2022-03-14 16:10:58,102] INFO [Log partition=test-55, dir=/var/lib/kafka/data] Found deletable segments with base offsets [0,1280] due to retention time 3600000ms breach (kafka.log.Log)
[2022-03-14 16:10:58,140] INFO [Log partition=test-55, dir=/var/lib/kafka/data] Incrementing log start offset to 2620 (kafka.log.Log)
[2022-03-14 16:11:02,431] ERROR [ReplicaManager broker=23] Error processing append operation on partition test-8 (kafka.server.ReplicaManager)
org.apache.kafka.common.errors.OutOfOrderSequenceException: Invalid sequence number for new epoch: 3 (request epoch), 4 (seq. number)
[2022-03-14 16:11:05,017] ERROR [ReplicaManager broker=22] Error processing append operation on partition test-55 (kafka.server.ReplicaManager)
org.apache.kafka.common.errors.UnknownProducerIdException: Found no record of producerId=557891 on the broker. It is possible that the last message with the producerId=557891 has been removed due to hitting the retention limit.
"""


def write_issue_log_dir(root: Path) -> Path:
    """Write the log dir described in the module docstring under ``root``; returns ``root``."""
    with LogDirWriter(root, node_id=23) as log_dir:
        _test_8(log_dir.partition("test", 8, clock=epoch_ms("2022-03-14 16:10:00"), tick_ms=2000))
        _test_55(log_dir.partition("test", 55, clock=epoch_ms("2022-03-14 16:00:00"), tick_ms=1000))
    return root


def _test_8(writer) -> None:
    p, other = Producer(557891, epoch=2), Producer(900003, epoch=4)
    for _ in range(10):
        p.send(writer, records(["x"] * 5))
        other.send(writer, records(["y"] * 2))
    writer.clock = epoch_ms("2022-03-14 16:11:04")
    p.bump_epoch(3)
    for _ in range(3):
        p.send(writer, records(["z"] * 5))


def _test_55(writer) -> None:
    p, other = Producer(557891), Producer(600001)
    for index in range(63):
        if index == 32:
            writer.roll()  # segments at 0 and 1280
        p.send(writer, records(["a"] * 40))
    writer.clock = epoch_ms("2022-03-14 16:10:30")
    for _ in range(2):
        other.send(writer, records(["b"] * 50))
    writer.roll()  # the segment at 2620, with the snapshot of the state before it
    for _ in range(3):
        other.send(writer, records(["b"] * 40))
    writer.delete_segments(2)
