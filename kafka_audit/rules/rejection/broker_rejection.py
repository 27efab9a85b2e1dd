"""``broker_rejection``: a produce error from a broker's ``server.log`` joined with what the
replayed log says the broker knew of that producer at that moment.

This is a lookup, not a second sequence validator: fed a partition's batch summaries in log order
(and the valid ``.snapshot`` entries, which keep the state of batches retention has deleted), it
finds for each logged rejection at time T the producer's last batch before T (the latest in log
order whose max timestamp is at most T: ``ProducerStateEntry``'s last batch), the epoch it was
at (a transaction marker also sets it: ``ProducerAppendInfo.appendEndTxnMarker``), whether
retention had already deleted that batch (the log start offset at T, from the broker's own
``Incremented log start offset`` / ``Deleting segment`` lines) and whether the producer had been
idle past ``producer.id.expiration.ms`` (``ProducerStateManager.isProducerExpired``). The
sentence that explains the error is built in ``rules/rejection/rejection_explanation.py``.

Batches are kept per time bucket (between two consecutive rejection times), one entry per
producer and bucket, so memory grows with the number of rejections, not with the log.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from typing import Any, cast

from kafka_audit.check_ids import CheckId
from kafka_audit.io.broker_log_lines import LOG_START, REJECTION, SEGMENT_DELETED, BrokerLogLine
from kafka_audit.log.producer_snapshot import ProducerSnapshot
from kafka_audit.rules.batch_summary import BatchSummary
from kafka_audit.rules.catalogue import ERRORS
from kafka_audit.rules.events import Event, EventKind
from kafka_audit.rules.findings import Finding, iso_time, make_finding
from kafka_audit.rules.rejection.producer_at_time import ProducerAppend, Retention, StateAtTime, is_newer, log_position
from kafka_audit.rules.rejection.rejection_explanation import explain
from kafka_audit.rules.replay.partition_replay import DEFAULT_PRODUCER_ID_EXPIRATION_MS

# The errors whose message may leave out the producer id (Kafka < 2.4): candidates are named.
_EPOCH_ERRORS = ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED")
_ERROR_OF_EXCEPTION = {error.exception: name for name, error in ERRORS.items()}


def kafka_error(line: BrokerLogLine) -> str:
    """The ``Errors`` name a broker answers for the line's exception (the catalogue's)."""
    return _ERROR_OF_EXCEPTION[cast(str, line.exception)]  # a rejection line names its exception


class BrokerRejections:
    """The join of one partition's broker log lines with its batches (see the module docstring).
    Use :meth:`watch` on the summaries in log order, then :meth:`findings` and :meth:`events`."""

    def __init__(
        self,
        topic: str,
        partition: int,
        lines: Iterable[BrokerLogLine],
        *,
        log_start_offset: int,
        expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        snapshots: Iterable[ProducerSnapshot] = (),
    ) -> None:
        self.topic, self.partition = topic, partition
        self.lines = sorted(lines, key=lambda line: line.time)
        self.line_times = [line.time for line in self.lines]
        self.rejections = [line for line in self.lines if line.kind == REJECTION]
        self.times = [line.time for line in self.rejections]
        self.log_start_offset = log_start_offset
        self.expiration_ms = expiration_ms
        count = len(self.rejections)
        # Bucket j holds appends whose timestamp falls in (times[j-1], times[j]].
        self._batches: list[dict[int, ProducerAppend]] = [{} for _ in range(count)]
        self._markers: list[dict[int, ProducerAppend]] = [{} for _ in range(count)]
        self._partition_last: list[ProducerAppend | None] = [None] * count
        self._epoch_starts: dict[tuple[int, int], ProducerAppend] = {}
        for snapshot in snapshots:
            if snapshot.valid:
                for entry in snapshot.entries:
                    self._see(ProducerAppend.of_snapshot_entry(entry))

    def watch(self, summaries: Iterable[BatchSummary]) -> Iterator[BatchSummary]:
        """Pass ``summaries`` through, observing each."""
        for summary in summaries:
            if summary.valid and (summary.producer_id >= 0 or not summary.is_control):
                self._see(ProducerAppend.of_batch(summary))
            yield summary

    def _see(self, append: ProducerAppend) -> None:
        bucket = bisect_left(self.times, append.timestamp)
        if bucket >= len(self.times):
            return  # after every rejection: no rejection's state depends on it
        last = self._partition_last[bucket]
        if not append.marker and (last is None or append.last_offset > last.last_offset):
            self._partition_last[bucket] = append
        if append.producer_id < 0:
            return
        table = self._markers if append.marker else self._batches
        if is_newer(append, table[bucket].get(append.producer_id)):
            table[bucket][append.producer_id] = append
        if not append.marker and not append.from_snapshot:
            key = (append.producer_id, append.epoch)
            start = self._epoch_starts.get(key)
            if start is None or append.base_offset < start.base_offset:
                self._epoch_starts[key] = append

    def states(self) -> list[tuple[BrokerLogLine, StateAtTime]]:
        """Each rejection with the state at its time, in time order."""
        batches: dict[int, ProducerAppend] = {}
        markers: dict[int, ProducerAppend] = {}
        partition_last: ProducerAppend | None = None
        result = []
        for index, line in enumerate(self.rejections):
            _merge(batches, self._batches[index])
            _merge(markers, self._markers[index])
            bucket_last = self._partition_last[index]
            if bucket_last and (partition_last is None or bucket_last.last_offset > partition_last.last_offset):
                partition_last = bucket_last
            result.append((line, self._state(line, batches, markers, partition_last)))
        return result

    def _state(
        self,
        line: BrokerLogLine,
        batches: dict[int, ProducerAppend],
        markers: dict[int, ProducerAppend],
        partition_last: ProducerAppend | None,
    ) -> StateAtTime:
        producer_id, source, candidates = line.producer_id, "log line" if line.producer_id is not None else None, []
        if producer_id is None:
            candidates = _candidates(line, batches, markers)
            if len(candidates) == 1:
                producer_id, source = candidates[0], "only candidate"
        batch = batches.get(producer_id) if producer_id is not None else None
        epoch_start = self._epoch_starts.get((producer_id, batch.epoch)) if batch and producer_id is not None else None
        return StateAtTime(
            time=line.time,
            producer_id=producer_id,
            producer_id_source=source,
            candidates=candidates,
            last_batch=batch,
            last_marker=markers.get(producer_id) if producer_id is not None else None,
            epoch_start=epoch_start if epoch_start and epoch_start.timestamp <= line.time else None,
            partition_last=partition_last,
            retention=self._retention_at(line.time),
            expiration_ms=self.expiration_ms,
        )

    def _retention_at(self, time: int) -> Retention:
        before = self.lines[: bisect_right(self.line_times, time)]
        moved = [line for line in before if line.kind == LOG_START]
        # The highest log start, at the first time it was reached.
        latest = max(moved, key=lambda line: (line.offset, -line.time), default=None)
        return Retention(
            log_start_offset=latest.offset if latest else None,
            log_start_time=latest.time if latest else None,
            deleted_segments=[line for line in before if line.kind == SEGMENT_DELETED],
            log_start_now=self.log_start_offset,
        )

    def findings(self) -> list[Finding]:
        found = []
        for line, state in self.states():
            finding = make_finding(
                CheckId.BROKER_REJECTION,
                _message(line),
                topic=self.topic,
                partition=self.partition,
                offset=line.offset,
                timestamp=line.time,
                error=kafka_error(line),
                details={
                    "log_line": line.text,
                    "log_time": iso_time(line.time),
                    "log_file": f"{line.file}:{line.line_number}",
                    "broker_id": line.broker_id,
                    "client_exception": line.exception,
                    "state_at_time": state.to_dict(),
                    "explanation": explain(line, kafka_error(line), state),
                },
            )
            finding.producer_id = state.producer_id
            finding.producer_epoch = line.producer_epoch
            finding.sequence = line.sequence
            found.append(finding)
        return found

    def events(self) -> list[Event]:
        """Timeline rows (SPEC section 3): ``log_start_moved`` for each log start increment,
        ``broker_log`` for each segment deletion and each rejection (its explanation)."""
        where: dict[str, Any] = {"topic": self.topic, "partition": self.partition}
        explained = {id(line): (state, explain(line, kafka_error(line), state)) for line, state in self.states()}
        events = []
        for line in self.lines:
            if line.kind == LOG_START:
                text = f"log start offset moved to {line.offset}" + (f" due to {line.reason}" if line.reason else "")
                events.append(Event(EventKind.LOG_START_MOVED, **where, offset=line.offset, timestamp=line.time,
                                    producer_id=None, producer_epoch=None, message=text))
            elif line.kind == SEGMENT_DELETED:
                text = f"segment at base offset {line.offset} deleted" + (f" due to {line.reason}" if line.reason else "")
                events.append(Event(EventKind.BROKER_LOG, **where, offset=line.offset, timestamp=line.time,
                                    producer_id=None, producer_epoch=None, message=text))
            else:
                state, text = explained[id(line)]
                events.append(Event(EventKind.BROKER_LOG, **where, offset=line.offset, timestamp=line.time,
                                    producer_id=state.producer_id, producer_epoch=line.producer_epoch,
                                    message=f"{kafka_error(line)}: {text}", check=CheckId.BROKER_REJECTION))
        return events


def _merge(into: dict[int, ProducerAppend], bucket: dict[int, ProducerAppend]) -> None:
    for producer_id, append in bucket.items():
        if is_newer(append, into.get(producer_id)):
            into[producer_id] = append


def _candidates(line: BrokerLogLine, batches: dict[int, ProducerAppend], markers: dict[int, ProducerAppend]) -> list[int]:
    """Producers a message without a producer id may be about, most recent first. A new-epoch
    sequence error (ProducerAppendInfo.checkSequence) comes from a producer whose epoch was below
    the request's; a fencing error (checkProducerEpoch) from one whose epoch was the broker's."""
    epochs: dict[int, tuple[int, int]] = {}
    for table in (batches, markers):
        for producer_id, append in table.items():
            position = log_position(append)
            if producer_id not in epochs or position > epochs[producer_id][1]:
                epochs[producer_id] = (append.epoch, position)
    error = kafka_error(line)
    if error == "OUT_OF_ORDER_SEQUENCE_NUMBER" and line.producer_epoch is not None:
        wanted = [p for p, (epoch, _) in epochs.items() if 0 <= epoch < line.producer_epoch]
    elif error in _EPOCH_ERRORS and line.current_epoch is not None:
        wanted = [p for p, (epoch, _) in epochs.items() if epoch == line.current_epoch]
    else:
        return []
    return sorted(wanted, key=lambda p: -epochs[p][1])


def _message(line: BrokerLogLine) -> str:
    """Kafka's own words: the exception line, or KafkaApis' line when that is all there is."""
    return line.text.split("\n")[-1]
