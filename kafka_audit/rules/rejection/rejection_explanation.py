"""The one plain-language sentence of a ``broker_rejection`` finding: who the producer was, what
the broker knew of it at the line's time, and the cause of the error by Kafka's rule
(``ProducerAppendInfo.checkProducerEpoch`` / ``checkSequence`` / ``appendDataBatch``,
``LogValidator``, ``UnifiedLog.analyzeAndValidateRecords``)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING

from kafka_audit.io.broker_log_lines import BrokerLogLine

if TYPE_CHECKING:
    from kafka_audit.rules.rejection.producer_at_time import ProducerAppend, StateAtTime

# ProducerStateEntry.NUM_BATCHES_TO_RETAIN: the retries a broker recognises as duplicates.
_BATCHES_RETAINED = 5
_CONTENT_ERRORS = {
    "CORRUPT_MESSAGE": "its bytes failed the CRC or could not be read",
    "INVALID_RECORD": "a record broke a validation rule",
    "INVALID_TIMESTAMP": "a record's timestamp was outside the allowed window",
    "MESSAGE_TOO_LARGE": "the batch was larger than max.message.bytes",
    "RECORD_LIST_TOO_LARGE": "the batch was larger than segment.bytes",
}


def explain(line: BrokerLogLine, error: str, state: StateAtTime) -> str:
    """One sentence (clauses joined by semicolons) for ``line``, answered with ``error``, given
    ``state``."""
    if error in _CONTENT_ERRORS:
        return _content(line, error, state)
    if state.producer_id is None:
        return _unknown_producer(line, error, state)
    who = _who(line, error, state)
    known = _known(state, who)
    cause = {
        "UNKNOWN_PRODUCER_ID": _no_state,
        "OUT_OF_ORDER_SEQUENCE_NUMBER": _sequence,
        "INVALID_PRODUCER_EPOCH": _fenced,
        "PRODUCER_FENCED": _fenced,
        "DUPLICATE_SEQUENCE_NUMBER": _duplicate,
        "INVALID_TXN_STATE": _transaction,
    }[error](line, error, state)
    return f"{known}; {cause}"


def clock(timestamp: int, reference: int) -> str:
    """``16:10:58`` on the reference's UTC day, else ``2022-03-13 16:10:58``."""
    moment = datetime.fromtimestamp(timestamp / 1000, tz=timezone.utc)
    same_day = moment.date() == datetime.fromtimestamp(reference / 1000, tz=timezone.utc).date()
    return moment.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S")


# A duration is said in the next unit from two of it on: 119.0 s, then 2.0 min.
_NEXT_UNIT_FROM = 120


def duration(ms: int) -> str:
    seconds = ms / 1000
    if seconds < _NEXT_UNIT_FROM:
        return f"{seconds:.1f} s"
    minutes = int(seconds // 60)
    if minutes < _NEXT_UNIT_FROM:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


def _who(line: BrokerLogLine, error: str, state: StateAtTime) -> str:
    """How the sentence names the producer: by the line's id, or as the only candidate."""
    if state.producer_id_source != "only candidate":
        return f"producer {state.producer_id}"
    fits = (
        f"epoch was below {line.producer_epoch}" if error == "OUT_OF_ORDER_SEQUENCE_NUMBER"
        else f"epoch was {line.current_epoch}"
    )
    return (
        f"the line names no producer id, and the only producer of {line.topic}-{line.partition} whose {fits} "
        f"then is {state.producer_id}: producer {state.producer_id}"
    )


def _batch(append: ProducerAppend, at: int) -> str:
    where = "from the producer snapshot, " if append.from_snapshot else ""
    return (
        f"epoch {append.epoch}, sequences {append.base_sequence}..{append.last_sequence} at offset "
        f"{append.last_offset} ({where}{clock(append.timestamp, at)})"
    )


def _known(state: StateAtTime, who: str) -> str:
    at = clock(state.time, state.time)
    if state.last_batch is None and state.last_marker is None:
        return f"{who} had no batch before {at} in this log (none in its segments or snapshots)"
    if state.last_batch is None:
        marker = state.last_marker
        assert marker is not None  # one of the two is known (above)
        return f"{who} was known before {at} only from a transaction marker at offset {marker.base_offset} (epoch {marker.epoch})"
    text = f"{who}'s last batch before {at} was {_batch(state.last_batch, state.time)}"
    if state.epoch is not None and state.epoch != state.last_batch.epoch:
        text += f", its epoch then {state.epoch} by a transaction marker"
    return text


def _no_state(line: BrokerLogLine, error: str, state: StateAtTime) -> str:
    """UNKNOWN_PRODUCER_ID: brokers before KIP-360 (Kafka < 2.5) answer it for a non-zero sequence
    from a producer they hold no state for."""
    answer = "the broker had no state and answered UNKNOWN_PRODUCER_ID (KIP-360)"
    if "next expected sequence number is not known" in (line.exception_message or ""):
        return "the broker held its epoch but no sequence (only a transaction marker was left) and answered UNKNOWN_PRODUCER_ID (KIP-360)"
    if state.last_batch is None:
        return answer
    deleted, when, log_start = state.deleted()
    last = state.last_batch.last_offset
    if deleted and when is not None:
        start = f"log start {log_start} > its last offset {last}" if log_start is not None else f"its last offset {last}"
        return f"it was deleted by retention at {clock(when, state.time)} ({start}); {answer}"
    if deleted is None:
        return (
            f"retention has since deleted it (log start now {state.retention.log_start_now} > its last offset {last}) "
            f"but the given broker logs date no deletion before {clock(state.time, state.time)}; {answer}"
        )
    if state.expired:
        return (
            f"it had been idle {duration(state.idle_ms or 0)}, past producer.id.expiration.ms {state.expiration_ms}, "
            f"so the broker had expired its state; {answer}"
        )
    return (
        f"yet that batch was still in the log and the producer idle only {duration(state.idle_ms or 0)}: neither "
        f"retention nor expiry explains the missing state (a leader whose log lacked it, or state lost on recovery); {answer}"
    )


def _sequence(line: BrokerLogLine, error: str, state: StateAtTime) -> str:
    """OUT_OF_ORDER_SEQUENCE_NUMBER (ProducerAppendInfo.checkSequence)."""
    epoch, sequence = line.producer_epoch, line.sequence
    current = state.epoch
    if epoch is not None and current is not None and epoch != current:
        return (
            f"the request came with the new epoch {epoch} and sequence {sequence}, and a new epoch must start at "
            f"sequence 0: epoch {epoch}'s sequences 0..{(sequence or 1) - 1} never reached the log before this batch, "
            f"so the broker answered OUT_OF_ORDER_SEQUENCE_NUMBER"
        )
    if state.last_batch is None or sequence is None:
        expected = line.current_sequence
        told = f" (the broker's end sequence was {expected})" if expected is not None else ""
        return f"the broker refused sequence {sequence}{told} and answered OUT_OF_ORDER_SEQUENCE_NUMBER"
    last = state.last_batch.last_sequence
    expected = last + 1
    disagree = ""
    if line.current_sequence is not None and line.current_sequence not in (last, -1):
        disagree = f" (the broker said its end sequence was {line.current_sequence}: its state and this log differ)"
    if sequence > expected:
        missing = f"sequence {expected}" if sequence - 1 == expected else f"sequences {expected}..{sequence - 1}"
        cause = (
            f"the broker expected sequence {expected} and got {sequence}: {missing} never reached the log, an "
            f"earlier batch of this producer failed or was lost and the producer sent the next one"
        )
    else:
        cause = (
            f"the broker expected sequence {expected} and got {sequence}, already written: a retry of a batch older "
            f"than the {_BATCHES_RETAINED} the broker remembers, or a producer that reset its sequence"
        )
    return f"{cause}{disagree}; the broker answered OUT_OF_ORDER_SEQUENCE_NUMBER"


def _fenced(line: BrokerLogLine, error: str, state: StateAtTime) -> str:
    """INVALID_PRODUCER_EPOCH (Kafka 2.7+) / PRODUCER_FENCED (before): an epoch below the
    producer's current one (ProducerAppendInfo.checkProducerEpoch)."""
    current = state.epoch if state.epoch is not None else line.current_epoch
    since = ""
    if state.epoch_start is not None and state.epoch_start.epoch == current:
        since = f", first written at offset {state.epoch_start.base_offset} ({clock(state.epoch_start.timestamp, state.time)})"
    return (
        f"the request came with epoch {line.producer_epoch}, below the current epoch {current}{since}: a zombie "
        f"instance fenced by the newer one, and the broker answered {error}"
    )


def _duplicate(line: BrokerLogLine, error: str, state: StateAtTime) -> str:
    return (
        f"sequences {line.sequence}..{line.last_sequence} were already written; the broker answered "
        f"DUPLICATE_SEQUENCE_NUMBER and the producer counts the batch as delivered"
    )


def _transaction(line: BrokerLogLine, error: str, state: StateAtTime) -> str:
    """INVALID_TXN_STATE (ProducerAppendInfo.appendDataBatch): a non-transactional batch while the
    producer's transaction is open."""
    if state.open_transaction and state.last_batch is not None:
        return (
            f"its transaction was open (transactional batch at offset {state.last_batch.last_offset}, no marker "
            f"after it), so a non-transactional batch was refused with INVALID_TXN_STATE"
        )
    return "the log shows no transaction open for it then; the broker answered INVALID_TXN_STATE"


def _unknown_producer(line: BrokerLogLine, error: str, state: StateAtTime) -> str:
    at = clock(state.time, state.time)
    tp = f"{line.topic}-{line.partition}"
    if state.candidates:
        names = ", ".join(str(c) for c in state.candidates)
        fits = f"; producers of {tp} whose epoch fits the message before {at}: {names}"
    else:
        fits = f" and no producer of {tp} in this log fits the message before {at}"
    return f"the line names no producer id{fits}; the broker answered {error}"


def _content(line: BrokerLogLine, error: str, state: StateAtTime) -> str:
    """A batch refused for its content: none of it is in the log."""
    at = clock(state.time, state.time)
    why = _CONTENT_ERRORS[error]
    last = state.partition_last
    where = (
        f"the log's last batch before {at} ends at offset {last.last_offset}, so the refused batch would have "
        f"followed it" if last else f"the log holds no batch before {at}"
    )
    return f"the broker refused a batch for {line.topic}-{line.partition} because {why} and wrote none of it; {where}"
