"""``--broker-log`` parsing (kafka_audit/broker_log): every supported wording, each excerpt beside
the Kafka source line that writes it, the log4j / log4j2 layouts, rotated and gzip files, and the
real 3.6.2 broker logs of the real-broker corpus.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from kafka_audit.io.broker_log import LOG_START, REJECTION, SEGMENT_DELETED, BrokerLogError, read_broker_logs
from kafka_audit.io.broker_log_lines import PRODUCE_EXCEPTIONS, parse_topic_partition
from kafka_audit.rules.rejection.broker_rejection import kafka_error
from tests.support.audit_run import corpus_dir
from tests.support.broker_logs import ISSUE_SERVER_LOG, epoch_ms

APPEND_FAILED = "[2022-03-14 16:11:02,431] ERROR [ReplicaManager broker=23] Error processing append operation on partition test-8 (kafka.server.ReplicaManager)\n"


def parse(tmp_path: Path, text: str, name: str = "server.log"):
    path = tmp_path / name
    path.write_text(text)
    return read_broker_logs([str(path)]).lines


def fields(line) -> dict:
    """The line's error (by the catalogue) and the producer fields its message names."""
    keys = ("producer_id", "producer_epoch", "sequence", "last_sequence", "current_epoch", "current_sequence", "offset")
    return {"error": kafka_error(line), **{k: getattr(line, k) for k in keys if getattr(line, k) is not None}}


# Each case: the exception line as a broker of that version logs it under ReplicaManager's
#   error(s"Error processing append operation on partition $topicPartition", t)
# with the Kafka source line that builds the message quoted above it.
WORDINGS = [
    pytest.param(
        # Kafka 1.x-2.3 ProducerStateManager.scala, ProducerAppendInfo.checkSequence:
        #   throw new OutOfOrderSequenceException(s"Invalid sequence number for new epoch: $producerEpoch " +
        #     s"(request epoch), $firstSeq (seq. number)")
        "org.apache.kafka.common.errors.OutOfOrderSequenceException: Invalid sequence number for new epoch: 3 (request epoch), 4 (seq. number)",
        {"error": "OUT_OF_ORDER_SEQUENCE_NUMBER", "producer_epoch": 3, "sequence": 4},
        id="2.3-new-epoch-no-producer-id",
    ),
    pytest.param(
        # Kafka 1.x-2.3: throw new UnknownProducerIdException(s"Found no record of producerId=$producerId on the broker. It is possible " +
        #   s"that the last message with the producerId=$producerId has been removed due to hitting the retention limit.")
        "org.apache.kafka.common.errors.UnknownProducerIdException: Found no record of producerId=557891 on the broker. It is possible that the last message with the producerId=557891 has been removed due to hitting the retention limit.",
        {"error": "UNKNOWN_PRODUCER_ID", "producer_id": 557891},
        id="2.3-unknown-producer-id",
    ),
    pytest.param(
        # Kafka 1.x-2.3: throw new OutOfOrderSequenceException(s"Out of order sequence number for producerId $producerId: $firstSeq " +
        #   s"(incoming seq. number), ${currentEntry.lastSeq} (current end sequence number)")
        "org.apache.kafka.common.errors.OutOfOrderSequenceException: Out of order sequence number for producerId 7: 12 (incoming seq. number), 10 (current end sequence number)",
        {"error": "OUT_OF_ORDER_SEQUENCE_NUMBER", "producer_id": 7, "sequence": 12, "current_sequence": 10},
        id="2.3-out-of-order",
    ),
    pytest.param(
        # Kafka 1.x-2.3 ("the epoch was bumped by a control record"):
        #   throw new OutOfOrderSequenceException(s"Out of order sequence number for producerId $producerId: found $firstSeq " +
        #     s"(incoming seq. number), but expected 0")
        "org.apache.kafka.common.errors.OutOfOrderSequenceException: Out of order sequence number for producerId 7: found 5 (incoming seq. number), but expected 0",
        {"error": "OUT_OF_ORDER_SEQUENCE_NUMBER", "producer_id": 7, "sequence": 5, "current_sequence": -1},
        id="2.3-expected-0",
    ),
    pytest.param(
        # Kafka 1.x-2.3 ProducerAppendInfo.checkEpoch:
        #   throw new ProducerFencedException(s"Producer's epoch is no longer valid. There is probably another producer " +
        #     s"with a newer epoch. $producerEpoch (request epoch), ${currentEntry.producerEpoch} (server epoch)")
        "org.apache.kafka.common.errors.ProducerFencedException: Producer's epoch is no longer valid. There is probably another producer with a newer epoch. 2 (request epoch), 3 (server epoch)",
        {"error": "PRODUCER_FENCED", "producer_epoch": 2, "current_epoch": 3},
        id="2.3-fenced-no-producer-id",
    ),
    pytest.param(
        # Kafka 1.x: throw new DuplicateSequenceException(s"Duplicate sequence number for producerId $producerId: (incomingBatch.firstSeq, " +
        #   s"incomingBatch.lastSeq): ($firstSeq, $lastSeq).")
        "org.apache.kafka.common.errors.DuplicateSequenceException: Duplicate sequence number for producerId 7: (incomingBatch.firstSeq, incomingBatch.lastSeq): (10, 14).",
        {"error": "DUPLICATE_SEQUENCE_NUMBER", "producer_id": 7, "sequence": 10, "last_sequence": 14},
        id="1.x-duplicate",
    ),
    pytest.param(
        # Kafka 2.4-2.6: throw new OutOfOrderSequenceException(s"Invalid sequence number for new epoch at offset $offset in " +
        #   s"partition $topicPartition: $producerEpoch (request epoch), $appendFirstSeq (seq. number)")
        "org.apache.kafka.common.errors.OutOfOrderSequenceException: Invalid sequence number for new epoch at offset 120 in partition test-8: 3 (request epoch), 4 (seq. number)",
        {"error": "OUT_OF_ORDER_SEQUENCE_NUMBER", "producer_epoch": 3, "sequence": 4, "offset": 120},
        id="2.4-new-epoch",
    ),
    pytest.param(
        # Kafka 2.4: throw new UnknownProducerIdException(s"Found no record of producerId=$producerId on the broker at offset $offset" +
        #   s"in partition $topicPartition. It is possible that the last message with the producerId=$producerId has " +
        #   "been removed due to hitting the retention limit.")   (no space before "in": as brokers print it)
        "org.apache.kafka.common.errors.UnknownProducerIdException: Found no record of producerId=0 on the broker at offset 536in partition testtopic-0. It is possible that the last message with the producerId=0 has been removed due to hitting the retention limit.",
        {"error": "UNKNOWN_PRODUCER_ID", "producer_id": 0, "offset": 536},
        id="2.4-unknown-producer-id",
    ),
    pytest.param(
        # Kafka 2.4: throw new UnknownProducerIdException(s"Local producer state matches expected epoch $producerEpoch " +
        #   s"for producerId=$producerId at offset $offset in partition $topicPartition, but the next expected " +
        #   "sequence number is not known.")
        "org.apache.kafka.common.errors.UnknownProducerIdException: Local producer state matches expected epoch 2 for producerId=557891 at offset 40 in partition test-55, but the next expected sequence number is not known.",
        {"error": "UNKNOWN_PRODUCER_ID", "producer_id": 557891, "current_epoch": 2, "offset": 40},
        id="2.4-epoch-without-sequence",
    ),
    pytest.param(
        # Kafka 2.4-2.6 checkProducerEpoch:
        #   throw new ProducerFencedException(s"Producer's epoch at offset $offset is no longer valid in " +
        #     s"partition $topicPartition: $producerEpoch (request epoch), ${updatedEntry.producerEpoch} (current epoch)")
        "org.apache.kafka.common.errors.ProducerFencedException: Producer's epoch at offset 40 is no longer valid in partition test-8: 2 (request epoch), 3 (current epoch)",
        {"error": "PRODUCER_FENCED", "producer_epoch": 2, "current_epoch": 3, "offset": 40},
        id="2.4-fenced",
    ),
    pytest.param(
        # Kafka 2.7-3.4 checkProducerEpoch:
        #   val message = s"Epoch of producer $producerId at offset $offset in $topicPartition is $producerEpoch, " +
        #     s"which is smaller than the last seen epoch ${updatedEntry.producerEpoch}"
        #   throw new InvalidProducerEpochException(message)
        "org.apache.kafka.common.errors.InvalidProducerEpochException: Epoch of producer 557891 at offset 40 in test-8 is 2, which is smaller than the last seen epoch 3",
        {"error": "INVALID_PRODUCER_EPOCH", "producer_id": 557891, "producer_epoch": 2, "current_epoch": 3, "offset": 40},
        id="2.7-invalid-epoch",
    ),
    pytest.param(
        # Kafka 2.7-3.4 checkSequence:
        #   throw new OutOfOrderSequenceException(s"Invalid sequence number for new epoch of producer $producerId " +
        #     s"at offset $offset in partition $topicPartition: $producerEpoch (request epoch), $appendFirstSeq (seq. number), " +
        #     s"${updatedEntry.producerEpoch} (current producer epoch)")
        "org.apache.kafka.common.errors.OutOfOrderSequenceException: Invalid sequence number for new epoch of producer 557891 at offset 40 in partition test-8: 3 (request epoch), 4 (seq. number), 2 (current producer epoch)",
        {"error": "OUT_OF_ORDER_SEQUENCE_NUMBER", "producer_id": 557891, "producer_epoch": 3, "sequence": 4, "current_epoch": 2, "offset": 40},
        id="2.7-new-epoch",
    ),
    pytest.param(
        # Kafka 3.5+ (ProducerAppendInfo.java, storage module):
        #   throw new OutOfOrderSequenceException("Invalid sequence number for new epoch of producer " + producerId +
        #       "at offset " + offset + " in partition " + topicPartition + ": " + producerEpoch + " (request epoch), "
        #       + appendFirstSeq + " (seq. number), " + updatedEntry.producerEpoch() + " (current producer epoch)");
        "org.apache.kafka.common.errors.OutOfOrderSequenceException: Invalid sequence number for new epoch of producer 557891at offset 40 in partition test-8: 3 (request epoch), 4 (seq. number), 2 (current producer epoch)",
        {"error": "OUT_OF_ORDER_SEQUENCE_NUMBER", "producer_id": 557891, "producer_epoch": 3, "sequence": 4, "current_epoch": 2, "offset": 40},
        id="3.5-new-epoch",
    ),
    pytest.param(
        # Kafka 2.7+ (Scala and Java alike):
        #   throw new OutOfOrderSequenceException("Out of order sequence number for producer " + producerId + " at " +
        #       "offset " + offset + " in partition " + topicPartition + ": " + appendFirstSeq +
        #       " (incoming seq. number), " + currentLastSeq + " (current end sequence number)");
        "org.apache.kafka.common.errors.OutOfOrderSequenceException: Out of order sequence number for producer 557891 at offset 40 in partition test-8: 60 (incoming seq. number), 49 (current end sequence number)",
        {"error": "OUT_OF_ORDER_SEQUENCE_NUMBER", "producer_id": 557891, "sequence": 60, "current_sequence": 49, "offset": 40},
        id="3.x-out-of-order",
    ),
    pytest.param(
        # Kafka 3.6+ (KIP-890 verification):
        #   "Out of order sequence number for producer " + producerId + " at " + "offset " + offset + " in partition " +
        #   topicPartition + ": " + appendFirstSeq + " (incoming seq. number), " + verificationStateEntry.lowestSequence() +
        #   " (earliest seen sequence)"
        "org.apache.kafka.common.errors.OutOfOrderSequenceException: Out of order sequence number for producer 557891 at offset 40 in partition test-8: 9 (incoming seq. number), 5 (earliest seen sequence)",
        {"error": "OUT_OF_ORDER_SEQUENCE_NUMBER", "producer_id": 557891, "sequence": 9, "current_sequence": 5, "offset": 40},
        id="3.6-earliest-seen",
    ),
    pytest.param(
        # Kafka 4.x checkProducerEpoch:
        #   String message = "Epoch of producer " + producerId + " at offset " + offset + " in " + topicPartition +
        #       " is " + producerEpoch + ", which is " + comparison + " the last seen epoch " + current +
        #       " (TV" + transactionVersion + ")";
        "org.apache.kafka.common.errors.InvalidProducerEpochException: Epoch of producer 557891 at offset 40 in test-8 is 2, which is < the last seen epoch 3 (TV0)",
        {"error": "INVALID_PRODUCER_EPOCH", "producer_id": 557891, "producer_epoch": 2, "current_epoch": 3, "offset": 40},
        id="4.x-invalid-epoch",
    ),
    pytest.param(
        # Kafka 2.7+ appendDataBatch:
        #   throw new InvalidTxnStateException(s"Expected transactional write from producer $producerId at " +
        #     s"offset $firstOffsetMetadata in partition $topicPartition")   (LogOffsetMetadata's toString)
        "org.apache.kafka.common.errors.InvalidTxnStateException: Expected transactional write from producer 557891 at offset (offset=40 segment=[0:4096]) in partition test-8",
        {"error": "INVALID_TXN_STATE", "producer_id": 557891, "offset": 40},
        id="2.7-invalid-txn-state",
    ),
    pytest.param(
        # LogValidator.processRecordErrors (2.4+):
        #   throw new RecordValidationException(new InvalidRecordException(
        #     "One or more records have been rejected due to " + errors.size + " record errors " +
        #       "in total, and only showing the first three errors at most: " + errors.asJava.subList(0, math.min(errors.size, 3))), errors)
        "org.apache.kafka.common.InvalidRecordException: One or more records have been rejected due to 1 record errors in total, and only showing the first three errors at most: [RecordError(batchIndex=0, message='Compacted topic cannot accept message without key in topic partition test-8.')]",
        {"error": "INVALID_RECORD"},
        id="2.4-invalid-record",
    ),
    pytest.param(
        # LogValidator.processRecordErrors: new InvalidTimestampException("One or more records have been rejected due to invalid timestamp")
        "org.apache.kafka.common.errors.InvalidTimestampException: One or more records have been rejected due to invalid timestamp",
        {"error": "INVALID_TIMESTAMP"},
        id="2.4-invalid-timestamp",
    ),
]


def test_every_produce_exception_has_its_catalogue_error():
    """The parser keeps these exceptions; the catalogue (errors.ERRORS) says what each answers."""
    from kafka_audit.rules.catalogue import ERRORS

    by_exception = {e.exception: name for name, e in ERRORS.items()}
    assert {by_exception[e] for e in PRODUCE_EXCEPTIONS} == {
        "OUT_OF_ORDER_SEQUENCE_NUMBER", "UNKNOWN_PRODUCER_ID", "INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED",
        "DUPLICATE_SEQUENCE_NUMBER", "CORRUPT_MESSAGE", "INVALID_RECORD", "INVALID_TIMESTAMP", "MESSAGE_TOO_LARGE",
        "RECORD_LIST_TOO_LARGE", "INVALID_TXN_STATE",
    }


@pytest.mark.parametrize("exception_line, expected", WORDINGS)
def test_each_produce_error_wording_gives_its_error_and_fields(tmp_path, exception_line, expected):
    [line] = parse(tmp_path, APPEND_FAILED + exception_line + "\n")
    assert line.kind == REJECTION
    assert (line.topic, line.partition, line.broker_id) == ("test", 8, 23)
    assert line.time == epoch_ms("2022-03-14 16:11:02") + 431
    assert fields(line) == expected
    assert line.text.split("\n") == [APPEND_FAILED.strip(), exception_line]


def test_kafka_37_logs_the_topic_id_partition_and_invalid_epoch_at_info(tmp_path):
    # Kafka 3.7+ ReplicaManager.appendToLocalLog:
    #   case _: InvalidProducerEpochException => info(s"Error processing append operation on partition $topicIdPartition", t)
    # and TopicIdPartition.toString: return topicId + ":" + topic() + "-" + partition();
    text = (
        "[2025-01-10 09:00:00,001] INFO [ReplicaManager broker=1] Error processing append operation on partition "
        "vaGhRx7pTFm_3dmJRwDqDw:orders.v2-12 (kafka.server.ReplicaManager)\n"
        "org.apache.kafka.common.errors.InvalidProducerEpochException: Epoch of producer 4 at offset 9 in orders.v2-12 is 0, "
        "which is smaller than the last seen epoch 1\n"
    )
    [line] = parse(tmp_path, text)
    assert (line.topic, line.partition, kafka_error(line), line.producer_id) == ("orders.v2", 12, "INVALID_PRODUCER_EPOCH", 4)


def test_errors_replica_manager_does_not_log_come_from_kafka_apis_debug_line(tmp_path):
    # KafkaApis.handleProduceRequest:
    #   debug("Produce request with correlation id %d from client %s on partition %s failed due to %s".format(
    #     request.header.correlationId, request.header.clientId, topicPartition, status.error.exceptionName))
    # ReplicaManager passes RecordTooLargeException / CorruptRecordException on without logging them.
    text = (
        "[2022-03-14 16:12:00,000] DEBUG [KafkaApi-23] Produce request with correlation id 81 from client producer-1 on "
        "partition test-8 failed due to org.apache.kafka.common.errors.RecordTooLargeException (kafka.server.KafkaApis)\n"
        "[2022-03-14 16:12:01,000] DEBUG [KafkaApi-23] Produce request with correlation id 82 from client producer-1 on "
        "partition test-8 failed due to org.apache.kafka.common.errors.CorruptRecordException (kafka.server.KafkaApis)\n"
        "[2022-03-14 16:12:02,000] DEBUG [KafkaApi-23] Produce request with correlation id 83 from client producer-1 on "
        "partition test-8 failed due to org.apache.kafka.common.errors.NotLeaderOrFollowerException (kafka.server.KafkaApis)\n"
    )
    lines = parse(tmp_path, text)
    assert [(kafka_error(line), line.broker_id) for line in lines] == [("MESSAGE_TOO_LARGE", 23), ("CORRUPT_MESSAGE", 23)]


def test_a_failure_logged_by_replica_manager_and_kafka_apis_counts_once(tmp_path):
    text = (
        APPEND_FAILED
        + "org.apache.kafka.common.errors.OutOfOrderSequenceException: Out of order sequence number for producer 5 at offset 4 in partition test-8: 9 (incoming seq. number), 3 (current end sequence number)\n"
        + "[2022-03-14 16:11:02,432] DEBUG [KafkaApi-23] Produce request with correlation id 7 from client c on partition "
        "test-8 failed due to org.apache.kafka.common.errors.OutOfOrderSequenceException (kafka.server.KafkaApis)\n"
    )
    [line] = parse(tmp_path, text)
    assert line.producer_id == 5 and "ReplicaManager" in line.text


def test_other_errors_and_lines_are_passed_over(tmp_path):
    text = (
        "[2021-05-19 07:12:57,779] ERROR [ReplicaManager broker=2] Error processing append operation on partition "
        "__consumer_offsets-5 (kafka.server.ReplicaManager)\n"
        "org.apache.kafka.common.errors.NotEnoughReplicasException: The size of the current ISR Set(2) is insufficient to "
        "satisfy the min.isr requirement of 2 for partition __consumer_offsets-5\n"
        "[2021-05-19 07:12:58,000] INFO [LocalLog partition=test-8, dir=/data] Rolled new log segment at offset 100 in 4 ms. (kafka.log.LocalLog)\n"
        "[2021-05-19 07:12:58,001] INFO [LocalLog partition=test-8, dir=/data] Deleting segment files LogSegment(baseOffset=0, "
        "size=1, lastModifiedTime=1, largestRecordTimestamp=Some(1)) (kafka.log.LocalLog$)\n"
    )
    assert parse(tmp_path, text) == []


RETENTION = [
    pytest.param(
        # Kafka 3.6.2 (a real line of the real-broker corpus), UnifiedLog's RetentionSizeBreach:
        #   info(s"Deleting segment $segment due to log retention size ${config.retentionSize} breach. " +
        #     s"Log size after deletion will be ${...}.")
        "[2026-11-23 08:51:32,835] INFO [UnifiedLog partition=ret-0, dir=/var/lib/kafka/data] Deleting segment "
        "LogSegment(baseOffset=100, size=16273, lastModifiedTime=1795423866272, largestRecordTimestamp=Some(1795423866058)) "
        "due to log retention size 65536 breach. Log size after deletion will be 392652. (kafka.log.UnifiedLog)",
        [(SEGMENT_DELETED, "ret", 0, 100, "log retention size 65536 breach")],
        id="3.6-deleting-segment",
    ),
    pytest.param(
        # Kafka 2.8+ UnifiedLog.maybeIncrementLogStartOffset:
        #   info(s"Incremented log start offset to $newLogStartOffset due to $reason")
        "[2026-11-23 08:51:33,056] INFO [UnifiedLog partition=ret-0, dir=/var/lib/kafka/data] Incremented log start offset "
        "to 2620 due to segment deletion (kafka.log.UnifiedLog)",
        [(LOG_START, "ret", 0, 2620, "segment deletion")],
        id="3.6-incremented",
    ),
    pytest.param(
        # Kafka 4.x: the same line from the Java UnifiedLog, under log4j2's default layout.
        "[2025-06-01 10:00:00,000] INFO [UnifiedLog partition=events-3, dir=/data] Incremented log start offset to 77 "
        "due to client delete records request (org.apache.kafka.storage.internals.log.UnifiedLog)",
        [(LOG_START, "events", 3, 77, "client delete records request")],
        id="4.x-incremented",
    ),
    pytest.param(
        # Kafka 2.0-2.7 Log.maybeIncrementLogStartOffset: info(s"Incrementing log start offset to $newLogStartOffset")
        "[2020-02-18 05:24:48,200] INFO [Log partition=kafkatesting-0, dir=/data] Incrementing log start offset to 470 (kafka.log.Log)",
        [(LOG_START, "kafkatesting", 0, 470, None)],
        id="2.x-incrementing",
    ),
    pytest.param(
        # Kafka 2.x Log.deleteOldSegments:
        #   info(s"Found deletable segments with base offsets [${deletable.map(_.baseOffset).mkString(",")}] due to $reason")
        "[2020-02-18 05:24:48,190] INFO [Log partition=kafkatesting-0, dir=/data] Found deletable segments with base offsets "
        "[0,230] due to retention time 604800000ms breach (kafka.log.Log)",
        [(SEGMENT_DELETED, "kafkatesting", 0, 0, "retention time 604800000ms breach"),
         (SEGMENT_DELETED, "kafkatesting", 0, 230, "retention time 604800000ms breach")],
        id="2.x-found-deletable",
    ),
    pytest.param(
        # Kafka 3.x after DeleteRecords (LogStartOffsetBreach): "Deleting segments due to log start offset $offset breach: ..."
        "[2024-05-07 10:55:01,000] INFO [UnifiedLog partition=agg-0, dir=/data] Deleting segments due to log start offset 9 "
        "breach: LogSegment(baseOffset=0, size=948, lastModifiedTime=1, largestRecordTimestamp=Some(2)),LogSegment(baseOffset=5, "
        "size=948, lastModifiedTime=1, largestRecordTimestamp=Some(2)) (kafka.log.UnifiedLog)",
        [(SEGMENT_DELETED, "agg", 0, 0, "log start offset 9 breach"), (SEGMENT_DELETED, "agg", 0, 5, "log start offset 9 breach")],
        id="3.x-log-start-breach",
    ),
]


@pytest.mark.parametrize("text, expected", RETENTION)
def test_retention_lines_in_each_wording(tmp_path, text, expected):
    lines = parse(tmp_path, text + "\n")
    assert [(line.kind, line.topic, line.partition, line.offset, line.reason) for line in lines] == expected


@pytest.mark.parametrize(
    "header, time",
    [
        # log4j / log4j2 default ConversionPattern "[%d] %p %m (%c)%n"
        ("[2022-03-14 16:11:02,431] ERROR ", "2022-03-14 16:11:02.431"),
        # log4j2 "%d{ISO8601} [%t] %-5level %logger - %msg%n"
        ("2022-03-14T16:11:02,431 [data-plane-kafka-request-handler-3] ERROR kafka.server.ReplicaManager - ", "2022-03-14 16:11:02.431"),
        # a zone in the date (%d{yyyy-MM-dd'T'HH:mm:ss.SSSZ}): read back to UTC
        ("[2022-03-14T17:11:02.431+0100] ERROR ", "2022-03-14 16:11:02.431"),
        # journald / container log prefix before Kafka's line
        ("Mar 14 16:11:02 kafka-23 kafka-server-start.sh[15550]: [2022-03-14 16:11:02,431] ERROR ", "2022-03-14 16:11:02.431"),
    ],
)
def test_header_layouts(tmp_path, header, time):
    text = (
        f"{header}[ReplicaManager broker=23] Error processing append operation on partition test-8 (kafka.server.ReplicaManager)\n"
        "org.apache.kafka.common.errors.OutOfOrderSequenceException: Out of order sequence number for producer 5 at offset 4 in partition test-8: 9 (incoming seq. number), 3 (current end sequence number)\n"
        "\tat org.apache.kafka.storage.internals.log.ProducerAppendInfo.checkSequence(ProducerAppendInfo.java:194)\n"
        "\tat kafka.log.UnifiedLog.append(UnifiedLog.scala:1068)\n"
    )
    [line] = parse(tmp_path, text)
    assert line.time == epoch_ms(time.split(".")[0]) + int(time.split(".")[1])
    assert (line.producer_id, line.sequence, line.broker_id) == (5, 9, 23)


def test_rotated_and_gzip_files_of_a_folder_read_oldest_first(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    issue = ISSUE_SERVER_LOG.splitlines(keepends=True)
    (folder / "server.log").write_text("".join(issue[4:]))  # newest: the UNKNOWN_PRODUCER_ID entry
    with gzip.open(folder / "server.log.1.gz", "wt") as handle:
        handle.write("".join(issue[2:4]))  # the OutOfOrderSequence entry
    (folder / "server.log.2").write_text("".join(issue[:2]))  # oldest: the retention lines
    (folder / "controller.log").write_text(issue[2] + issue[3])  # not a server.log* file
    log = read_broker_logs([str(folder)])
    assert [Path(f).name for f in log.files] == ["server.log.2", "server.log.1.gz", "server.log"]
    assert [(line.kind, line.topic, line.partition) for line in log.lines] == [
        (SEGMENT_DELETED, "test", 55), (SEGMENT_DELETED, "test", 55), (LOG_START, "test", 55),
        (REJECTION, "test", 8), (REJECTION, "test", 55),
    ]


def test_the_issue_lines_and_unmatched_counts(tmp_path):
    log = read_broker_logs([str(_write(tmp_path, ISSUE_SERVER_LOG))])
    assert log.summary([("test", 8)]) == {
        "broker_log_files": 1,
        "broker_log_lines": 5,
        "broker_log_rejections": 2,
        "broker_log_lines_unmatched": 4,  # test-55's retention lines and its rejection
    }


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda d: d / "missing.log", "no such file or directory"),
        (lambda d: _write(d, b"\x1f\x8b\x08\x00garbage"), "server.log"),
        (lambda d: d, "no server.log* file"),
    ],
)
def test_unreadable_broker_logs_raise_one_line_naming_the_file(tmp_path, make, says):
    with pytest.raises(BrokerLogError) as error:
        read_broker_logs([str(make(tmp_path))])
    assert says in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize(
    "text, expected",
    [("test-8", ("test", 8)), ("my-topic.v2-10", ("my-topic.v2", 10)), ("vaGhRx7pTFm_3dmJRwDqDw:test-8", ("test", 8)),
     ("[t3,0]", ("t3", 0)), ("test", None)],
)
def test_topic_partition_names(text, expected):
    assert parse_topic_partition(text) == expected


def test_the_real_broker_logs_hold_retention_lines_and_no_produce_error():
    """The corpus READMEs: grep of each server.log for the produce errors finds 0 lines;
    retention-producer-expiry's broker deleted 24 segments of ret-0 and moved its log start to 2620."""
    for server_log in sorted(corpus_dir("real-broker").glob("*/broker/server.log.txt")):
        log = read_broker_logs([str(server_log)])
        assert not [line for line in log.lines if line.kind == REJECTION], server_log
        if server_log.parts[-3] == "retention-producer-expiry":
            deleted = [line.offset for line in log.lines if line.kind == SEGMENT_DELETED]
            assert len(deleted) == 24 and deleted[0] == 0 and deleted[-1] == 2540
            assert [(line.offset, line.reason) for line in log.lines if line.kind == LOG_START] == [(2620, "segment deletion")]
        else:
            assert log.lines == [], server_log


def _write(folder: Path, data) -> Path:
    path = folder / "server.log"
    path.write_bytes(data) if isinstance(data, bytes) else path.write_text(data)
    return path
