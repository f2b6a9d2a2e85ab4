"""`clearflow apply` and `diff` against the real server: create, "unchanged", a new version when the spec differs,
connections in the same files, and every refusal with its words, its exit code, and nothing written."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from tests.webapp.conftest import orders_spec
from webapp.api.tokens import api_token_create
from webapp.connections.models import ClickHouseConnection, KafkaConnection
from webapp.pipelines.models import Pipeline, PipelineVersion

pytestmark = pytest.mark.django_db(transaction=True)

# Connections to the test's servers: a connection document reads the environment in its secrets only.
CONNECTIONS = """\
kind: kafka-connection
name: files-kafka
bootstrap_servers: {KAFKA_BOOTSTRAP_SERVERS}
---
kind: clickhouse-connection
name: files-clickhouse
host: {CLICKHOUSE_HOST}
port: {CLICKHOUSE_PORT}
"""


def connections(cli) -> str:
    return CONNECTIONS.format_map(cli.env)


def pipeline_yaml(spec: dict, *, name: str = "orders", kafka: str = "files-kafka") -> str:
    document = {
        "kind": "pipeline",
        "name": name,
        "kafka_connection": kafka,
        "clickhouse_connection": "files-clickhouse",
        "spec": spec,
    }
    return yaml.safe_dump(document, sort_keys=False)


@pytest.fixture
def spec(topics, clickhouse_target):
    return orders_spec(topics.orders, clickhouse_target.database)


def nothing_saved() -> bool:
    return not (Pipeline.objects.exists() or KafkaConnection.objects.exists() or ClickHouseConnection.objects.exists())


def test_apply_creates_then_says_unchanged_then_makes_a_new_version(cli, spec):
    cli.write("pipelines/connections.yaml", connections(cli))
    cli.write("pipelines/orders.yaml", pipeline_yaml(spec))

    created = cli("apply", "-f", "pipelines/")
    assert created.returncode == 0, created.stderr
    assert created.stdout.splitlines() == [
        "kafka-connection 'files-kafka': created",
        "clickhouse-connection 'files-clickhouse': created",
        "pipeline 'orders': created (version 1)",
        "Applied: 3 created.",
    ]
    pipeline = Pipeline.objects.get(name="orders")
    assert pipeline.kafka_connection.name == "files-kafka" and pipeline.current_version.number == 1
    assert pipeline.spec.dedup.window == "1h"

    again = cli("apply", "-f", "pipelines/")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == "Applied: 3 unchanged."
    assert PipelineVersion.objects.filter(pipeline=pipeline).count() == 1

    changed = copy.deepcopy(spec)
    changed["dedup"]["window"] = "2h"
    cli.write("pipelines/orders.yaml", pipeline_yaml(changed))
    diff = cli("diff", "-f", "pipelines/")
    assert diff.returncode == 0, diff.stderr
    assert "pipeline 'orders': will change (version 1 -> 2)" in diff.stdout
    assert '    spec.dedup.window: "1h" -> "2h"' in diff.stdout
    assert PipelineVersion.objects.filter(pipeline=pipeline).count() == 1  # a diff writes nothing

    updated = cli("apply", "-f", "pipelines/")
    assert updated.returncode == 0, updated.stderr
    assert "pipeline 'orders': updated (version 2)" in updated.stdout
    pipeline.refresh_from_db()
    assert pipeline.current_version.number == 2 and pipeline.spec.dedup.window == "2h"
    assert pipeline.current_version.note == "clearflow apply"


def test_apply_reads_json_and_standard_input(cli, spec):
    cli.write("connections.yaml", connections(cli))
    document = yaml.safe_load(pipeline_yaml(spec))
    cli.write("orders.json", json.dumps(document))
    assert cli("apply", "-f", "connections.yaml", "-f", "orders.json").returncode == 0
    from_stdin = cli("apply", "-f", "-", input=pipeline_yaml(spec))
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert from_stdin.stdout.splitlines() == ["pipeline 'orders': unchanged", "Applied: 1 unchanged."]


def test_a_refused_spec_exits_1_with_the_apis_paths_and_messages_and_nothing_is_written(cli, spec, api, owner):
    spec["sink"]["columns"][1]["type"] = "Int65"
    spec["dedup"]["window"] = "9d"
    cli.write("connections.yaml", connections(cli))
    cli.write("orders.yaml", pipeline_yaml(spec))

    refused = cli("apply", "-f", ".")
    assert refused.returncode == 1
    assert refused.stdout == ""
    lines = refused.stderr.splitlines()
    assert lines[0] == "error: 2 problems in the files; nothing was applied."
    assert lines[1] == "  orders.yaml (pipeline 'orders'):"
    client_errors = [line.strip() for line in lines[2:]]
    assert nothing_saved()

    # The API says the same, with the same paths, for the same spec.
    from webapp.connections.services import clickhouse_connection_create, kafka_connection_create

    bootstrap = cli.env["KAFKA_BOOTSTRAP_SERVERS"]
    kafka = kafka_connection_create(owner=owner, data={"name": "k", "bootstrap_servers": bootstrap})
    clickhouse = clickhouse_connection_create(owner=owner, data={"name": "c", "host": cli.env["CLICKHOUSE_HOST"]})
    body = {"name": "orders", "kafka_connection": kafka.pk, "clickhouse_connection": clickhouse.pk, "spec": spec}
    answer = api.post("/api/v1/pipelines/", body, format="json").json()
    assert client_errors == [f"{e['path']}: {e['message']}" for e in answer["errors"]]
    assert set(client_errors) == {
        "spec.dedup.window: window '9d' is longer than the maximum of 7d",
        "spec.sink.columns[1].type: unknown ClickHouse type 'Int65'",
    }


def test_an_unknown_connection_name_is_refused_before_anything_is_written(cli, spec):
    cli.write("connections.yaml", connections(cli))
    cli.write("orders.yaml", pipeline_yaml(spec, kafka="prod-kafka"))
    refused = cli("apply", "-f", ".")
    assert refused.returncode == 1
    assert (
        "    kafka_connection: no Kafka connection named 'prod-kafka': define it in these files "
        "(kind: kafka-connection) or create it first" in refused.stderr.splitlines()
    )
    assert nothing_saved()


def test_two_pipelines_of_one_name_are_refused(cli, spec):
    cli.write("connections.yaml", connections(cli))
    cli.write("a.yaml", pipeline_yaml(spec))
    cli.write("b.yaml", pipeline_yaml(spec))
    refused = cli("apply", "-f", ".")
    assert refused.returncode == 1
    assert "    name: pipeline 'orders' is defined twice: also in a.yaml (pipeline 'orders')" in refused.stderr
    assert nothing_saved()


def test_a_connection_repeated_as_it_is_is_fine_but_two_different_ones_are_not(cli, spec):
    cli.write("one/connections.yaml", connections(cli))
    cli.write("one/again.yaml", connections(cli))
    cli.write("one/orders.yaml", pipeline_yaml(spec))
    assert cli("apply", "-f", "one").returncode == 0
    cli.write("two/connections.yaml", connections(cli))
    cli.write("two/other.yaml", connections(cli).replace(f"port: {cli.env['CLICKHOUSE_PORT']}", "port: 9999"))
    refused = cli("diff", "-f", "two")
    assert refused.returncode == 1
    assert "clickhouse-connection 'files-clickhouse' is defined differently in two/connections.yaml" in refused.stderr


def test_a_read_only_token_is_refused_with_exit_3_and_nothing_is_written(cli, spec, owner):
    _, read_only = api_token_create(user=owner, name="dashboards", read_only=True)
    cli.write("connections.yaml", connections(cli))
    cli.write("orders.yaml", pipeline_yaml(spec))
    diff = cli("diff", "-f", ".", env={"CLEARFLOW_TOKEN": read_only})
    assert diff.returncode == 0, diff.stderr  # reading and comparing is allowed
    refused = cli("apply", "-f", ".", env={"CLEARFLOW_TOKEN": read_only})
    assert refused.returncode == 3
    assert refused.stderr.startswith("error: This API token is read-only: it cannot change anything.")
    assert "Nothing was applied." in refused.stderr
    assert nothing_saved()


def test_an_unknown_token_is_exit_3_and_an_unreachable_server_exit_5(cli):
    from localstack.processes import free_port

    cli.write("connections.yaml", connections(cli))
    unknown = cli("get", "pipelines", env={"CLEARFLOW_TOKEN": "not-a-token"})
    assert unknown.returncode == 3
    assert "The token is unknown, revoked or expired" in unknown.stderr

    url = f"http://127.0.0.1:{free_port()}"
    for args in (("get", "pipelines"), ("apply", "-f", "connections.yaml")):
        down = cli(*args, env={"CLEARFLOW_URL": url})
        assert down.returncode == 5, down.stderr
        assert down.stderr.startswith(f"error: cannot reach ClearFlow at {url} (Connection refused).")
    assert nothing_saved()


def test_no_configuration_says_how_to_give_one(cli):
    env = {k: v for k, v in cli.env.items() if not k.startswith("CLEARFLOW_")}
    import subprocess

    answer = subprocess.run(["clearflow", "get", "pipelines"], env=env, capture_output=True, text=True, timeout=60)
    assert answer.returncode == 3
    assert "run `clearflow login`, or set CLEARFLOW_URL and CLEARFLOW_TOKEN" in answer.stderr


def test_a_file_that_is_not_yaml_names_the_line(cli):
    cli.write("broken.yaml", "kind: pipeline\nname: [unclosed\n")
    refused = cli("apply", "-f", "broken.yaml")
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: broken.yaml is not valid YAML")
    assert "line 3, column 1" in refused.stderr
