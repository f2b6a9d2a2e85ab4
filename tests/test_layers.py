"""The floors of the house, read from the code's own imports: what may import what.

- `spark_jobs` (the engine) imports neither Django nor the web app nor the worker: it runs on Spark's hosts;
- the web app never imports the worker's code: it sends tasks by name (`webapp.core.queue`);
- `worker.jobwrap` runs beside every job: no Django there either.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`

ROOT = Path(__file__).resolve().parents[1]


def imports(package: str) -> Iterator[tuple[str, str]]:
    """(file, imported module) for every import in `package` (any depth, functions included)."""
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield str(path.relative_to(ROOT)), alias.name
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                yield str(path.relative_to(ROOT)), node.module


def offenders(package: str, forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{where} imports {module}"
        for where, module in imports(package)
        if module.split(".")[0] in forbidden or module in forbidden
    ]


def test_the_engine_imports_no_django_no_web_app_and_no_worker():
    assert offenders("spark_jobs", ("django", "rest_framework", "webapp", "worker", "celery")) == []


def test_the_web_app_never_imports_the_worker():
    assert offenders("webapp", ("worker",)) == []


def test_the_job_wrapper_imports_no_django():
    found = [module for where, module in imports("worker") if where == "worker/jobwrap.py"]
    assert not [m for m in found if m.split(".")[0] in ("django", "webapp", "celery")]
