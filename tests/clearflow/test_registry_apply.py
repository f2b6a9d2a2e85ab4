"""`clearflow apply`, `diff` and `export` with schema registry connections, against the real server, broker and
registry (Apicurio's Confluent-compatible API): an Avro pipeline and its registry made from files, "unchanged"
again, moved to another registry, refused when it names a registry that is nowhere, and exported back."""

from __future__ import annotations

import pytest
import yaml

from tests.specs import spec_dict
from tests.webapp.conftest import avro_topic  # noqa: F401 - the fixture
from webapp.connections.models import SchemaRegistryConnection
from webapp.connections.services import schema_registry_connection_create
from webapp.pipelines.models import Pipeline, PipelineVersion
from webapp.pipelines.services import pipeline_create

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
---
kind: schema-registry-connection
name: files-registry
url: {SCHEMA_REGISTRY_URL}
"""


def connections(cli) -> str:
    return CONNECTIONS.format_map(cli.env)


def avro_spec(topic: str, database: str) -> dict:
    return spec_dict(
        topics=[topic],
        format="avro",
        fields=[("order_id", "uuid"), ("qty", "int")],
        database=database,
        table="avro_orders",
        create_table=True,
        engine="ReplacingMergeTree",
        columns=[("order_id", "order_id", "UUID"), ("qty", "qty", "Int64")],
    )


def pipeline_yaml(spec: dict, *, registry: str | None = "files-registry") -> str:
    document = {
        "kind": "pipeline",
        "name": "avro-orders",
        "kafka_connection": "files-kafka",
        "clickhouse_connection": "files-clickhouse",
        "schema_registry_connection": registry,
        "spec": spec,
    }
    return yaml.safe_dump({k: v for k, v in document.items() if v is not None}, sort_keys=False)


@pytest.fixture
def registry_cli(cli, schema_registry_url):
    cli.env["SCHEMA_REGISTRY_URL"] = schema_registry_url
    return cli


@pytest.fixture
def spec(avro_topic, clickhouse_target):  # noqa: F811 - the fixture
    return avro_spec(avro_topic, clickhouse_target.database)


def test_apply_creates_the_registry_and_the_avro_pipeline_then_says_unchanged_then_moves_it(
    registry_cli, spec, schema_registry_url
):
    cli = registry_cli
    cli.write("pipelines/connections.yaml", connections(cli))
    cli.write("pipelines/orders.yaml", pipeline_yaml(spec))

    planned = cli("diff", "-f", "pipelines/")
    assert planned.returncode == 0, planned.stderr
    assert "schema-registry-connection 'files-registry': will be created" in planned.stdout.splitlines()
    created = cli("apply", "-f", "pipelines/")
    assert created.returncode == 0, created.stderr
    assert created.stdout.splitlines() == [
        "kafka-connection 'files-kafka': created",
        "clickhouse-connection 'files-clickhouse': created",
        "schema-registry-connection 'files-registry': created",
        "pipeline 'avro-orders': created (version 1)",
        "Applied: 4 created.",
    ]
    pipeline = Pipeline.objects.get(name="avro-orders")
    assert pipeline.schema_registry_connection.name == "files-registry"
    assert pipeline.schema_registry_connection.url == schema_registry_url
    assert pipeline.spec.source.schema_registry.url == schema_registry_url

    again = cli("apply", "-f", "pipelines/")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == "Applied: 4 unchanged."

    # Another registry, defined in the same files: the pipeline moves to it in a new version.
    second = f"---\nkind: schema-registry-connection\nname: second-registry\nurl: {schema_registry_url}\n"
    cli.write("pipelines/connections.yaml", connections(cli) + second)
    cli.write("pipelines/orders.yaml", pipeline_yaml(spec, registry="second-registry"))
    diff = cli("diff", "-f", "pipelines/")
    assert diff.returncode == 0, diff.stderr
    assert '    schema_registry_connection: "files-registry" -> "second-registry"' in diff.stdout.splitlines()
    moved = cli("apply", "-f", "pipelines/")
    assert moved.returncode == 0, moved.stderr
    assert "pipeline 'avro-orders': updated (version 2)" in moved.stdout.splitlines()
    pipeline.refresh_from_db()
    assert pipeline.schema_registry_connection.name == "second-registry"
    assert cli("apply", "-f", "pipelines/").stdout.splitlines()[-1] == "Applied: 5 unchanged."


def test_a_pipeline_naming_an_unknown_registry_is_refused_at_that_path_and_nothing_is_written(registry_cli, spec):
    cli = registry_cli
    cli.write("connections.yaml", connections(cli))
    cli.write("orders.yaml", pipeline_yaml(spec, registry="prod-registry"))
    refused = cli("apply", "-f", ".")
    assert refused.returncode == 1
    assert (
        "    schema_registry_connection: no schema registry connection named 'prod-registry': define it in these "
        "files (kind: schema-registry-connection) or create it first" in refused.stderr.splitlines()
    )
    assert not Pipeline.objects.exists() and not SchemaRegistryConnection.objects.exists()

    # Reading Avro from the Confluent wire format without naming a registry: the spec's own path says so.
    cli.write("orders.yaml", pipeline_yaml(spec, registry=None))
    refused = cli("apply", "-f", ".")
    assert refused.returncode == 1
    assert (
        "    spec.source.schema_registry: format avro needs a schema registry (Confluent wire format) or avro_schema "
        "(plain Avro)" in refused.stderr.splitlines()
    )
    assert not Pipeline.objects.exists()


def test_export_writes_the_registry_and_applied_back_is_unchanged(
    cli, owner, kafka_conn, ch_conn, schema_registry_url, spec
):
    registry = schema_registry_connection_create(owner=owner, data={"name": "apicurio", "url": schema_registry_url})
    connections = {"kafka_connection": kafka_conn, "clickhouse_connection": ch_conn}
    made = pipeline_create(
        owner=owner, name="avro-orders", spec=spec, schema_registry_connection=registry, **connections
    )

    exported = cli("export", "avro-orders")
    assert exported.returncode == 0, exported.stderr
    *connections_out, pipeline = yaml.safe_load_all(exported.stdout)
    assert connections_out[-1] == {
        "kind": "schema-registry-connection",
        "name": "apicurio",
        "url": schema_registry_url,
        "verify": True,
    }
    assert pipeline["schema_registry_connection"] == "apicurio"
    assert "schema_registry" not in pipeline["spec"]["source"]

    cli.write("orders.yaml", exported.stdout)
    unchanged = cli("apply", "-f", "orders.yaml")
    assert unchanged.returncode == 0, unchanged.stderr
    assert unchanged.stdout.splitlines()[-1] == "Applied: 4 unchanged."
    assert PipelineVersion.objects.filter(pipeline=made).count() == 1

    listed = cli("get", "connections")
    assert any(
        line.split()[:3] == ["schema-registry-connection", "apicurio", schema_registry_url]
        for line in listed.stdout.splitlines()
    ), listed.stdout
