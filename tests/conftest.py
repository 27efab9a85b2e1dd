"""Shared fixtures: the paths of the bundled fixtures and the real-broker corpus, one
session-scoped ``local[2]`` SparkSession for every Spark test, and one Spark Connect session on a
local Connect server for the tests that run on both session kinds."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
from tests.support.audit_run import SHARED, THIRD_PARTY_CORPUS, THIRD_PARTY_SKIP  # noqa: E402

CORPUS = SHARED / "corpus" / THIRD_PARTY_CORPUS


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(THIRD_PARTY_SKIP)
    return CORPUS


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from kafka_audit.engines.spark_session import create_spark_session

    session = create_spark_session("local[2]", {"spark.default.parallelism": "2"}, str(tmp_path_factory.mktemp("spark")))
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect_url(tmp_path_factory):
    """The URL of a local Spark Connect server (``local[2]``) with Spark's default settings, as a
    managed endpoint has them (no ``spark.default.parallelism``), started once for the session."""
    from tests.support.connect_server import connect_server

    with connect_server(tmp_path_factory.mktemp("connect")) as url:
        yield url


@pytest.fixture(scope="session")
def configured_connect_url(tmp_path_factory):
    """A second local server (``local[2]``) started with ``spark.default.parallelism=3``, for the
    few tests that check a configured server's setting is used."""
    from tests.support.connect_server import connect_server

    with connect_server(tmp_path_factory.mktemp("connect-configured"), conf={"spark.default.parallelism": "3"}) as url:
        yield url


@pytest.fixture(scope="session")
def connect(connect_url):
    """A Spark Connect session on the local server."""
    from kafka_audit.engines.spark_session import create_connect_session

    session = create_connect_session(connect_url)
    yield session
    session.stop()


@pytest.fixture(params=["classic", "connect"])
def any_spark(request):
    """Each Spark test that takes this runs on a classic session and on Spark Connect."""
    return request.getfixturevalue("spark" if request.param == "classic" else "connect")


def pytest_collection_modifyitems(items):
    """Tests on Spark Connect run last: once a Connect session exists, pyspark treats the whole
    process as a Connect client (``SPARK_CONNECT_MODE_ENABLED``), and a classic session's
    DataFrame calls would take the Connect code paths."""

    servers = {"connect", "connect_url", "configured_connect_url"}

    def on_connect(item) -> bool:
        # A Connect fixture named in the signature, or as a parameter's value that the test asks
        # for with request.getfixturevalue.
        params = getattr(getattr(item, "callspec", None), "params", {})
        named = {value for value in params.values() if isinstance(value, str)}
        return params.get("any_spark") == "connect" or bool(servers & (set(item.fixturenames) | named))

    items[:] = [i for i in items if not on_connect(i)] + [i for i in items if on_connect(i)]


def pytest_terminal_summary(terminalreporter):
    """Say once, at the end, which tests did not run for want of the third-party corpus (never
    bundled: ../shared/corpus/real) or of a tool pip cannot install; each skip's own reason names it."""
    skipped = terminalreporter.stats.get("skipped", [])
    reasons: dict[str, int] = {}
    for report in skipped:
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    if reasons:
        terminalreporter.write_sep("-", "tests that did not run")
        for reason, count in sorted(reasons.items(), key=lambda item: -item[1]):
            terminalreporter.write_line(f"{count:5d}  {reason}")
