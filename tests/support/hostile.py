"""A log dir whose data is hostile (SPEC section 1: everything a log holds is untrusted): folder
names with bytes that are not UTF-8, newlines and control characters; keys, values, headers and
transactional ids holding terminal escape sequences, NUL, bidi overrides, CI runner commands,
spreadsheet formulas and HTML. Each partition has findings, so that every report shows its names."""

from __future__ import annotations

from pathlib import Path

from tests.support.writer import TS_BASE, BatchSpec, Faults, LogDirWriter, Producer, RecordSpec, transaction_log_record

# Strings an attacker who can produce to the cluster (or name a folder) controls.
ESCAPES = (
    "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\",  # OSC-8 hyperlink
    "\x1b[2J",  # clear screen
    "\x1b]0;title\x07",  # window title
    "nul\x00byte",
    "rtl\u202eexe.txt",
    "c1\x9bcsi",
)
COMMANDS = (
    "\n::error file=x::y",
    "\n  ::set-output name=a::b",
    "##[group]grouped",
    "=cmd|' /C calc'!A0",
    "+1+1", "-2+3", "@SUM(1)", "\tTAB", "\rCR",
)
HTML = (
    '<a href="https://evil.example/phish">x</a>',
    '<span style="position:fixed;top:0;left:0;width:100%;height:100%;background:red">o</span>',
    "<img src=x onerror=alert(1)>",
)
HOSTILE = ESCAPES + COMMANDS + HTML
# Topic names of partition folders: bytes that are not UTF-8 (surrogate escapes), a newline
# followed by a runner command, escape sequences, a formula, HTML.
TOPICS = (
    "bad\udcff\udcfename",
    "nl\n::error file=a::b",
    "esc\x1b[2J\x1b]0;t\x07",
    "=cmd|'calc'!A0",
    '<img src=x onerror=alert(1)>',
)
TRANSACTIONAL_IDS = ('<a href="https://evil.example/phish">x</a>', "tx\x1b[2J\n::error::tx", "=HYPERLINK(\"http://x\")")


def _records(texts: tuple[str, ...]) -> tuple[RecordSpec, ...]:
    return tuple(
        RecordSpec(key=text.encode(), value=text.encode(), headers=((text, text.encode()),)) for text in texts
    )


def write_hostile_log_dir(root: Path) -> Path:
    """The hostile log dir under ``root``: one partition per name of :data:`TOPICS` holding every
    string of :data:`HOSTILE` as key, value and header, and a batch with a bad CRC (a finding that
    names the segment); hanging transactions of producers whose transactional ids are hostile."""
    with LogDirWriter(root, snapshots=False) as log_dir:
        for topic in TOPICS:
            writer = log_dir.partition(topic, 0)
            writer.append(BatchSpec(records=_records(HOSTILE)))
            writer.append(BatchSpec(records=_records(HOSTILE[:2]), faults=Faults(bad_crc=True)))
        state = log_dir.partition("__transaction_state", 0)
        for number, transactional_id in enumerate(TRANSACTIONAL_IDS):
            producer = Producer(500 + number, transactional=True)
            data = log_dir.partition(TOPICS[number + 1], 1)
            state.clock = data.clock = TS_BASE + number
            start = state.clock
            state.append(BatchSpec(records=(transaction_log_record(
                transactional_id, producer.producer_id, 0, "Ongoing", partitions=[(TOPICS[number + 1], 1)],
                start=start, last_update=start),), base_timestamp=start))
            producer.begin()
            producer.send(data, _records(HOSTILE[number:number + 2]))
    return root
