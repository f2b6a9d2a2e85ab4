"""Code, docs and tests speak of the product only: no words from how it was made (who asked for a change, in
which ticket). A fast check over the repository's text files."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`

ROOT = Path(__file__).resolve().parents[1]
# A work session counted ("the fourteenth session", "2nd session") is how it was made; "and session", "with
# session(" and "test session" are not ordinals.
ORDINAL_SESSION = r"\b(?!(?:and|with|both|test|fast)\b)\w+(?:st|nd|rd|th) session\b"
WORDS = re.compile(
    rf"\bthe issue\b|(?<!spec )\bissue's\b|\bissue #?\d+|(?<!user-)\bagents?\b|{ORDINAL_SESSION}", re.IGNORECASE
)
FOLDERS = (
    "spark_jobs", "webapp", "worker", "clearflow", "clients", "localstack",
    "tests", "docs", "bench", "frontend", "nginx", "docker",
)  # fmt: skip
FILES = (
    "README.md", "Makefile", "Dockerfile", "docker-compose.yml", "pyproject.toml",
    ".ci/run", ".ci/timed", ".ci/service-tiers",
)  # fmt: skip
SUFFIXES = {".py", ".md", ".html", ".js", ".css", ".sh", ".toml", ".yml", ".yaml", ".conf", ".json", ".txt"}


def text_files() -> Iterator[Path]:
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in SUFFIXES and "vendor" not in path.parts and "__pycache__" not in path.parts:
                yield path
    for name in FILES:
        if (ROOT / name).exists():
            yield ROOT / name


def test_no_words_from_the_making_of_the_product():
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in text_files()
        if path != Path(__file__).resolve()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if WORDS.search(line)
    ]
    assert found == []


@pytest.mark.parametrize(
    ("line", "caught"),
    [
        ("75 minutes at 20,000 events/s (2026-11-29, fourteenth session, main 93b3b2e)", True),
        ("the 2nd session's run", True),
        ("a JVM and session up for the next deploy", False),
        ("with session(settings) as ch:", False),
        ("one local SparkSession per test session", False),
    ],
)
def test_a_counted_work_session_is_caught(line, caught):
    assert bool(WORDS.search(line)) is caught
