"""The read commands (text and --output json), status --watch in a terminal, login/logout, actions, and the SDK's
typed results and errors, against the live server."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest

from clearflow import Client, DocumentError, NotFoundError, PermissionDeniedError, RefusedError
from clearflow.models import Action
from tests.clearflow.terminal import run_in_terminal
from tests.webapp.conftest import orders_spec
from webapp.api.tokens import api_token_create
from webapp.pipelines.models import Pipeline
from webapp.pipelines.services import pipeline_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def orders(owner, kafka_conn, ch_conn, topics, clickhouse_target):
    spec = orders_spec(topics.orders, clickhouse_target.database)
    connections = {"kafka_connection": kafka_conn, "clickhouse_connection": ch_conn}
    return pipeline_create(owner=owner, name="orders", spec=spec, **connections)


def test_get_lists_pipelines_and_connections_as_text_and_json(cli, orders):
    text = cli("get", "pipelines")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == [
        "NAME    STATUS  VERSION  DEPLOYED  KAFKA        CLICKHOUSE",
        "orders  draft   1        -         local kafka  local clickhouse",
    ]
    as_json = json.loads(cli("get", "pipelines", "-o", "json").stdout)
    assert [(p["name"], p["status"], p["current_version"]) for p in as_json] == [("orders", "draft", 1)]
    assert json.loads(cli("-o", "json", "get", "pipelines").stdout) == as_json  # before or after the command

    connections = json.loads(cli("get", "connections", "--output", "json").stdout)
    assert [(c["kind"], c["name"]) for c in connections] == [
        ("kafka-connection", "local kafka"),
        ("clickhouse-connection", "local clickhouse"),
    ]
    assert "password" not in json.dumps(connections)


def test_status_logs_and_dead_letters_before_the_first_run(cli, orders):
    status = json.loads(cli("status", "orders", "-o", "json").stdout)
    assert status["name"] == "orders" and status["status"] == "draft"
    assert status["rows_per_second"] is None and status["dead_letters"] == 0
    text = cli("status", "orders").stdout.splitlines()
    assert text[0] == "orders  draft  (version 1)"
    assert "  last batch      none yet" in text

    assert json.loads(cli("logs", "orders", "-o", "json").stdout) == {"lines": []}
    assert cli("logs", "orders").stdout == "(no log yet)\n"

    page = json.loads(cli("dlq", "list", "orders", "-o", "json").stdout)
    assert page["count"] == 0 and page["table"].endswith(".orders_dlq")
    assert cli("dlq", "list", "orders").stdout.startswith("No dead letters:")


def test_status_watch_refreshes_in_place_until_ctrl_c(cli, orders):
    run = run_in_terminal(
        ["clearflow", "status", "orders", "--watch", "--interval", "0.3"],
        env=cli.env,
        cwd=str(cli.cwd),
        interrupt_when="last batch",
        interrupt_after=2.0,
    )
    assert run.returncode == 0, run.output
    refreshes = run.output.count("orders  draft  (version 1)")
    assert refreshes >= 3, run.output
    # Each refresh goes back to the block's first line and clears below: the block is redrawn, not appended.
    assert len(re.findall(r"\x1b\[\d+F\x1b\[J", run.output)) == refreshes - 1


def test_status_watch_with_json_prints_one_object_per_refresh(cli, orders):
    run = run_in_terminal(
        ["clearflow", "status", "orders", "--watch", "--interval", "0.3", "-o", "json"],
        env=cli.env,
        cwd=str(cli.cwd),
        interrupt_when='"name"',
        interrupt_after=1.5,
    )
    assert run.returncode == 0
    objects = [json.loads(line) for line in run.output.splitlines() if line.startswith("{")]
    assert len(objects) >= 2 and {o["status"] for o in objects} == {"draft"}


def test_login_checks_the_token_stores_it_0600_and_logout_forgets_it(cli, server, token):
    env = {k: v for k, v in cli.env.items() if not k.startswith("CLEARFLOW_")}
    run = run_in_terminal(
        ["clearflow", "login"],
        env=env,
        cwd=str(cli.cwd),
        answers=[
            ("ClearFlow URL [http://127.0.0.1:8000]: ", server),
            ("API token", token),
            ("Workspace [owner's workspace]: ", ""),
        ],
    )
    assert run.returncode == 0, run.output
    assert token not in run.output  # typed without echo
    config = Path(env["HOME"]) / ".config" / "clearflow" / "config.json"
    assert (
        f"Logged in to {server} as owner in workspace \"owner's workspace\" as admin (token 'cli tests', read and "
        f"write). Saved in {config}."
    ) in run.output
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert json.loads(config.read_text()) == {"url": server, "token": token}

    import subprocess

    listed = subprocess.run(["clearflow", "get", "pipelines"], env=env, capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and listed.stdout == "No pipelines.\n"
    out = subprocess.run(["clearflow", "logout"], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout == f"Logged out: removed {config}.\n" and not config.exists()


def test_login_refuses_a_workspace_the_token_does_not_act_in(cli, server, token):
    env = {k: v for k, v in cli.env.items() if not k.startswith("CLEARFLOW_")}
    refused = cli("login", "--url", server, "--workspace", "Data team", input=f"{token}\n", env=env)
    assert refused.returncode == 3
    assert "this token acts in workspace \"owner's workspace\" only, not 'Data team'" in refused.stderr
    assert not (Path(env["HOME"]) / ".config" / "clearflow" / "config.json").exists()
    accepted = cli("login", "--url", server, "--workspace", "owner's workspace", input=f"{token}\n", env=env)
    assert accepted.returncode == 0, accepted.stderr


def test_login_refuses_a_token_the_server_does_not_know_and_stores_nothing(cli, server):
    env = {k: v for k, v in cli.env.items() if not k.startswith("CLEARFLOW_")}
    refused = cli("login", "--url", server, input="wrong-token\n", env={**env, "CLEARFLOW_TOKEN": ""})
    assert refused.returncode == 3
    assert not (Path(env["HOME"]) / ".config" / "clearflow" / "config.json").exists()


def test_deploy_stop_delete_say_what_the_server_allows(cli, orders):
    stop = cli("stop", "orders")
    assert stop.returncode == 1
    assert stop.stderr == "error: A pipeline that is draft cannot be stopped.\n"
    deleted = cli("delete", "orders")
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout == "pipeline 'orders': deleted (its checkpoint is kept; rows in ClickHouse stay).\n"
    assert not Pipeline.objects.exists()
    assert cli("deploy", "orders").returncode == 4


def test_the_sdk_has_typed_results_and_errors_with_the_apis_paths(server, token, owner, orders, spec_env):
    client = Client(server, token, env=spec_env)
    [pipeline] = client.pipelines()
    assert pipeline.name == "orders" and pipeline.current_version == 1
    assert client.status("orders").status == "draft"
    assert client.me().token.read_only is False

    document = client.export("orders", connections=False)[0]
    plan = client.diff(documents=[document])
    assert [(d.kind, d.name, d.action) for d in plan.documents] == [("pipeline", "orders", Action.UNCHANGED)]

    document["spec"]["sink"]["columns"][0]["type"] = "Strng"
    with pytest.raises(DocumentError) as refused:
        client.apply(documents=[document])
    [problem] = refused.value.errors
    assert (problem.path, problem.where) == ("spec.sink.columns[0].type", "document 1 (pipeline 'orders')")
    assert problem.message.startswith("unknown ClickHouse type 'Strng'")

    with pytest.raises(NotFoundError):
        client.status("nope")
    with pytest.raises(RefusedError, match="cannot be stopped"):
        client.stop("orders")
    _, read_only = api_token_create(user=owner, name="ro", read_only=True)
    with pytest.raises(PermissionDeniedError):
        Client(server, read_only, env=spec_env).deploy("orders")


@pytest.fixture
def spec_env(kafka_bootstrap) -> dict[str, str]:
    return {"KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap}
