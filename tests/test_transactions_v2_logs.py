"""Transactions v2 histories written as a Kafka 4 broker and coordinator write them (the fixture
writer's TV2 producer and ``__transaction_state`` records), scanned whole: timeouts told from
client aborts, fencing, epoch exhaustion, both transaction versions in one log."""

from __future__ import annotations

from pathlib import Path

from kafka_audit.audit.scan_options import ScanOptions
from kafka_audit.engines.local import audit_in_process
from kafka_audit.log.log_dir import discover
from tests.support.writer import TS_BASE, BatchSpec, LogDirWriter, Producer, records, transaction_log_record

TIMEOUT = 60_000


def _scan(root: Path, **options):
    return audit_in_process(discover([str(root)]), ScanOptions(timeline=True, **options))


def _state(w, txn_id: str, p: Producer, state: str, at: int, start: int = -1, partitions=(), epoch=None, **kw) -> None:
    w.clock = at
    record = transaction_log_record(txn_id, p.producer_id, p.epoch if epoch is None else epoch, state,
                                    timeout_ms=TIMEOUT, partitions=partitions, start=start, last_update=at, **kw)
    w.append(BatchSpec(records=(record,), base_timestamp=at))


def test_timeout_abort_is_told_from_a_client_abort_by_the_coordinator_timing(tmp_path):
    """TransactionCoordinator.abortTimedOutTransactions: the transaction began at T in partition 0
    and wrote to partition 1 50 s later; the coordinator aborted it at T + 62 s (PrepareAbort at the
    bumped epoch, start T). Both partitions' ABORT is a timeout_abort, though partition 1's own
    data is only 12 s old: the start is the coordinator's. The client's own abort 5 s into the
    next transaction is no finding."""
    with LogDirWriter(tmp_path, snapshots=False) as d:
        a, b = d.partition("t", 0), d.partition("t", 1)
        log = d.partition("__transaction_state", 0)
        p = Producer(70, transactional=True, transaction_version=2)
        parts = [("t", 0), ("t", 1)]
        _state(log, "tx", p, "Empty", TS_BASE, client_transaction_version=None)
        t0 = TS_BASE + 1000
        p.begin()
        _state(log, "tx", p, "Ongoing", t0, t0, parts)
        a.clock = t0
        p.send(a, records(["a"]))
        b.clock = t0 + 50_000
        p.send(b, records(["b"]))
        _state(log, "tx", p, "PrepareAbort", t0 + 62_000, t0, parts, epoch=p.epoch + 1)
        a.clock = b.clock = t0 + 62_001
        p.abort()
        _state(log, "tx", p, "CompleteAbort", t0 + 62_002, t0)
        t1 = t0 + 70_000
        p.begin()
        _state(log, "tx", p, "Ongoing", t1, t1, parts[:1])
        a.clock = t1
        p.send(a, records(["c"]))
        _state(log, "tx", p, "PrepareAbort", t1 + 5_000, t1, parts[:1], epoch=p.epoch + 1)
        a.clock = t1 + 5_001
        p.abort()
    result = _scan(tmp_path)
    found = sorted((f.partition, f.check, f.details["reason"], f.details["timing_from"]) for f in result.findings)
    assert found == [(0, "epoch_bump", "timeout_abort", "__transaction_state"), (1, "epoch_bump", "timeout_abort", "__transaction_state")]
    for f in result.findings:
        assert f.details["duration_ms"] == 62_000 and f.details["transaction_timeout_ms"] == TIMEOUT
        assert f.details["open_transaction_aborted"] and f.transactional_id == "tx"


def test_epoch_exhaustion_continues_under_the_next_producer_id(tmp_path):
    """TransactionMetadataTest.testEpochBumpOnEndTxnOverflow: data at Short.MAX_VALUE - 1, the
    COMMIT at Short.MAX_VALUE under the old id (the marker is sent with the PrepareCommit's
    metadata: TransactionMarkerChannelManager.addTxnMarkersToSend), then the new producer id at
    epoch 0 (CompleteCommit; PreviousProducerId/NextProducerId). One story: no finding, both ids
    under the transactional id, the timeline naming the successor."""
    last = 32766
    with LogDirWriter(tmp_path, snapshots=False) as d:
        w = d.partition("t", 0)
        log = d.partition("__transaction_state", 0)
        old = Producer(80, epoch=last - 1, transactional=True, transaction_version=2)
        _state(log, "tx-long", old, "Empty", TS_BASE, client_transaction_version=None)
        for _ in range(2):  # epochs 32765 and 32766
            old.begin()
            _state(log, "tx-long", old, "Ongoing", w.clock, w.clock, [("t", 0)])
            old.send(w, records(["x", "y"]))
            _state(log, "tx-long", old, "PrepareCommit", w.clock, w.clock, [("t", 0)], epoch=old.epoch + 1,
                   next_producer_id=81 if old.epoch == last else -1)
            old.commit()
        new = Producer(81, epoch=0, transactional=True, transaction_version=2)
        _state(log, "tx-long", new, "CompleteCommit", w.clock, previous_producer_id=80)
        new.begin()
        new.send(w, records(["z"]))
        new.commit()
    result = _scan(tmp_path)
    assert result.findings == []
    assert {row["producer_id"]: row["transactional_id"] for row in result.producers if row["topic"] == "t"} == {
        80: "tx-long",
        81: "tx-long",
    }
    (exhausted,) = [e for e in result.events if e.kind == "epoch_bump" and e.producer_epoch == 32767]
    assert "goes on as producer 81 at epoch 0" in exhausted.message


def test_tv2_and_tv1_producers_in_one_log(tmp_path):
    """An upgrade: a TV1 producer (markers at the data's epoch) and a TV2 one side by side; each is
    judged by its own version's rules and neither gives a finding."""
    with LogDirWriter(tmp_path, snapshots=False) as d:
        w = d.partition("t", 0)
        v1 = Producer(90, transactional=True)
        v2 = Producer(91, transactional=True, transaction_version=2)
        for i in range(4):
            for p in (v1, v2):
                p.begin()
                p.send(w, records(["a", "b"]))
                (p.commit if i % 2 else p.abort)()
    result = _scan(tmp_path)
    assert result.findings == []
    bumps = [e.producer_id for e in result.events if e.kind == "epoch_bump"]
    assert bumps == [91] * 4


def test_transactions_that_skip_a_partition_are_no_fencing(tmp_path):
    """A TV2 producer's transactions touch one partition or both (keyed records): a partition left
    out of some transactions sees the epoch jump by several between its own markers. That is no
    fencing; a new instance's InitProducerId after a completed transaction (an Empty record at the
    new epoch in __transaction_state) is, once in each partition it then writes to."""
    with LogDirWriter(tmp_path, snapshots=False) as d:
        a, b = d.partition("t", 0), d.partition("t", 1)
        log = d.partition("__transaction_state", 0)
        p = Producer(60, transactional=True, transaction_version=2)
        _state(log, "keyed", p, "Empty", TS_BASE, client_transaction_version=None)
        for targets in ([a, b], [a], [a], [a, b], [b], [a, b]):
            p.begin()
            _state(log, "keyed", p, "Ongoing", log.clock, log.clock, [(w.topic, w.partition) for w in targets])
            for w in targets:
                p.send(w, records(["k"]))
            p.commit()
        p.init_producer_id()  # a new instance: no transaction open, +1
        _state(log, "keyed", p, "Empty", log.clock)
        p.begin()
        for w in (a, b):
            p.send(w, records(["n"]))
        p.commit()
    result = _scan(tmp_path)
    fenced = sorted((f.partition, f.producer_epoch, f.details["reason"]) for f in result.findings)
    assert fenced == [(0, 7, "fenced"), (1, 7, "fenced")]
    elsewhere = [e for e in result.events if e.kind == "epoch_bump" and "other partitions" in e.message]
    assert sorted((e.partition, e.producer_epoch) for e in elsewhere) == [(0, 5), (1, 3)]
