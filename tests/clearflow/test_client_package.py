"""The client package on its own: the README's "Pipelines as code" section, run as written in a new virtualenv
without pyspark or Django (`pip install ./clients/python` builds the wheel and installs it), against the live
server, and what the wheel holds."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests.clearflow.conftest import REPO_ROOT, shell_env
from tests.clearflow.doc_examples import DocRun
from webapp.connections.services import clickhouse_connection_create, kafka_connection_create
from webapp.pipelines.services import pipeline_create

pytestmark = pytest.mark.django_db(transaction=True)


def rules_modules() -> set[str]:
    """The rules package's modules (clearflow_spec/): what the client needs to check files with the server's own
    model, none of which imports Spark or Django (tests/test_layers.py)."""
    return {path.name for path in (REPO_ROOT / "clearflow_spec").glob("*.py")}


def readme_section(title: str) -> str:
    text = (REPO_ROOT / "README.md").read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


@pytest.fixture
def signups_from_the_wizard(owner, kafka_bootstrap, clickhouse_server):
    kafka = kafka_connection_create(owner=owner, data={"name": "local-kafka", "bootstrap_servers": kafka_bootstrap})
    clickhouse = clickhouse_connection_create(
        owner=owner, data={"name": "local-clickhouse", "host": clickhouse_server.host, "port": clickhouse_server.port}
    )
    spec = {
        "source": {"topics": ["users"], "fields": [{"path": "event_id", "type": "uuid"}]},
        "dedup": {"keys": ["event_id"], "window": "1h"},
        "sink": {"table": "signups", "columns": [{"field": "event_id", "column": "event_id", "type": "UUID"}]},
    }
    connections = {"kafka_connection": kafka, "clickhouse_connection": clickhouse}
    return pipeline_create(owner=owner, name="signups", spec=spec, **connections)


def test_the_readme_section_runs_with_the_client_package_alone(server, token, tmp_path, signups_from_the_wizard):
    work = tmp_path / "work"
    work.mkdir()
    for name in ("clients", "clearflow", "clearflow_spec"):  # `./clients/python` as in a checkout, nothing else
        (work / name).symlink_to(REPO_ROOT / name)
    environment = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(environment)
    binaries = environment / "bin"
    env = shell_env(tmp_path, PATH=f"{binaries}{os.pathsep}{os.environ['PATH']}", VIRTUAL_ENV=str(environment))
    env.pop("PYTHONPATH", None)

    answers = [("ClearFlow URL", server), ("API token", token), ("Workspace", "")]  # the token's own workspace
    page = DocRun(cwd=work, env=env, terminal_answers=answers)
    page.run(readme_section("Pipelines as code"), source="README.md")

    commands = [command for command, _ in page.transcript]
    assert commands[0] == "pip install ./clients/python"
    assert (binaries / "clearflow").exists()
    python = str(binaries / "python")
    for heavy in ("pyspark", "django", "celery", "clickhouse_connect"):
        found = subprocess.run([python, "-c", f"import {heavy}"], capture_output=True, env=env, timeout=60)
        assert found.returncode != 0, f"{heavy} is installed with the client"
    installed = subprocess.run(
        [python, "-c", "import clearflow, clearflow_spec.spec; print(clearflow.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert installed.returncode == 0, installed.stderr
    assert installed.stdout.startswith(str(environment))  # the installed copy, not the checkout


def test_the_wheel_holds_the_sdk_and_the_rules_package(tmp_path):
    project = str(REPO_ROOT / "clients" / "python")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), project],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr
    [wheel] = tmp_path.glob("clearflow_client-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    modules = rules_modules()
    assert {"spec.py", "connections.py"} < modules
    assert {Path(n).name for n in names if n.startswith("clearflow_spec/")} == modules
    assert not [n for n in names if n.startswith("spark_jobs/")]  # the engine stays on the server
    assert "clearflow/cli.py" in names and "clearflow/client.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    requirements = {
        re.split(r"[<>=]", line.split(":", 1)[1].strip())[0]
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:")
    }
    assert requirements == {"requests", "pyyaml", "pydantic", "sqlglot"}


def test_the_client_imports_without_spark_or_django():
    # The modules the client uses refuse to import Spark and Django: a blocked import raises ImportError.
    code = (
        "import sys\n"
        "for name in ('pyspark', 'django', 'celery', 'clickhouse_connect', 'confluent_kafka', 'webapp', 'worker'):\n"
        "    sys.modules[name] = None\n"
        "import clearflow, clearflow.cli, clearflow.plan, clearflow.export\n"
        "from clearflow.documents import parse_documents\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=60)
    assert result.returncode == 0 and result.stdout == "ok\n", result.stderr
