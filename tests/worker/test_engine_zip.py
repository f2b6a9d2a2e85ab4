"""What a cluster's executors receive (`--py-files`): every module the engine imports of its own packages."""

from __future__ import annotations

import ast
import zipfile
from pathlib import Path

import pytest

from worker import jobs

pytestmark = pytest.mark.fast


def _own_imports(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {name for name in names if name.split(".")[0] in jobs.ENGINE_PACKAGES}


def test_the_engine_zip_holds_every_module_the_engine_imports_of_its_own(tmp_path: Path):
    with zipfile.ZipFile(jobs.engine_zip(tmp_path)) as archive:
        files = set(archive.namelist())
        sources = {name: archive.read(name).decode() for name in files if name.startswith("spark_jobs/")}
    missing = set()
    for name, source in sources.items():
        for module in _own_imports(source):
            path = module.replace(".", "/")
            if f"{path}.py" not in files and f"{path}/__init__.py" not in files:
                missing.add(f"{module} (imported by {name})")
    assert sources and not missing, sorted(missing)
    assert "clearflow_spec/spec.py" in files  # the rules the sink checks values against
