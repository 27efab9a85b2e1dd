"""Headless Chromium for the HTML report's tests: open a file from disk with the network cut off
(every host name unresolvable, a proxy that goes nowhere, no background services), let its
scripts run for a bounded virtual time, and return the DOM, a screenshot and the network
requests the page itself made (from Chromium's net log; the browser's own background requests,
whose initiator is "not an origin", are left out)."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Debian's package installs /usr/bin/chromium (CI installs it with apt in .ci/run).
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# Wall-clock bound of one browser run; the page's scripts get VIRTUAL_TIME_MS of virtual time.
TIMEOUT_S = 90
VIRTUAL_TIME_MS = 10_000


def find_chromium() -> str | None:
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass(frozen=True, slots=True)
class PageRun:
    dom: str
    screenshot: Path | None
    page_requests: list[str]


def _flags(profile: Path) -> list[str]:
    return [
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-extensions",
        "--disable-default-apps", "--hide-scrollbars", f"--user-data-dir={profile}",
        "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
        f"--virtual-time-budget={VIRTUAL_TIME_MS}",
    ]


def _run(browser: str, args: list[str]) -> str:
    done = subprocess.run([browser, *args], capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise AssertionError(f"chromium exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def open_page(browser: str, page: Path, work: Path, window: str = "1400,2000", screenshot: bool = True) -> PageRun:
    """Load ``page`` twice (Chromium's headless mode dumps the DOM or takes a screenshot per run):
    the DOM after the scripts ran, with the net log of that load; then the screenshot (unless
    ``screenshot`` is False: ``PageRun.screenshot`` is then None)."""
    url = page.resolve().as_uri()
    net_log = work / "net-log.json"
    dom = _run(browser, [*_flags(work / "profile-dom"), f"--log-net-log={net_log}", "--dump-dom", url])
    if not screenshot:
        return PageRun(dom, None, page_requests(net_log))
    shot = work / (page.stem + ".png")
    _run(browser, [*_flags(work / "profile-shot"), f"--window-size={window}", f"--screenshot={shot}", url])
    if not shot.is_file():
        raise AssertionError(f"chromium wrote no screenshot at {shot}")
    return PageRun(dom, shot, page_requests(net_log))


def page_requests(net_log: Path) -> list[str]:
    """URLs of the requests a page started (not Chromium's own), from a ``--log-net-log`` file."""
    log = json.loads(net_log.read_text())
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [
        event["params"]["url"]
        for event in log["events"]
        if event["type"] == start_job and "url" in event.get("params", {})
        and event["params"].get("initiator") != "not an origin"
        and not event["params"]["url"].startswith(("file:", "data:", "blob:"))
    ]


def print_to_pdf(browser: str, page: Path, work: Path) -> Path:
    """Print ``page`` as Chromium prints it (its print stylesheet, no header or footer) to a PDF."""
    pdf = work / (page.stem + ".pdf")
    _run(browser, [*_flags(work / "profile-pdf"), "--no-pdf-header-footer", f"--print-to-pdf={pdf}",
                   page.resolve().as_uri()])
    if not pdf.is_file():
        raise AssertionError(f"chromium wrote no PDF at {pdf}")
    return pdf


def pdf_text(pdf: Path) -> str:
    """The text of a PDF as poppler's ``pdftotext`` reads it (Debian's poppler-utils)."""
    done = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise AssertionError(f"pdftotext exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout
