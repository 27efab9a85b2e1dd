"""Everything a log holds is untrusted (SPEC section 1): over a log dir whose folder names hold
bytes that are not UTF-8, newlines and control characters, and whose keys, values, headers and
transactional ids hold terminal escapes, NUL, U+202E, runner commands, formulas and HTML, every
output parses with its consumer's parser, carries no raw control character, and starts no GitHub
runner command outside ``--format github``; the HTML report makes no element from data.
Also: write errors are one exit-2 line with no partial file, and error lines redact secrets."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import unicodedata
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_audit.report.safe_text import csv_cell, escape_text, json_text, xml_text
from tests.support.browser import find_chromium, open_page
from tests.support.hostile import write_hostile_log_dir
from tests.test_ci_formats import validate_gitlab, validate_sarif

# Written out here, not taken from the code under test: Unicode's Bidi_Control characters.
BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
BROWSER = find_chromium()
OPTIONS = ["--engine", "local", "--reference-time", "1700000000000"]


def _unsafe(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Cs") or char in BIDI


def assert_inert(text: str, github: bool = False) -> None:
    """No raw control character but the newline; no line that starts a runner command (after
    blanks, which the runner skips) and no ``##[``, unless ``github``."""
    raw = sorted({f"U+{ord(c):04X}" for c in text if c != "\n" and _unsafe(c)})
    assert raw == [], f"raw control characters {raw}"
    if not github:
        assert [line for line in text.splitlines() if line.lstrip().startswith("::")] == []
        assert "##[" not in text


def kafka_audit(*args, check_code: tuple[int, ...] = (0, 1)) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "kafka_audit", *map(str, args)], capture_output=True, timeout=300, check=False)
    assert done.returncode in check_code, done.stderr.decode(errors="replace")[-2000:]
    return done


def text_of(done: subprocess.CompletedProcess) -> str:
    """stdout as UTF-8 text: a byte that is not UTF-8 fails the test."""
    return done.stdout.decode("utf-8")


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> Path:
    return write_hostile_log_dir(tmp_path_factory.mktemp("hostile") / "logs")


def test_the_fixture_has_every_hostile_folder_name(log_dir):
    names = {os.fsencode(entry.name) for entry in os.scandir(log_dir)}
    assert b"bad\xff\xfename-0" in names and b"nl\n::error file=a::b-0" in names


@pytest.mark.parametrize("fmt", ["table", "json", "ndjson", "csv", "sarif", "junit", "github", "gitlab"])
def test_every_scan_format_parses_and_carries_nothing_that_acts(log_dir, fmt, tmp_path, monkeypatch):
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    text = text_of(kafka_audit("scan", log_dir, "--format", fmt, *OPTIONS))
    assert_inert(text, github=fmt == "github")
    if fmt == "table":
        assert "bad\\xff\\xfename-0" in text and "esc\\x1b[2J\\x1b]0;t\\x07-0" in text
    elif fmt == "json":
        findings = json.loads(text)["findings"]
        assert {f["topic"] for f in findings} >= {"bad\\xff\\xfename", "nl\n::error file=a::b-0", "=cmd|'calc'!A0"}
        assert {f["transactional_id"] for f in findings} >= {'<a href="https://evil.example/phish">x</a>'}
    elif fmt == "ndjson":
        assert len([json.loads(line) for line in text.splitlines()]) == 8
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(text)))
        assert len(rows) == 8
        assert {r["topic"] for r in rows} >= {"'=cmd|'calc'!A0", "bad\\xff\\xfename", "nl\\x0a:\\:error file=a:\\:b-0"}
        assert {r["partition"] for r in rows} == {"-1", "0", "1"} and {r["baseline"] for r in rows} == {"false"}
        texts = [cell for r in rows for cell in r.values() if not re.fullmatch(r"-?[0-9]+", cell)]
        assert [cell for cell in texts if cell.startswith(("=", "+", "-", "@", "\t", "\r"))] == []
    elif fmt == "sarif":
        document = json.loads(text)
        validate_sarif(document)
        uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in document["runs"][0]["results"]}
        assert any("bad%FF%FEname-0/" in uri for uri in uris)
    elif fmt == "junit":
        suites = ElementTree.fromstring(text)
        assert {s.get("name") for s in suites} >= {"bad\\xff\\xfename", "nl\\x0a:\\:error file=a:\\:b-0"}
    elif fmt == "gitlab":
        validate_gitlab(json.loads(text))
    else:
        assert all(line.startswith(("::error ", "::notice ", "::warning ", "kafka-audit: ")) for line in text.splitlines())
        markdown = summary.read_text(encoding="utf-8")
        assert "bad\\xff\\xfename-0" in markdown and "&lt;img src=x" in markdown
        assert not any(c != "\n" and _unsafe(c) for c in markdown)


@pytest.mark.parametrize("view", ["producers", "timeline"])
@pytest.mark.parametrize("fmt", ["table", "json", "ndjson", "csv"])
def test_the_views_carry_nothing_that_acts(log_dir, view, fmt):
    text = text_of(kafka_audit(view, log_dir, "--format", fmt, *OPTIONS))
    assert_inert(text)
    if fmt == "json":
        rows = json.loads(text)["producers" if view == "producers" else "events"]
        assert {r["transactional_id"] for r in rows} >= {"tx\x1b[2J\n::error::tx"}
    elif fmt == "csv":
        ids = {r["transactional_id"] for r in csv.DictReader(io.StringIO(text))}
        assert "'=HYPERLINK(\"http://x\")" in ids and "tx\\x1b[2J\\x0a:\\:error:\\:tx" in ids


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_dump_prints_data_escaped(log_dir, fmt):
    segments = sorted(str(p) for p in log_dir.glob("*-0/*.log"))
    text = text_of(kafka_audit("dump", "--print-data", "--format", fmt, *segments))
    assert_inert(text)
    if fmt == "json":
        values = [r.get("value") for line in text.splitlines() if line.startswith("{")
                  for r in json.loads(line).get("records", [])]
        assert "\n::error file=x::y" in values and "\x1b[2J" in values
    else:
        assert "payload: \\x1b]8;;http://x\\x1b\\\\link" in text and "payload: rtl\\u202eexe.txt" in text


class _Elements(HTMLParser):
    """Every start tag of a document with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {name: value or "" for name, value in attrs}))


@pytest.mark.skipif(BROWSER is None, reason="no Chromium on PATH (chromium): CI installs Debian's in .ci/run")
def test_the_html_report_makes_no_element_or_link_from_data(log_dir, tmp_path):
    page = tmp_path / "report.html"
    done = kafka_audit("report", log_dir, "--output", page, *OPTIONS)
    assert done.stdout == b""
    from plotly.offline import get_plotlyjs

    assert_inert(page.read_text(encoding="utf-8").replace(get_plotlyjs(), "").replace("\t", " ").replace("\r", ""))
    run = open_page(BROWSER, page, tmp_path, screenshot=False)
    parser = _Elements()
    parser.feed(run.dom)
    assert parser.tags and any(tag == "svg" for tag, _ in parser.tags), "the charts were drawn"
    made = [(tag, attrs) for tag, attrs in parser.tags
            if "evil.example" in attrs.get("href", "") + attrs.get("xlink:href", "")
            or "onerror" in attrs or "position:fixed" in attrs.get("style", "").replace(" ", "")
            or (tag == "img" and attrs.get("src") == "x")]
    assert made == []
    assert '&lt;a href="https://evil.example/phish"&gt;x&lt;/a&gt;' in run.dom or "evil.example/phish" in run.dom


# -- write errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["scan"], ["producers"], ["timeline"], ["scan", "--format", "json"], ["dump"]])
def test_a_full_stdout_is_one_line_exit_2(log_dir, command):
    args = [*command, *(sorted(log_dir.glob("*-0/*.log")) if command == ["dump"] else [log_dir, *OPTIONS])]
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "kafka_audit", *map(str, args)], stdout=full,
                              stderr=subprocess.PIPE, timeout=300, check=False)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        "kafka-audit: cannot write the output to standard output: No space left on device"]


@pytest.mark.parametrize("command", [["scan", "--format", "json"], ["report"], ["producers"]])
def test_output_to_a_full_device_is_one_line_exit_2(log_dir, command):
    done = kafka_audit(*command, log_dir, "--output", "/dev/full", *OPTIONS, check_code=(2,))
    assert done.stderr.decode().splitlines() == ["kafka-audit: --output /dev/full: No space left on device"]


@pytest.fixture
def tiny_filesystem(tmp_path):
    """A 64 KiB tmpfs (root only; skipped where mounting is refused), unmounted after the test."""
    folder = tmp_path / "tiny"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)], capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.parametrize("command", [["scan", "--format", "json", "--output"], ["report", "--output"],
                                     ["scan", "--write-baseline"]])
def test_a_full_filesystem_leaves_the_old_file_and_no_partial_one(log_dir, tiny_filesystem, command):
    target = tiny_filesystem / "kept.out"
    target.write_text("the previous report\n")
    (tiny_filesystem / "filler").write_bytes(b"x" * (60 << 10))
    option = command[-1]
    done = kafka_audit(*command, target, log_dir, *OPTIONS, check_code=(2,))
    assert done.stderr.decode().splitlines() == [f"kafka-audit: {option} {target}: No space left on device"]
    assert sorted(p.name for p in tiny_filesystem.iterdir()) == ["filler", "kept.out"]
    assert target.read_text() == "the previous report\n"


def test_output_parquet_is_moved_into_place_and_a_full_filesystem_leaves_nothing(log_dir, tmp_path, tiny_filesystem):
    target = tmp_path / "datasets"
    target.mkdir()
    (target / "notes.txt").write_text("kept")
    (target / "findings").mkdir()
    (target / "findings" / "stale.parquet").write_bytes(b"from an older scan")
    kafka_audit("scan", log_dir, "--output-parquet", target, *OPTIONS, "--quiet")
    assert sorted(p.name for p in target.iterdir()) == ["batches", "findings", "notes.txt", "producers"]
    assert [p.name for p in (target / "findings").iterdir()] == ["part-00000.parquet"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["datasets", "tiny"]
    (tiny_filesystem / "filler").write_bytes(b"x" * (60 << 10))
    done = kafka_audit("scan", log_dir, "--output-parquet", tiny_filesystem / "pq", *OPTIONS, "--quiet", check_code=(2,))
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"kafka-audit: --output-parquet {tiny_filesystem / 'pq'}: ")
    assert "No space left on device" in lines[0]
    assert sorted(p.name for p in tiny_filesystem.iterdir()) == ["filler"]


def test_a_report_replaces_its_file_whole(log_dir, tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old")
    os.chmod(target, 0o640)
    kafka_audit("scan", log_dir, "--format", "json", "--output", target, *OPTIONS)
    assert json.loads(target.read_text())["findings"] and (target.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


# -- error lines --------------------------------------------------------------------------------


def test_error_lines_redact_secrets_and_escape_names(tmp_path):
    typo = kafka_audit("scan", tmp_path, "--storage-option", "secret:TOPSECRET-VALUE", check_code=(2,))
    assert b"TOPSECRET" not in typo.stderr and typo.stderr.count(b"\n") == 1
    nowhere = ["--storage-option", "endpoint_url=http://127.0.0.1:1", "--storage-option",
               'config_kwargs={"retries": {"max_attempts": 1}, "connect_timeout": 2}']  # never the Internet
    uri = kafka_audit("scan", "s3://AKIAKEY:TOPSECRET@bucket/x", "--engine", "local", *nowhere, check_code=(2,))
    assert b"TOPSECRET" not in uri.stderr and b"AKIAKEY" not in uri.stderr and b"s3://***@bucket/x" in uri.stderr
    missing = kafka_audit("scan", tmp_path / "gone\x1b[2J\n::error::x", check_code=(2,))
    line = missing.stderr.decode()
    assert line.count("\n") == 1 and "gone\\x1b[2J\\x0a:\\:error:\\:x" in line
    assert_inert(line)


# -- the escaping functions over any string -----------------------------------------------------

ANY_TEXT = st.text(alphabet=st.characters(blacklist_categories=()), max_size=60) | st.sampled_from(
    ["::error::x", "  ::set-output", "##[group]", "=1+1", "\x1b[2J", "\u202e", "a\udcffb", "\\", ":::", "##[#[["])


@settings(max_examples=400, deadline=None)
@given(ANY_TEXT)
def test_escaped_text_has_no_control_character_and_no_runner_command(text):
    shown = escape_text(text)
    assert not any(_unsafe(c) for c in shown)
    assert "::" not in shown and "##[" not in shown
    shown.encode("utf-8")  # raises on a surrogate left
    if not any(_unsafe(c) or c in "\\:#" for c in text):
        assert shown == text


@settings(max_examples=400, deadline=None)
@given(ANY_TEXT | st.integers() | st.booleans() | st.none())
def test_a_csv_cell_is_never_a_formula_and_numbers_stay_numbers(value):
    cell = csv_cell(value)
    if isinstance(value, bool):
        assert cell == ("true" if value else "false")
    elif isinstance(value, int):
        assert cell == value
    else:
        assert isinstance(cell, str) and not cell.startswith(("=", "+", "-", "@", "\t", "\r"))
        assert not any(_unsafe(c) for c in cell)
        out = io.StringIO()
        csv.writer(out).writerow([cell])
        assert next(csv.reader(io.StringIO(out.getvalue())))[0] == cell


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(ANY_TEXT, ANY_TEXT, max_size=4), st.booleans())
def test_json_and_xml_documents_keep_their_values(data, ascii_only):
    text = json_text(json.dumps(data, ensure_ascii=ascii_only, indent=1))
    assert_inert(text)
    back = json.loads(text)
    def bytes_shown(s: str) -> str:
        return "".join(f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in s)
    if not any(0xD800 <= ord(c) <= 0xDFFF and not 0xDC80 <= ord(c) <= 0xDCFF for s in [*data, *data.values()] for c in s):
        assert back == {bytes_shown(k): bytes_shown(v) for k, v in data.items()}
    element = ElementTree.Element("case", name="x")
    element.text = "".join(c for c in "".join(data.values()) if c == "\n" or not _unsafe(c) and c not in "\ufffe\uffff") or "x"
    document = xml_text(ElementTree.tostring(element, encoding="unicode"))
    assert ElementTree.fromstring(document).text == element.text
    assert [line for line in document.splitlines() if line.lstrip().startswith("::")] == [] and "##[" not in document



@pytest.mark.parametrize("ensure_ascii", [True, False])
@pytest.mark.parametrize("value", ["a\x7fb", "x ##[group]y", "\u202eevil", "plain"])
def test_a_json_document_ascii_or_not_is_escaped_where_it_must_be(value, ensure_ascii):
    """json.dumps' default output is ASCII, and then only DEL and ``##[`` can need escaping: both
    are, as a bidi control is in a document that is not ASCII."""
    text = json_text(json.dumps({"k": value}, ensure_ascii=ensure_ascii))
    assert not {"\x7f", "\u202e"} & set(text) and "##[" not in text
    assert json.loads(text) == {"k": value}


def test_a_library_error_loses_the_option_values_and_uri_credentials():
    from kafka_audit.io.storage import StorageSettings

    settings = StorageSettings.of({"secret": "TOPSECRET-VALUE", "endpoint_url": "http://127.0.0.1:9"})
    line = settings.redact_secrets("at http://127.0.0.1:9 with TOPSECRET-VALUE for s3://KEY:SECRET@bucket/x")
    assert "TOPSECRET" not in repr(settings)
    assert line == "at http://127.0.0.1:9 with *** for s3://***@bucket/x"


def test_the_progress_line_shows_the_master_url_as_text():
    from rich.console import Console

    from kafka_audit.report.progress import PhaseDisplay

    screen = io.StringIO()
    with PhaseDisplay(Console(file=screen, force_terminal=True, width=150)) as display:
        display.starting_spark("spark://[bold red]host\x1b[2J:7077")
    shown = screen.getvalue()
    assert "spark://[bold red]host\\x1b[2J:7077" in shown and "\x1b[2J" not in shown
