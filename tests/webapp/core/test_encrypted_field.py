from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from tests.webapp.conftest import raw_column
from webapp.connections.models import ClickHouseConnection, KafkaConnection
from webapp.connections.services import clickhouse_connection_create, kafka_connection_create

PASSWORD = "s3cret-Passw0rd!"


def test_secrets_are_stored_encrypted_and_read_back(owner):
    kafka = kafka_connection_create(
        owner=owner,
        data={
            "name": "k",
            "bootstrap_servers": "broker:9092",
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_username": "alice",
            "sasl_password": PASSWORD,
        },
    )
    ch = clickhouse_connection_create(owner=owner, data={"name": "c", "host": "ch", "password": PASSWORD})

    for table, column, pk in (
        (KafkaConnection._meta.db_table, "sasl_password", kafka.pk),
        (ClickHouseConnection._meta.db_table, "password", ch.pk),
    ):
        stored = raw_column(table, column, pk)
        assert PASSWORD not in stored
        assert stored.startswith("fernet:")
    assert KafkaConnection.objects.get(pk=kafka.pk).sasl_password == PASSWORD
    assert ClickHouseConnection.objects.get(pk=ch.pk).password == PASSWORD


def test_empty_secret_stays_empty(owner):
    ch = clickhouse_connection_create(owner=owner, data={"name": "c", "host": "ch"})
    assert raw_column(ClickHouseConnection._meta.db_table, "password", ch.pk) == ""


def test_key_rotation_first_key_encrypts_all_keys_decrypt(owner, settings):
    old_key, new_key = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.FIELD_ENCRYPTION_KEYS = [old_key]
    ch = clickhouse_connection_create(owner=owner, data={"name": "c", "host": "ch", "password": PASSWORD})
    written_with_old = raw_column(ClickHouseConnection._meta.db_table, "password", ch.pk)

    settings.FIELD_ENCRYPTION_KEYS = [new_key, old_key]
    assert ClickHouseConnection.objects.get(pk=ch.pk).password == PASSWORD
    ch.save()
    written_with_new = raw_column(ClickHouseConnection._meta.db_table, "password", ch.pk)
    assert written_with_new != written_with_old
    assert Fernet(new_key.encode()).decrypt(written_with_new.removeprefix("fernet:").encode()).decode() == PASSWORD

    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    with pytest.raises(ImproperlyConfigured, match="cannot decrypt"):
        ClickHouseConnection.objects.get(pk=ch.pk)


def test_secrets_are_not_in_repr_of_client_settings(owner):
    kafka = KafkaConnection(
        owner=owner,
        name="k",
        bootstrap_servers="b:9092",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_username="alice",
        sasl_password=PASSWORD,
    )
    ch = ClickHouseConnection(owner=owner, name="c", host="h", password=PASSWORD)
    assert PASSWORD not in repr(kafka.client_settings())
    assert PASSWORD not in repr(ch.client_settings())
