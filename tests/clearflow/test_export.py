"""`clearflow export`: a pipeline made in the web app, as YAML with its connections and no secret; applied back it
is "unchanged", and a secret's variable, when set, is compared on the server (never shown)."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.webapp.conftest import orders_spec
from webapp.connections.models import ClickHouseConnection, KafkaConnection
from webapp.connections.services import clickhouse_connection_create, kafka_connection_create
from webapp.pipelines.models import PipelineVersion
from webapp.pipelines.services import pipeline_create

pytestmark = pytest.mark.django_db(transaction=True)

KAFKA_SECRET = "kafka-pa$$word"
CLICKHOUSE_SECRET = "ch-secret-123"


@pytest.fixture
def made_in_the_web_app(owner, topics, clickhouse_target, kafka_bootstrap, clickhouse_server):
    kafka = kafka_connection_create(
        owner=owner,
        data={
            "name": "prod kafka",
            "bootstrap_servers": kafka_bootstrap,
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_username": "etl",
            "sasl_password": KAFKA_SECRET,
        },
    )
    clickhouse = clickhouse_connection_create(
        owner=owner,
        data={
            "name": "analytics",
            "host": clickhouse_server.host,
            "port": clickhouse_server.port,
            "password": CLICKHOUSE_SECRET,
        },
    )
    spec = orders_spec(topics.orders, clickhouse_target.database)
    spec["filter"] = "amount > 0"
    spec["dedup"]["state_store"] = "memory"  # from a file of an earlier version: read, never written back
    spec["transforms"] = [{"name": "big", "expression": "amount > 100", "type": "bool"}]
    spec["sink"]["columns"].append({"field": "big", "column": "big", "type": "Bool"})
    connections = {"kafka_connection": kafka, "clickhouse_connection": clickhouse}
    return pipeline_create(owner=owner, name="orders", spec=spec, **connections)


def test_export_has_the_connections_by_name_and_secrets_as_references_only(cli, made_in_the_web_app):
    exported = cli("export", "orders")
    assert exported.returncode == 0, exported.stderr
    assert KAFKA_SECRET not in exported.stdout and CLICKHOUSE_SECRET not in exported.stdout
    assert "**********" not in exported.stdout
    kafka, clickhouse, pipeline = yaml.safe_load_all(exported.stdout)
    assert kafka == {
        "kind": "kafka-connection",
        "name": "prod kafka",
        "bootstrap_servers": cli.env["KAFKA_BOOTSTRAP_SERVERS"],
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_username": "etl",
        "sasl_password": "${PROD_KAFKA_SASL_PASSWORD}",
        "env": ["PROD_KAFKA_SASL_PASSWORD"],
    }
    assert clickhouse == {
        "kind": "clickhouse-connection",
        "name": "analytics",
        "host": cli.env["CLICKHOUSE_HOST"],
        "port": int(cli.env["CLICKHOUSE_PORT"]),
        "username": "default",
        "password": "${ANALYTICS_PASSWORD}",
        "database": "default",
        "secure": False,
        "verify": True,
        "env": ["ANALYTICS_PASSWORD"],
    }
    assert pipeline["kind"] == "pipeline" and pipeline["name"] == "orders"
    assert (pipeline["kafka_connection"], pipeline["clickhouse_connection"]) == ("prod kafka", "analytics")
    assert "kafka" not in pipeline["spec"]["source"]
    database = made_in_the_web_app.spec.sink.clickhouse.database
    assert pipeline["spec"]["sink"]["clickhouse"] == {"database": database}
    assert pipeline["spec"]["filter"] == "amount > 0"
    assert "state_store" not in pipeline["spec"]["dedup"]
    assert "#   ANALYTICS_PASSWORD: clickhouse-connection 'analytics', password" in exported.stdout

    as_json = cli("export", "orders", "--output", "json")
    assert json.loads(as_json.stdout) == [kafka, clickhouse, pipeline]
    only = cli("export", "orders", "--no-connections")
    assert [d["kind"] for d in yaml.safe_load_all(only.stdout)] == ["pipeline"]


def test_export_then_apply_is_unchanged_and_a_set_variable_is_compared_on_the_server(cli, made_in_the_web_app):
    cli.write("orders.yaml", cli("export", "orders").stdout)

    unchanged = cli("apply", "-f", "orders.yaml")
    assert unchanged.returncode == 0, unchanged.stderr
    assert unchanged.stdout.splitlines()[-1] == "Applied: 3 unchanged."
    assert "note: password: ${ANALYTICS_PASSWORD} is not set, so the saved password is kept" in unchanged.stdout

    same = {"ANALYTICS_PASSWORD": CLICKHOUSE_SECRET, "PROD_KAFKA_SASL_PASSWORD": KAFKA_SECRET}
    assert cli("apply", "-f", "orders.yaml", env=same).stdout.splitlines()[-1] == "Applied: 3 unchanged."

    rotated = {**same, "ANALYTICS_PASSWORD": "rotated-456"}
    diff = cli("diff", "-f", "orders.yaml", env=rotated)
    assert "clickhouse-connection 'analytics': will change\n    password: (secret changes)" in diff.stdout
    assert "rotated-456" not in diff.stdout and CLICKHOUSE_SECRET not in diff.stdout
    applied = cli("apply", "-f", "orders.yaml", env=rotated)
    assert applied.returncode == 0, applied.stderr
    assert "clickhouse-connection 'analytics': updated" in applied.stdout
    assert ClickHouseConnection.objects.get(name="analytics").password == "rotated-456"
    assert KafkaConnection.objects.get(name="prod kafka").sasl_password == KAFKA_SECRET
    assert PipelineVersion.objects.filter(pipeline=made_in_the_web_app).count() == 1


def test_export_of_an_unknown_pipeline_exits_4(cli, made_in_the_web_app, other):
    missing = cli("export", "nope")
    assert missing.returncode == 4
    assert missing.stderr == "error: no pipeline named 'nope' (see `clearflow get pipelines`)\n"
