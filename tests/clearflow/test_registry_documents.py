"""Schema registry connection documents and pipelines that name one, without a server: basic auth's password from
the environment like every secret, TLS settings checked by the spec's model, the registry's section never written
in a pipeline's spec, and an Avro spec checked with the registry's section (same paths as the API)."""

from __future__ import annotations

import pytest

from clearflow import DocumentError
from clearflow.document_files import RawDocument
from clearflow.documents import SCHEMA_REGISTRY, parse_documents
from clearflow.export import connection_document, export_documents
from clearflow.spec_check import full_spec, spec_issues
from clearflow_spec.connections import ClickHouseConnectionSpec, KafkaConnectionSpec, SchemaRegistryConnectionSpec

pytestmark = pytest.mark.fast

REGISTRY = {"kind": "schema-registry-connection", "name": "registry", "url": "https://registry.example.com"}
AVRO_SPEC = {
    "source": {"topics": ["orders"], "format": "avro", "fields": [{"path": "order_id", "type": "uuid"}]},
    "dedup": {"keys": ["order_id"]},
    "sink": {"table": "orders", "columns": [{"field": "order_id", "column": "order_id", "type": "UUID"}]},
}
KAFKA = KafkaConnectionSpec(bootstrap_servers="broker:9092")
CLICKHOUSE = ClickHouseConnectionSpec(host="ch")


def avro_pipeline(**fields) -> dict:
    return {
        "kind": "pipeline",
        "name": "orders",
        "kafka_connection": "k",
        "clickhouse_connection": "c",
        "schema_registry_connection": "registry",
        "spec": AVRO_SPEC,
        **fields,
    }


def parse(*documents: dict, env: dict | None = None):
    return parse_documents([RawDocument(f"doc{i}", d) for i, d in enumerate(documents, 1)], env=env or {})


def problems(*documents: dict, env: dict | None = None) -> list[tuple[str, str]]:
    with pytest.raises(DocumentError) as refused:
        parse(*documents, env=env)
    return [(e.path, e.message) for e in refused.value.errors]


def test_a_registry_document_takes_url_basic_auth_from_the_environment_and_tls():
    document = {
        **REGISTRY,
        "url": "https://sr.internal:8081/",
        "username": "etl",
        "password": "${REGISTRY_PASSWORD}",
        "env": ["REGISTRY_PASSWORD"],
    }
    [connection] = parse({**document, "verify": False}, env={"REGISTRY_PASSWORD": "pw"}).connections
    assert connection.kind is SCHEMA_REGISTRY
    assert connection.body() == {
        "name": "registry",
        "url": "https://sr.internal:8081",  # as the server keeps it: no trailing slash
        "username": "etl",
        "verify": False,
        "ssl_ca_pem": "",
        "password": "pw",
    }
    [kept] = parse(document, env={}).connections
    assert "password" not in kept.body()
    assert kept.notes == ["password: ${REGISTRY_PASSWORD} is not set, so the saved password is kept"]


def test_bad_registry_settings_are_errors_with_their_field():
    assert problems({**REGISTRY, "url": "registry:8081"}) == [
        ("url", "invalid registry URL 'registry:8081': expected http(s)://host[:port][/path]")
    ]
    assert problems({**REGISTRY, "username": "etl"}) == [("", "username and password go together (basic auth)")]
    assert problems({**REGISTRY, "url": "http://r", "ssl_ca_pem": "x"}) == [("", "ssl_ca_pem needs an https:// URL")]
    assert problems({**REGISTRY, "subject": "x"}) == [("subject", "Extra inputs are not permitted")]


def test_a_pipeline_names_its_registry_and_never_holds_its_settings():
    docs = parse(REGISTRY, avro_pipeline())
    [pipeline] = docs.pipelines
    assert pipeline.schema_registry_connection == "registry"
    assert [kind.kind for kind in pipeline.connection_kinds()] == [
        "kafka-connection",
        "clickhouse-connection",
        "schema-registry-connection",
    ]
    assert [
        kind.kind for kind in parse(avro_pipeline(schema_registry_connection=None)).pipelines[0].connection_kinds()
    ] == [
        "kafka-connection",
        "clickhouse-connection",
    ]
    spec = {**AVRO_SPEC, "source": {**AVRO_SPEC["source"], "schema_registry": {"url": "http://r"}}}
    assert problems(avro_pipeline(spec=spec, schema_registry_connection="")) == [
        ("schema_registry_connection", "a schema registry connection's name"),
        ("spec.source.schema_registry", "comes from the connection named in schema_registry_connection: leave it out"),
    ]


def test_an_avro_spec_is_checked_with_the_registry_section_and_without_it_names_the_path():
    [pipeline] = parse(avro_pipeline()).pipelines
    registry = SchemaRegistryConnectionSpec(url="https://registry.example.com")
    assert spec_issues(pipeline, kafka=KAFKA, clickhouse=CLICKHOUSE, schema_registry=registry) == []
    spec = full_spec(pipeline, kafka=KAFKA, clickhouse=CLICKHOUSE, schema_registry=registry)
    assert spec["source"]["schema_registry"]["url"] == "https://registry.example.com"
    [missing] = spec_issues(pipeline, kafka=KAFKA, clickhouse=CLICKHOUSE)
    assert (missing.path, missing.message) == (
        "spec.source.schema_registry",
        "format avro needs a schema registry (Confluent wire format) or avro_schema (plain Avro)",
    )


def test_an_export_writes_the_registry_document_and_names_it_in_the_pipeline():
    saved_registry = {
        "id": 3,
        "name": "prod registry",
        "url": "https://registry.example.com",
        "username": "etl",
        "has_password": True,
        "verify": True,
        "ssl_ca_pem": "",
    }
    assert connection_document(SCHEMA_REGISTRY, saved_registry) == {
        "kind": "schema-registry-connection",
        "name": "prod registry",
        "url": "https://registry.example.com",
        "username": "etl",
        "password": "${PROD_REGISTRY_PASSWORD}",
        "verify": True,
        "env": ["PROD_REGISTRY_PASSWORD"],
    }
    stored = {**AVRO_SPEC, "source": {**AVRO_SPEC["source"], "schema_registry": {"url": "https://x"}}}
    documents = export_documents(
        {"name": "orders", "spec": stored},
        kafka={"name": "k", "bootstrap_servers": "b:9092"},
        clickhouse={"name": "c", "host": "ch"},
        schema_registry=saved_registry,
    )
    assert [d["kind"] for d in documents] == [
        "kafka-connection",
        "clickhouse-connection",
        "schema-registry-connection",
        "pipeline",
    ]
    pipeline = documents[-1]
    assert pipeline["schema_registry_connection"] == "prod registry"
    assert "schema_registry" not in pipeline["spec"]["source"]
