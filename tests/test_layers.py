"""The floors of the house, read from the code's own imports: what may import what.

- `clearflow_spec` (the rules) imports no Spark, no engine, no Django, no web app and no worker: everything
  stands on it, the client wheel included;
- `spark_jobs` (the engine) imports neither Django nor the web app nor the worker: it runs on Spark's hosts;
- the web app and the CLI import no Spark: of the engine, only modules that import no pyspark when loaded;
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


SPARK = ("pyspark", "py4j")


def loads_spark(module: str) -> bool:
    """Whether importing `module` (a spark_jobs module) imports pyspark at once (at its top level)."""
    path = ROOT / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = ROOT / module.replace(".", "/") / "__init__.py"
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in tree.body:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        if any(name.split(".")[0] in SPARK for name in names):
            return True
    return False


def test_the_rules_import_no_spark_no_engine_and_no_django():
    forbidden = (*SPARK, "spark_jobs", "django", "rest_framework", "webapp", "worker", "celery", "clearflow")
    assert offenders("clearflow_spec", forbidden) == []


@pytest.mark.parametrize("package", ["webapp", "clearflow"])
def test_the_web_app_and_the_cli_import_no_spark(package):
    assert offenders(package, SPARK) == []
    engine = sorted({module for _, module in imports(package) if module.split(".")[0] == "spark_jobs"})
    assert [module for module in engine if loads_spark(module)] == []


def test_the_cli_stands_on_the_rules_alone():
    assert offenders("clearflow", ("spark_jobs", "django", "rest_framework", "webapp", "worker", "celery")) == []


def test_the_engine_imports_no_django_no_web_app_and_no_worker():
    assert offenders("spark_jobs", ("django", "rest_framework", "webapp", "worker", "celery")) == []


def test_the_web_app_never_imports_the_worker():
    assert offenders("webapp", ("worker",)) == []


def test_the_job_wrapper_imports_no_django():
    found = [module for where, module in imports("worker") if where == "worker/jobwrap.py"]
    assert not [m for m in found if m.split(".")[0] in ("django", "webapp", "celery")]
