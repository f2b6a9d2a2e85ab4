"""Connections over the REST API, against the real broker and ClickHouse."""

from __future__ import annotations

import pytest

from localstack.processes import free_port
from tests.webapp.conftest import ORDER_COUNT, raw_column
from tests.webapp.heavy import answered
from webapp.connections.models import ClickHouseConnection, KafkaConnection

KAFKA = "/api/v1/connections/kafka/"
CH = "/api/v1/connections/clickhouse/"
SECRET = "top-secret-pw-42"


def test_kafka_connection_crud_and_test(api, kafka_bootstrap, topics):
    created = api.post(KAFKA, {"name": "local", "bootstrap_servers": kafka_bootstrap}, format="json")
    assert created.status_code == 201, created.json()
    pk = created.json()["id"]
    assert created.json()["security_protocol"] == "PLAINTEXT"

    assert [c["name"] for c in api.get(KAFKA).json()] == ["local"]
    tested = api.post(f"{KAFKA}{pk}/test/")
    assert tested.status_code == 200
    assert tested.json()["brokers"] == [kafka_bootstrap]
    assert tested.json()["topic_count"] >= 3

    renamed = api.patch(f"{KAFKA}{pk}/", {"name": "renamed"}, format="json")
    assert renamed.status_code == 200
    assert renamed.json()["name"] == "renamed"
    assert api.delete(f"{KAFKA}{pk}/").status_code == 204
    assert api.get(f"{KAFKA}{pk}/").status_code == 404


def test_secrets_are_write_only_and_encrypted(api, owner):
    response = api.post(
        KAFKA,
        {
            "name": "sasl",
            "bootstrap_servers": "broker-1:9093,broker-2:9093",
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-256",
            "sasl_username": "alice",
            "sasl_password": SECRET,
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert SECRET not in response.content.decode()
    assert response.json()["has_sasl_password"] is True
    pk = response.json()["id"]
    for body in (api.get(f"{KAFKA}{pk}/").content, api.get(KAFKA).content):
        assert SECRET.encode() not in body

    # A PATCH without the password keeps it; an empty string clears it.
    api.patch(f"{KAFKA}{pk}/", {"sasl_username": "bob"}, format="json")
    assert KafkaConnection.objects.get(pk=pk).sasl_password == SECRET
    assert SECRET not in raw_column(KafkaConnection._meta.db_table, "sasl_password", pk)

    ch = api.post(CH, {"name": "ch", "host": "ch.example", "password": SECRET}, format="json")
    assert ch.status_code == 201
    assert SECRET not in ch.content.decode()
    assert ch.json()["has_password"] is True
    assert ClickHouseConnection.objects.get(pk=ch.json()["id"]).password == SECRET
    assert SECRET not in raw_column(ClickHouseConnection._meta.db_table, "password", ch.json()["id"])


def test_bad_input_names_the_field(api):
    response = api.post(KAFKA, {"name": "x", "bootstrap_servers": "no port here"}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "bootstrap_servers"

    response = api.post(
        KAFKA, {"name": "x", "bootstrap_servers": "b:9092", "security_protocol": "SASL_SSL"}, format="json"
    )
    assert response.status_code == 400
    assert {e["path"] for e in response.json()["errors"]} >= {"sasl_mechanism", "sasl_username"}

    assert api.post(KAFKA, {"name": "dup", "bootstrap_servers": "b:9092"}, format="json").status_code == 201
    dup = api.post(KAFKA, {"name": "dup", "bootstrap_servers": "b:9092"}, format="json")
    assert dup.status_code == 400
    assert dup.json()["errors"] == [{"path": "name", "message": "The workspace already has a connection named 'dup'."}]
    assert KafkaConnection.objects.filter(name="dup").count() == 1

    response = api.post(CH, {"name": "c", "host": "h", "port": 70000}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "port"

    response = api.post(KAFKA, "{not json", content_type="application/json")
    assert response.status_code == 400


def test_test_unsaved_settings_and_unreachable_broker(api, kafka_bootstrap):
    ok = api.post(f"{KAFKA}test/", {"name": "tmp", "bootstrap_servers": kafka_bootstrap}, format="json")
    assert ok.status_code == 200
    assert ok.json()["ok"] is True
    assert not KafkaConnection.objects.exists()

    dead = api.post(f"{KAFKA}test/", {"name": "tmp", "bootstrap_servers": f"127.0.0.1:{free_port()}"}, format="json")
    assert dead.status_code == 502
    assert "connection refused" in dead.json()["message"]


def test_topics_sample_and_infer(api, kafka_conn, topics):
    listed = {t["name"]: t for t in api.get(f"{KAFKA}{kafka_conn.pk}/topics/").json()}
    assert listed[topics.orders] == {"name": topics.orders, "partitions": 2, "message_count": ORDER_COUNT}

    sample = answered(
        api, api.post(f"{KAFKA}{kafka_conn.pk}/sample/", {"topics": [topics.orders], "count": 5}, format="json")
    )
    assert sample.status_code == 200
    assert [e["value"]["seq"] for e in sample.json()] == [25, 26, 27, 28, 29]
    oldest = answered(
        api,
        api.post(
            f"{KAFKA}{kafka_conn.pk}/sample/",
            {"topics": [topics.orders], "count": 3, "position": "oldest"},
            format="json",
        ),
    )
    assert [e["value"]["seq"] for e in oldest.json()] == [0, 1, 2]

    inferred = answered(
        api, api.post(f"{KAFKA}{kafka_conn.pk}/infer-schema/", {"topics": [topics.orders]}, format="json")
    )
    assert inferred.status_code == 200
    assert inferred.json()["sampled"] == 20
    types = {f["path"]: f["type"] for f in inferred.json()["fields"]}
    assert types == {
        "order_id": "uuid",
        "seq": "int",
        "amount": "float",
        "paid": "bool",
        "created_at": "datetime",
        "customer.id": "int",
        "customer.name": "string",
        "tags": "array<string>",
    }

    empty = answered(api, api.post(f"{KAFKA}{kafka_conn.pk}/infer-schema/", {"topics": [topics.empty]}, format="json"))
    assert empty.json() == {"sampled": 0, "fields": [], "schema_versions": [], "undecodable": 0}


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"topics": []}, "topics"),
        ({"topics": ["t"], "count": 0}, "count"),
        ({"topics": ["t"], "count": 501}, "count"),
        ({"topics": ["t"], "position": "middle"}, "position"),
        ({}, "topics"),
    ],
)
def test_sample_input_errors(api, kafka_conn, body, path):
    response = answered(api, api.post(f"{KAFKA}{kafka_conn.pk}/sample/", body, format="json"))
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == path


def test_sample_of_odd_records_is_valid_json(api, kafka_conn, topics):
    response = answered(
        api,
        api.post(f"{KAFKA}{kafka_conn.pk}/sample/", {"topics": [topics.mixed], "position": "oldest"}, format="json"),
    )
    assert response.status_code == 200
    assert [e["is_json"] for e in response.json()] == [True, False, True, False, False]


def test_sample_unknown_topic_is_404(api, kafka_conn):
    response = answered(api, api.post(f"{KAFKA}{kafka_conn.pk}/sample/", {"topics": ["does-not-exist"]}, format="json"))
    assert response.status_code == 404
    assert "does-not-exist" in response.json()["message"]


def test_clickhouse_browsing(api, ch_conn, clickhouse_target):
    tested = api.post(f"{CH}{ch_conn.pk}/test/")
    assert tested.status_code == 200
    assert tested.json()["version"].startswith("26.")

    databases = [d["name"] for d in api.get(f"{CH}{ch_conn.pk}/databases/").json()]
    assert clickhouse_target.database in databases
    tables = api.get(f"{CH}{ch_conn.pk}/databases/{clickhouse_target.database}/tables/").json()
    assert [t["name"] for t in tables] == ["orders", "other"]
    columns = api.get(f"{CH}{ch_conn.pk}/databases/{clickhouse_target.database}/tables/orders/columns/").json()
    assert [(c["name"], c["type"], c["required"]) for c in columns] == [
        ("order_id", "UUID", True),
        ("seq", "Int64", True),
        ("amount", "Float64", True),
        ("customer_name", "Nullable(String)", False),
        ("inserted_at", "DateTime", False),
    ]
    assert api.get(f"{CH}{ch_conn.pk}/databases/nope/tables/").status_code == 404
    assert api.get(f"{CH}{ch_conn.pk}/databases/{clickhouse_target.database}/tables/nope/columns/").status_code == 404


def test_clickhouse_wrong_password_is_502_in_plain_words(api, clickhouse_server):
    response = api.post(
        f"{CH}test/",
        {"name": "x", "host": clickhouse_server.host, "port": clickhouse_server.port, "password": "wrong"},
        format="json",
    )
    assert response.status_code == 502
    assert "rejected the user name or password" in response.json()["message"]


def test_other_users_connections_are_404(other_api, kafka_conn, ch_conn, topics):
    for url in (
        f"{KAFKA}{kafka_conn.pk}/",
        f"{KAFKA}{kafka_conn.pk}/topics/",
        f"{CH}{ch_conn.pk}/",
        f"{CH}{ch_conn.pk}/databases/",
    ):
        assert other_api.get(url).status_code == 404, url
    assert other_api.post(f"{KAFKA}{kafka_conn.pk}/test/").status_code == 404
    assert (
        answered(
            other_api, other_api.post(f"{KAFKA}{kafka_conn.pk}/sample/", {"topics": [topics.orders]}, format="json")
        ).status_code
        == 404
    )
    assert other_api.patch(f"{KAFKA}{kafka_conn.pk}/", {"name": "mine"}, format="json").status_code == 404
    assert other_api.delete(f"{CH}{ch_conn.pk}/").status_code == 404
    assert other_api.get(KAFKA).json() == []
    assert KafkaConnection.objects.get(pk=kafka_conn.pk).name == "local kafka"
    assert ClickHouseConnection.objects.filter(pk=ch_conn.pk).exists()


def test_anonymous_is_rejected(anon_api, kafka_conn):
    for url in (KAFKA, f"{KAFKA}{kafka_conn.pk}/", CH):
        response = anon_api.get(url)
        assert response.status_code == 401
        assert response["WWW-Authenticate"] == "Token"
    assert anon_api.post(KAFKA, {"name": "x", "bootstrap_servers": "b:1"}, format="json").status_code == 401


def test_session_authentication_works(client, owner, kafka_conn):
    client.force_login(owner)
    assert client.get(KAFKA).status_code == 200


def self_signed() -> tuple[str, str]:
    """A throwaway certificate and its unencrypted private key, both PEM."""
    from datetime import UTC, datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "clearflow-test")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return cert.public_bytes(serialization.Encoding.PEM).decode(), key_pem


def test_ssl_certificates_and_key(api):
    cert, key = self_signed()
    response = api.post(
        KAFKA,
        {
            "name": "mtls",
            "bootstrap_servers": "broker:9093",
            "security_protocol": "SSL",
            "ssl_ca_pem": cert,
            "ssl_certificate_pem": cert,
            "ssl_key_pem": key,
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["has_ssl_key"] is True
    assert response.json()["ssl_certificate_pem"] == cert.strip()
    assert "PRIVATE KEY" not in response.content.decode()
    assert "PRIVATE KEY" not in raw_column(KafkaConnection._meta.db_table, "ssl_key_pem", response.json()["id"])

    missing_key = api.post(
        KAFKA,
        {"name": "half", "bootstrap_servers": "b:9093", "security_protocol": "SSL", "ssl_certificate_pem": cert},
        format="json",
    )
    assert missing_key.status_code == 400
    assert missing_key.json()["errors"][0]["path"] == "ssl_key_pem"

    plaintext = api.post(KAFKA, {"name": "p", "bootstrap_servers": "b:9092", "ssl_ca_pem": cert}, format="json")
    assert plaintext.status_code == 400
    assert plaintext.json()["errors"][0]["path"] == "ssl_ca_pem"
