"""The spec's connection models are the one description of a connection: the saved connections store exactly
their fields (secrets encrypted), and every setting a user saves reaches the pipeline's job."""

from __future__ import annotations

import pydantic
import pytest
from django.core.exceptions import ValidationError

from clearflow_spec.connections import ClickHouseConnectionSpec, KafkaConnectionSpec, SchemaRegistryConnectionSpec
from clearflow_spec.spec import SECRET_MASK
from tests.kafka_security import issue, make_ca
from tests.webapp.conftest import orders_spec, raw_column
from webapp.connections.models import ClickHouseConnection, KafkaConnection, SchemaRegistryConnection
from webapp.connections.services import (
    clickhouse_connection_create,
    kafka_connection_create,
    schema_registry_connection_create,
)
from webapp.core.fields import EncryptedTextField
from webapp.pipelines import services
from webapp.workspaces.services import workspace_for_new_objects

BOOKKEEPING = {"id", "owner", "workspace", "name", "created_at", "updated_at"}


@pytest.mark.fast
@pytest.mark.parametrize(
    ("model", "spec"),
    [
        (KafkaConnection, KafkaConnectionSpec),
        (ClickHouseConnection, ClickHouseConnectionSpec),
        (SchemaRegistryConnection, SchemaRegistryConnectionSpec),
    ],
)
def test_the_model_stores_exactly_the_spec_fields_and_encrypts_its_secrets(model, spec):
    stored = {f.name for f in model._meta.concrete_fields} - BOOKKEEPING - set(model.STATE_FIELDS)
    assert stored == set(spec.model_fields)
    assert ("name", *spec.model_fields) == model.EDITABLE_FIELDS
    encrypted = {f.name for f in model._meta.concrete_fields if isinstance(f, EncryptedTextField)}
    assert encrypted == set(model.SECRET_FIELDS) and encrypted


@pytest.mark.fast
def test_the_models_choices_and_security_rules_are_the_specs():
    from typing import get_args

    fields = KafkaConnectionSpec.model_fields
    choices = {
        name: [value for value, _ in KafkaConnection._meta.get_field(name).choices]
        for name in ("security_protocol", "sasl_mechanism")
    }
    assert choices["security_protocol"] == list(get_args(fields["security_protocol"].annotation))
    assert choices["sasl_mechanism"] == ["", *get_args(get_args(fields["sasl_mechanism"].annotation)[0])]
    # What a SASL protocol needs, as the model says it field by field and the spec says it at once.
    bare = KafkaConnection(name="k", bootstrap_servers="10.0.0.1:9092", security_protocol="SASL_SSL")
    with pytest.raises(ValidationError) as caught:
        bare.clean()
    assert set(caught.value.message_dict) == {"sasl_mechanism", "sasl_username", "sasl_password"}
    with pytest.raises(pydantic.ValidationError, match="SASL_SSL needs sasl_mechanism, sasl_username, sasl_password"):
        KafkaConnectionSpec(bootstrap_servers="k:9092", security_protocol="SASL_SSL")


@pytest.fixture
def pki():
    ca, ca_key = make_ca("test CA")
    return ca, issue(ca, ca_key, "client", server=False)


def test_every_kafka_and_clickhouse_setting_reaches_the_job_and_secrets_only_there(owner, pki, topics):
    ca, client = pki
    kafka = kafka_connection_create(
        owner=owner,
        data={
            "name": "secured",
            "bootstrap_servers": "broker1:9093, broker2:9093",
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_username": "svc",
            "sasl_password": "kafka-pw",
            "ssl_ca_pem": ca.certificate_pem,
            "ssl_certificate_pem": client.certificate_pem,
            "ssl_key_pem": client.key_pem,
        },
    )
    ch = clickhouse_connection_create(
        owner=owner,
        data={
            "name": "warehouse",
            "host": "ch.internal",
            "port": 8443,
            "username": "etl",
            "password": "ch-pw",
            "database": "analytics",
            "secure": True,
            "verify": False,
            "ssl_ca_pem": ca.certificate_pem,
        },
    )
    pipeline = services.pipeline_create(
        owner=owner, name="p", kafka_connection=kafka, clickhouse_connection=ch, spec=orders_spec(topics.orders, "db")
    )

    job = services.pipeline_job_spec(pipeline=pipeline).to_dict(reveal_secrets=True)  # the job's spec file
    assert job["source"]["kafka"] == {
        "bootstrap_servers": "broker1:9093,broker2:9093",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_username": "svc",
        "sasl_password": "kafka-pw",
        "ssl_ca_pem": ca.certificate_pem,
        "ssl_certificate_pem": client.certificate_pem,
        "ssl_key_pem": client.key_pem,
    }
    assert job["sink"]["clickhouse"] == {
        "host": "ch.internal",
        "port": 8443,
        "username": "etl",
        "password": "ch-pw",
        "database": "db",  # the pipeline's target database, not the connection's default
        "secure": True,
        "verify": False,
        "ssl_ca_pem": ca.certificate_pem,
    }
    stored = pipeline.stored_spec
    assert stored["source"]["kafka"]["sasl_password"] == stored["source"]["kafka"]["ssl_key_pem"] == SECRET_MASK
    assert stored["sink"]["clickhouse"]["password"] == SECRET_MASK
    for secret in ("kafka-pw", client.key_pem, "ch-pw"):
        assert secret not in str(stored)
    for table, column, pk in (
        (KafkaConnection._meta.db_table, "sasl_password", kafka.pk),
        (KafkaConnection._meta.db_table, "ssl_key_pem", kafka.pk),
        (ClickHouseConnection._meta.db_table, "password", ch.pk),
    ):
        assert raw_column(table, column, pk).startswith("fernet:")


def test_every_schema_registry_setting_reaches_the_job_and_its_password_only_there(owner, pki, topics):
    ca, _ = pki
    kafka = kafka_connection_create(owner=owner, data={"name": "k", "bootstrap_servers": "broker1:9092"})
    ch = clickhouse_connection_create(owner=owner, data={"name": "c", "host": "ch.internal"})
    registry = schema_registry_connection_create(
        owner=owner,
        data={
            "name": "registry",
            "url": "https://registry.internal:8443/apis/ccompat/v7/",
            "username": "reader",
            "password": "registry-pw",
            "verify": True,
            "ssl_ca_pem": ca.certificate_pem,
        },
    )
    spec = orders_spec(topics.orders, "db")
    spec["source"]["format"] = "avro"
    pipeline = services.pipeline_create(
        owner=owner,
        name="p",
        kafka_connection=kafka,
        clickhouse_connection=ch,
        schema_registry_connection=registry,
        spec=spec,
    )

    job = services.pipeline_job_spec(pipeline=pipeline).to_dict(reveal_secrets=True)  # the job's spec file
    assert job["source"]["schema_registry"] == {
        "url": "https://registry.internal:8443/apis/ccompat/v7",
        "username": "reader",
        "password": "registry-pw",
        "verify": True,
        "ssl_ca_pem": ca.certificate_pem,
    }
    stored = pipeline.stored_spec
    assert stored["source"]["schema_registry"]["password"] == SECRET_MASK
    assert "registry-pw" not in str(stored)
    assert raw_column(SchemaRegistryConnection._meta.db_table, "password", registry.pk).startswith("fernet:")


def test_a_sasl_connection_needs_its_password_when_saved_as_the_job_does(api):
    """Before, a SASL connection without a password was saved and tested, and its pipeline failed at deploy."""
    response = api.post(
        "/api/v1/connections/kafka/",
        {
            "name": "sasl",
            "bootstrap_servers": "b:9092",
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN",
            "sasl_username": "alice",
        },
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["errors"] == [{"path": "sasl_password", "message": "SASL_PLAINTEXT needs a password."}]
    assert not KafkaConnection.objects.exists()


def test_a_connection_saved_before_a_rule_of_the_spec_gets_a_400_naming_it_and_no_secret(api, owner, topics, caplog):
    """A row written before the password rule (not through the services): the pipeline's spec cannot be built
    from it. The API says so with a path, and the secrets in it appear neither in the answer nor in the logs."""
    legacy = KafkaConnection.objects.create(
        owner=owner,
        workspace=workspace_for_new_objects(user=owner),
        name="legacy",
        bootstrap_servers="b:9092",
        security_protocol="SASL_SSL",
        sasl_username="alice",
        sasl_password="legacy-secret",
    )
    ch = clickhouse_connection_create(owner=owner, data={"name": "c", "host": "ch.internal"})
    body = {
        "name": "p",
        "kafka_connection": legacy.pk,
        "clickhouse_connection": ch.pk,
        "spec": orders_spec(topics.orders, "db"),
    }
    response = api.post("/api/v1/pipelines/", body, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"path": "spec.source.kafka", "message": "connection 'legacy': SASL_SSL needs sasl_mechanism"}
    ]
    assert "legacy-secret" not in response.content.decode() and "legacy-secret" not in caplog.text
    try:
        legacy.to_spec()
    except Exception as exc:  # pydantic's error repeats its input: the secret must be masked there
        assert "legacy-secret" not in str(exc) and "legacy-secret" not in repr(exc)
    else:
        raise AssertionError("to_spec() accepted a SASL connection without a mechanism")
