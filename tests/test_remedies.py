"""Remedies (SPEC section 3): the commands an operator runs, with the finding's values filled in.

The expected command lines are written by hand from Kafka's tools' documentation
(``kafka-delete-records.sh --offset-json-file`` with ``{"version":1,"partitions":[...]}``,
``kafka-consumer-groups.sh --reset-offsets --to-offset N --topic T:P --execute``,
``kafka-transactions.sh abort --topic --partition --start-offset``, ``kafka-configs.sh --alter
--entity-type topics --add-config``) and the fixtures' bytes as ``kafka-audit dump`` shows them."""

from __future__ import annotations

import json
import shlex

import pytest

from kafka_audit.engines.local import audit_in_process
from kafka_audit.log.log_dir import discover
from kafka_audit.report.ci_formats.sarif import to_sarif
from kafka_audit.rules.findings import make_finding
from kafka_audit.rules.remedies import remedy_for
from tests.conftest import FIXTURES
from tests.test_pipeline import options_of

FAULTY = FIXTURES / "faulty"


@pytest.fixture(scope="module")
def result():
    return audit_in_process(discover([str(FAULTY)]), options_of(FAULTY))


def _remedy(result, check: str, topic: str) -> dict:
    found = [f for f in result.findings if f.check == check and f.topic == topic]
    assert found, f"no {check} in {topic}"
    return found[0].details["remedy"]


def test_every_error_and_warning_has_the_remedy_key_and_info_none(result):
    for finding in result.findings:
        if finding.severity == "info":
            assert "remedy" not in finding.details, finding.check
        else:
            remedy = finding.details["remedy"]
            assert remedy is None or set(remedy) == {"summary", "commands", "loses", "references"}, finding.check
            if remedy is not None:
                assert remedy["summary"] and remedy["loses"] and remedy["references"], finding.check


def test_a_corrupt_batch_is_skipped_to_the_offset_after_it(result):
    # crc-mismatch-0: the batch 9-11 (dump: baseOffset 9 lastOffset 11) is corrupt; offset 12 follows it.
    commands = _remedy(result, "crc_mismatch", "crc-mismatch")["commands"]
    assert """echo '{"version":1,"partitions":[{"topic":"crc-mismatch","partition":0,"offset":12}]}' > delete-records.json""" in commands
    assert "kafka-delete-records.sh --bootstrap-server <broker> --offset-json-file delete-records.json" in commands
    assert ("kafka-consumer-groups.sh --bootstrap-server <broker> --reset-offsets --to-offset 12 --group <group> "
            "--topic crc-mismatch:0 --execute") in commands


def test_a_damaged_tail_names_what_to_check_instead_of_guessing(result):
    remedy = _remedy(result, "truncated_batch", "truncated-batch")
    assert "<offset-after-damage>" in remedy["commands"][-1]
    assert "kafka-get-offsets.sh --bootstrap-server <broker> --topic truncated-batch --partitions 1 --time -1" in remedy["summary"]


def test_a_hanging_transaction_is_aborted_from_its_first_offset(result):
    remedy = _remedy(result, "hanging_transaction", "hanging-transaction")
    assert remedy["commands"][-1] == (
        "kafka-transactions.sh --bootstrap-server <broker> abort --topic hanging-transaction --partition 0 --start-offset 3"
    )


def test_a_batch_over_max_message_bytes_names_the_setting_that_accepts_it(result):
    # record-too-large-0: the batch at offset 3 is 1609 bytes (dump: size 1609), over --max-message-bytes 1000.
    remedy = _remedy(result, "record_too_large", "record-too-large")
    assert remedy["commands"][0] == (
        "kafka-configs.sh --bootstrap-server <broker> --alter --entity-type topics --entity-name record-too-large "
        "--add-config max.message.bytes=1609"
    )


def test_a_batch_over_segment_bytes_says_why_max_message_bytes_cannot_help():
    finding = make_finding("record_too_large", "too large", topic="t", partition=0, offset=5,
                           details={"size": 4000, "segment_bytes": 2048}, error="RECORD_LIST_TOO_LARGE")
    remedy = remedy_for(finding)
    assert "no max.message.bytes" in remedy["summary"]
    assert remedy["commands"] == [
        "kafka-configs.sh --bootstrap-server <broker> --alter --entity-type topics --entity-name t "
        "--add-config segment.bytes=4000,max.message.bytes=4000"
    ]


def test_producer_errors_say_what_the_client_sees_by_kip_691(result):
    assert "fatal error" in _remedy(result, "transaction_state_violation", "transaction-state-violation")["summary"]
    assert "abortTransaction()" in _remedy(result, "out_of_order_sequence", "out-of-order-sequence")["summary"]
    assert "KIP-360" in _remedy(result, "retention_gap", "retention-gap")["references"]


def test_a_hostile_folder_name_is_quoted_in_every_command():
    finding = make_finding("crc_mismatch", "bad", topic="x'; rm -rf ~; '", partition=0, offset=1)
    for command in remedy_for(finding, {})["commands"]:
        words = shlex.split(command, comments=True)  # as a shell reads the line
        assert "rm" not in words and not any(w.startswith("~") for w in words), command


def test_sarif_carries_the_remedy_in_the_result_properties(result):
    sarif = json.loads(to_sarif(result, "test"))
    run = sarif["runs"][0]
    hanging = next(r for r in run["results"] if r["ruleId"] == "hanging_transaction")
    assert hanging["properties"]["remedy"]["commands"][-1].startswith("kafka-transactions.sh --bootstrap-server <broker> abort")
    rule = next(r for r in run["tool"]["driver"]["rules"] if r["id"] == "hanging_transaction")
    assert "kafka-transactions.sh" not in json.dumps(rule)
