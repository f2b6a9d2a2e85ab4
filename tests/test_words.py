"""Code, docs and tests speak of the product only: no words from how it was made (who asked for a change, in
which ticket). A fast check over the repository's text files."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`

ROOT = Path(__file__).resolve().parents[1]
WORDS = re.compile(r"\bthe issue\b|(?<!spec )\bissue's\b|\bissue #?\d+|(?<!user-)\bagents?\b", re.IGNORECASE)
FOLDERS = (
    "spark_jobs", "webapp", "worker", "clearflow", "clients", "localstack",
    "tests", "docs", "bench", "frontend", "nginx", "docker",
)  # fmt: skip
FILES = ("README.md", "Makefile", "Dockerfile", "docker-compose.yml", "pyproject.toml", ".ci/run")
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
