"""Evidence without payloads (SPEC section 3): ``dump --redact`` and ``report --redact`` replace
record keys, values and header values by their length and a keyed hash. Property: for records
with random payloads written by the fixture writer, no payload (raw, as text, hex or base64)
reaches the redacted output, everything else is what the unredacted output says, and the
report's findings are the same with and without redaction."""

from __future__ import annotations

import base64
import itertools
import json
import random
import re
from html import escape
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from kafka_audit.cli.app import app
from kafka_audit.report.redact import Redactor
from kafka_audit.report.safe_text import escape_text
from tests.support.writer import TS_BASE, BatchSpec, LogDirWriter, RecordSpec

DAY_MS = 86_400_000
# No compression, LZ4 (the codec ids of the v2 attributes).
CODECS = (0, 3)
TOPIC, COMPACTED = "orders", "accounts"
# Audit options under which the culprits below are findings with a record index.
OPTIONS = ["--compacted-topic", COMPACTED, "--reference-time", str(TS_BASE), "--timestamp-before-max-ms", str(DAY_MS)]
_written = itertools.count(1)


def _payload(rng: random.Random) -> bytes:
    """16-48 random bytes, or as many random letters and digits (text shows as itself)."""
    size = rng.randint(16, 48)
    if rng.random() < 0.5:
        return rng.randbytes(size)
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(size)).encode()


def _record(rng: random.Random, key: bool = True, timestamp: int | None = None) -> RecordSpec:
    headers = tuple((f"h{i}", _payload(rng)) for i in range(rng.randint(0, 2)))
    return RecordSpec(key=_payload(rng) if key else None, value=_payload(rng), headers=headers, timestamp=timestamp)


def _write(root: Path, seed: int) -> tuple[Path, list[bytes]]:
    """A log dir of random payloads with two kinds of culprit record: a record two days older than
    the reference time in ``orders`` and one without a key in the compacted ``accounts``."""
    rng = random.Random(seed)
    batches = {TOPIC: [], COMPACTED: []}
    for topic, specs in batches.items():
        for n in range(rng.randint(1, 3)):
            recs = [_record(rng, timestamp=TS_BASE + n * 10 + i) for i in range(rng.randint(1, 4))]
            culprit = rng.randrange(len(recs))
            if topic == TOPIC:
                recs[culprit] = _record(rng, timestamp=TS_BASE - 2 * DAY_MS)
            else:
                recs[culprit] = _record(rng, key=False, timestamp=TS_BASE + n * 10 + culprit)
            specs.append(BatchSpec(records=tuple(recs), codec=rng.choice(CODECS), base_timestamp=TS_BASE + n * 10))
    with LogDirWriter(root) as out:
        for topic, specs in batches.items():
            writer = out.partition(topic, 0)
            for spec in specs:
                writer.append(spec)
    payloads = [p for specs in batches.values() for spec in specs for r in spec.records
                for p in (r.key, r.value, *(v for _, v in r.headers)) if p is not None]
    return root, payloads


def _forms(payload: bytes) -> list[str]:
    """Every way a payload could show in a text document."""
    text = payload.decode("utf-8", errors="backslashreplace")
    escaped = text.encode("unicode_escape").decode("ascii")
    shown = escape_text(payload.decode("utf-8", errors="surrogateescape"))  # as dump's text shows data
    return [text, escape(text), json.dumps(text)[1:-1], escaped, escape(escaped), shown, payload.hex(),
            base64.b64encode(payload).decode()]


def _leaks(output: str, payloads: list[bytes]) -> list[bytes]:
    raw = output.encode("utf-8", errors="surrogateescape")
    return [p for p in payloads if p in raw or any(form in output for form in _forms(p))]


def _fresh(tmp_path: Path, seed: int) -> tuple[Path, list[bytes]]:
    return _write(tmp_path / f"logs-{next(_written)}", seed)


def _cli(*args) -> object:
    return CliRunner().invoke(app, [str(a) for a in args])


SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
KEYS = st.one_of(st.none(), st.text(min_size=1, max_size=20))
_HEALTH = [HealthCheck.function_scoped_fixture]


@settings(max_examples=15, deadline=None, suppress_health_check=_HEALTH)
@given(seed=SEEDS, key=KEYS)
def test_dump_redact_prints_no_payload_byte_and_changes_nothing_else(tmp_path, seed, key):
    root, payloads = _fresh(tmp_path, seed)
    redact_key = ["--redact-key", key] if key is not None else []
    for segment in sorted(root.glob("*-0/*.log")):
        for fmt in ("text", "json"):
            plain = _cli("dump", "--print-data", "--format", fmt, segment)
            redacted = _cli("dump", "--redact", *redact_key, "--format", fmt, segment)
            assert plain.exit_code == 0 and redacted.exit_code == 0, redacted.output
            assert _leaks(plain.stdout, payloads), "the payloads are not in the unredacted dump"
            assert _leaks(redacted.stdout, payloads) == []
            if fmt == "json":
                assert _without_payloads(redacted.stdout) == _without_payloads(plain.stdout)
                assert _redacted_values(redacted.stdout) and all(
                    re.fullmatch(r"<redacted \d+ bytes blake2b:[0-9a-f]{32}>", v) for v in _redacted_values(redacted.stdout)
                )


def _batches(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


def _without_payloads(output: str) -> list[dict]:
    """The JSON dump with keys, values and header values taken out (what redaction may change)."""
    batches = _batches(output)
    for batch in batches:
        for record in batch.get("records", []):
            for name in ("key", "value", "key_b64", "value_b64"):
                record.pop(name, None)
            record["headers"] = [h.get("key") for h in record["headers"]]
    return batches


def _redacted_values(output: str) -> list[str]:
    values = []
    for batch in _batches(output):
        for record in batch.get("records", []):
            values += [record[n] for n in ("key", "value") if record[n] is not None]
            values += [h["value"] for h in record["headers"] if h["value"] is not None]
    return values


def _rows(html: str) -> list[str]:
    """The findings table's rows without the culprit record cells (what redaction may change)."""
    body = re.search(r'<table class="data" id="findings">.*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    return [re.sub(r'<div class="culprit">.*?</div>', "", row, flags=re.S) for row in re.findall(r"<tr.*?</tr>", body, re.S)]


@settings(max_examples=6, deadline=None, suppress_health_check=_HEALTH)
@given(seed=SEEDS)
def test_report_redact_shows_no_payload_byte_and_the_same_findings(tmp_path, seed):
    root, payloads = _fresh(tmp_path, seed)
    pages = {}
    for name, extra in (("plain", []), ("redacted", ["--redact"])):
        out = root.parent / f"{root.name}-{name}.html"
        done = _cli("report", root, "--engine", "local", "--quiet", "--output", out, *OPTIONS, *extra)
        assert done.exit_code == 1, done.output  # the culprits are errors
        pages[name] = out.read_text(encoding="utf-8")
    assert _leaks(pages["plain"], payloads), "the culprit records are not in the unredacted report"
    assert _leaks(pages["redacted"], payloads) == []
    assert _rows(pages["redacted"]) == _rows(pages["plain"])
    scanned = _cli("scan", root, "--engine", "local", "--format", "json", *OPTIONS)
    findings = json.loads(scanned.stdout)["findings"]
    assert {f["check"] for f in findings} == {"timestamp_out_of_range", "missing_key_compacted"}
    assert len(_rows(pages["redacted"])) == len(findings)
    assert pages["redacted"].count("&lt;redacted ") >= len(findings)  # each culprit's value at least


def test_the_same_key_hashes_alike_and_a_random_key_differently():
    assert Redactor("k")(b"payload") == Redactor("k")(b"payload")
    assert Redactor("k")(b"payload") != Redactor("other")(b"payload")
    assert Redactor()(b"payload") != Redactor()(b"payload")
    assert Redactor("k")(b"payload").startswith("<redacted 7 bytes blake2b:")
    assert Redactor("k")(None) is None


def test_redact_key_without_redact_is_exit_2():
    done = _cli("dump", "--redact-key", "k", "fixtures/producer-errors/test-8/00000000000000000000.log")
    assert done.exit_code == 2 and "--redact-key needs --redact" in done.output
