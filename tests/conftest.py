"""Shared fixtures: the paths of the bundled fixtures and the real-broker corpus, and one
session-scoped ``local[2]`` SparkSession for every Spark test."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
CORPUS = REPO.parent / "shared" / "corpus" / "real"


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"real-broker corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from kafka_audit.spark_session import create_spark_session

    session = create_spark_session("local[2]", {"spark.default.parallelism": "2"}, str(tmp_path_factory.mktemp("spark")))
    yield session
    session.stop()
