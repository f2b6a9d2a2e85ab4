"""Schema registry connections and Avro topics over the REST API, against the real registry (Apicurio's
Confluent-compatible API), the real broker and ClickHouse. Records are written by confluent-kafka's own
AvroSerializer (magic byte 0, the schema id, the Avro body)."""

from __future__ import annotations

import json
import uuid

import pytest

from localstack.processes import free_port
from tests.specs import spec_dict
from tests.webapp.conftest import raw_column
from tests.webapp.heavy import answered
from webapp.connections.models import SchemaRegistryConnection
from webapp.pipelines.models import Pipeline

REGISTRY = "/api/v1/connections/schema-registry/"
KAFKA = "/api/v1/connections/kafka/"
PIPELINES = "/api/v1/pipelines/"
SECRET = "registry-secret-pw-7"


@pytest.fixture
def registry_conn(api, schema_registry_url) -> dict:
    response = api.post(REGISTRY, {"name": "local registry", "url": schema_registry_url}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def test_registry_connection_crud_and_test(api, schema_registry_url, avro_topic):
    created = api.post(REGISTRY, {"name": "apicurio", "url": schema_registry_url + "/"}, format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    pk = body["id"]
    assert body["url"] == schema_registry_url  # the spec's form: no trailing slash
    assert body["has_password"] is False and body["verify"] is True
    assert [c["name"] for c in api.get(REGISTRY).json()] == ["apicurio"]

    tested = api.post(f"{REGISTRY}{pk}/test/")
    assert tested.status_code == 200, tested.json()
    assert tested.json()["ok"] is True
    assert f"{avro_topic}-value" in tested.json()["subjects"] or tested.json()["subject_count"] > 20

    assert api.patch(f"{REGISTRY}{pk}/", {"name": "renamed"}, format="json").json()["name"] == "renamed"
    assert api.delete(f"{REGISTRY}{pk}/").status_code == 204
    assert api.get(f"{REGISTRY}{pk}/").status_code == 404


def test_password_is_write_only_and_encrypted(api):
    response = api.post(
        REGISTRY,
        {"name": "secured", "url": "https://registry.example.com", "username": "alice", "password": SECRET},
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert SECRET not in response.content.decode()
    assert response.json()["has_password"] is True
    pk = response.json()["id"]
    for body in (api.get(f"{REGISTRY}{pk}/").content, api.get(REGISTRY).content):
        assert SECRET.encode() not in body
    assert SECRET not in raw_column(SchemaRegistryConnection._meta.db_table, "password", pk)
    api.patch(f"{REGISTRY}{pk}/", {"username": "bob"}, format="json")
    assert SchemaRegistryConnection.objects.get(pk=pk).password == SECRET  # kept when not sent


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "ftp://registry.example.com"}, "url"),
        ({"url": "https://registry.example.com", "username": "alice"}, "password"),
        ({"url": "http://registry.example.com", "ssl_ca_pem": "x"}, "ssl_ca_pem"),
        ({"url": "https://registry.example.com", "ssl_ca_pem": "not a certificate"}, "ssl_ca_pem"),
    ],
)
def test_bad_settings_name_the_field(api, body, field):
    response = api.post(REGISTRY, {"name": "bad", **body}, format="json")
    assert response.status_code == 400
    assert field in json.dumps(response.json()), response.json()
    assert not SchemaRegistryConnection.objects.exists()


def test_unreachable_registry_is_502_in_plain_words(api):
    url = f"http://127.0.0.1:{free_port()}/apis/ccompat/v7"
    response = api.post(f"{REGISTRY}test/", {"name": "nowhere", "url": url}, format="json")
    assert response.status_code == 502
    assert "could not reach the schema registry" in response.json()["message"].lower()
    assert url in response.json()["message"]
    assert not SchemaRegistryConnection.objects.exists()  # testing unsaved settings saves nothing


def test_other_users_registry_connections_are_404(api, other_api, registry_conn, kafka_conn, avro_topic):
    pk = registry_conn["id"]
    assert other_api.get(f"{REGISTRY}{pk}/").status_code == 404
    assert other_api.post(f"{REGISTRY}{pk}/test/").status_code == 404
    assert other_api.delete(f"{REGISTRY}{pk}/").status_code == 404
    # Nor can another user decode with it through their own Kafka connection.
    other_kafka = other_api.post(KAFKA, {"name": "k", "bootstrap_servers": kafka_conn.bootstrap_servers}, format="json")
    sample = answered(
        other_api,
        other_api.post(
            f"{KAFKA}{other_kafka.json()['id']}/sample/",
            {"topics": [avro_topic], "schema_registry_connection": pk},
            format="json",
        ),
    )
    assert sample.status_code == 404
    assert SchemaRegistryConnection.objects.filter(pk=pk).exists()


def test_avro_sample_is_decoded_with_the_registered_schemas(api, kafka_conn, registry_conn, avro_topic):
    response = answered(
        api,
        api.post(
            f"{KAFKA}{kafka_conn.pk}/sample/",
            {
                "topics": [avro_topic],
                "count": 10,
                "position": "oldest",
                "schema_registry_connection": registry_conn["id"],
            },
            format="json",
        ),
    )
    assert response.status_code == 200, response.json()
    events = response.json()
    assert len(events) == 6
    first = events[0]
    assert first["decode_error"] is None and first["is_json"] is True
    assert first["value"]["order_id"] == str(uuid.UUID(int=9000, version=4))
    assert first["value"]["price"] == "12.50"
    assert first["value"]["paid_at"] == "2026-11-01T12:00:00Z"
    assert first["value"]["customer"] == {"id": 100, "name": "Customer 0"}
    assert events[4]["value"]["coupon"] == "XMAS"
    assert len({e["schema_id"] for e in events[:5]}) == 2
    assert events[5]["decode_error"].startswith("not in the Confluent wire format")


def test_infer_schema_from_the_avro_schema(api, kafka_conn, registry_conn, avro_topic):
    response = answered(
        api,
        api.post(
            f"{KAFKA}{kafka_conn.pk}/infer-schema/",
            {"topics": [avro_topic], "count": 10, "schema_registry_connection": registry_conn["id"]},
            format="json",
        ),
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    fields = {f["path"]: f for f in body["fields"]}
    # The newest version the sample used (2) gives the fields, in the schema's order.
    assert list(fields) == [
        "order_id",
        "qty",
        "price",
        "paid_at",
        "day",
        "status",
        "tags",
        "note",
        "customer.id",
        "customer.name",
        "coupon",
    ]
    types = {path: (f["type"], f["nullable"], f["clickhouse_type"]) for path, f in fields.items()}
    assert types["order_id"] == ("uuid", False, "UUID")
    assert types["qty"] == ("int", False, "Int64")
    assert types["price"] == ("string", False, "Decimal(10, 2)")
    assert types["paid_at"] == ("datetime", False, "DateTime64(3, 'UTC')")
    assert types["day"] == ("datetime", False, "Date")
    assert types["status"][0] == "string"
    assert types["tags"][0] == "array<string>"
    assert types["note"] == ("string", True, "Nullable(String)")
    assert types["customer.id"] == ("int", False, "Int32")
    assert types["coupon"] == ("string", True, "Nullable(String)")
    assert fields["customer.name"]["examples"][:1] == ["Customer 0"]
    assert fields["coupon"]["present"] == 2
    # Which subject versions the sample used, and how many events could not be decoded.
    versions = body["schema_versions"]
    assert [(v["subject"], v["version"], v["events"]) for v in versions] == [
        (f"{avro_topic}-value", 1, 3),
        (f"{avro_topic}-value", 2, 2),
    ]
    assert body["undecodable"] == 1


def _avro_pipeline_spec(topic: str, database: str, fields: list[dict]) -> dict:
    return spec_dict(
        topics=[topic],
        format="avro",
        fields=[(field["path"], field["type"]) for field in fields],
        dedup="order_id",
        database=database,
        table=f"avro_{uuid.uuid4().hex[:6]}",
        create_table=True,
        engine="ReplacingMergeTree",
        columns=[("order_id", "order_id", "UUID"), ("qty", "qty", "Int64")],
    )


def test_pipeline_create_with_avro_and_a_registry_connection(
    api, kafka_conn, ch_conn, registry_conn, avro_topic, clickhouse_target
):
    fields = [{"path": "order_id", "type": "uuid"}, {"path": "qty", "type": "int"}]
    spec = _avro_pipeline_spec(avro_topic, clickhouse_target.database, fields)
    created = api.post(
        PIPELINES,
        {
            "name": "avro-orders",
            "kafka_connection": kafka_conn.pk,
            "clickhouse_connection": ch_conn.pk,
            "schema_registry_connection": registry_conn["id"],
            "spec": spec,
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["schema_registry_connection"] == registry_conn["id"]
    assert body["spec"]["source"]["format"] == "avro"
    assert body["spec"]["source"]["schema_registry"]["url"] == registry_conn["url"]
    pipeline = Pipeline.objects.get(pk=body["id"])
    assert pipeline.schema_registry_connection_id == registry_conn["id"]

    # Checked live: the fields are in the subject's versions and the newest events decode and fit.
    checked = answered(api, api.post(f"{PIPELINES}{pipeline.pk}/validate/", {"check_live": True}, format="json"))
    assert checked.status_code == 200, checked.json()
    assert checked.json()["valid"] is True

    # The connection a pipeline uses cannot be deleted.
    refused = api.delete(f"{REGISTRY}{registry_conn['id']}/")
    assert refused.status_code == 409
    assert "avro-orders" in refused.json()["message"]


def test_a_field_the_schema_lacks_is_an_error_under_its_path(
    api, kafka_conn, ch_conn, registry_conn, avro_topic, clickhouse_target
):
    fields = [
        {"path": "order_id", "type": "uuid"},
        {"path": "qty", "type": "int"},
        {"path": "discount", "type": "float"},
    ]
    response = answered(
        api,
        api.post(
            f"{PIPELINES}validate/",
            {
                "kafka_connection": kafka_conn.pk,
                "clickhouse_connection": ch_conn.pk,
                "schema_registry_connection": registry_conn["id"],
                "spec": _avro_pipeline_spec(avro_topic, clickhouse_target.database, fields),
                "check_live": True,
            },
            format="json",
        ),
    )
    assert response.status_code == 400, response.json()
    text = json.dumps(response.json())
    assert "source.fields[2]" in text and "discount" in text


def test_avro_without_a_registry_or_schema_is_refused(api, kafka_conn, ch_conn, avro_topic, clickhouse_target):
    fields = [{"path": "order_id", "type": "uuid"}, {"path": "qty", "type": "int"}]
    response = api.post(
        PIPELINES,
        {
            "name": "no-registry",
            "kafka_connection": kafka_conn.pk,
            "clickhouse_connection": ch_conn.pk,
            "spec": _avro_pipeline_spec(avro_topic, clickhouse_target.database, fields),
        },
        format="json",
    )
    assert response.status_code == 400
    assert "source.schema_registry" in json.dumps(response.json())
    assert not Pipeline.objects.exists()


def test_a_protobuf_event_is_decoded_with_its_registered_proto(
    api, kafka_conn, registry_conn, kafka_bootstrap, schema_registry_url
):
    """A sampled Protobuf event (Confluent framing: message index 0, then the message) is read with the .proto
    registered under its id; one whose bytes do not parse says so in words."""
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    from clearflow_spec.avro_schema import wire_format
    from tests.webapp.conftest import produce_records

    topic = f"proto_{uuid.uuid4().hex[:8]}"
    proto = 'syntax = "proto3";\nmessage Order { string order_id = 1; }\n'
    schema_id = SchemaRegistryClient({"url": schema_registry_url}).register_schema(
        f"{topic}-value", Schema(proto, "PROTOBUF")
    )
    produce_records(
        kafka_bootstrap, topic, [wire_format(schema_id, b"\x00\x0a\x03abc"), wire_format(schema_id, b"\x00\x0a\xff")]
    )
    response = answered(
        api,
        api.post(
            f"{KAFKA}{kafka_conn.pk}/sample/",
            {"topics": [topic], "schema_registry_connection": registry_conn["id"]},
            format="json",
        ),
    )
    assert response.status_code == 200, response.json()
    good, bad = sorted(response.json(), key=lambda event: event["offset"])
    assert (good["schema_id"], good["value"], good["decode_error"]) == (schema_id, {"order_id": "abc"}, None)
    assert bad["decode_error"].startswith(f"not Protobuf of schema id {schema_id}: the message does not parse")
