"""`PipelineVersion.spec` is a `PipelineSpec`: stored as its JSON, read back typed, upgraded in one place, and a row
today's rules refuse stays readable as stored."""

from __future__ import annotations

import pytest
from django.db import connection

from clearflow_spec.spec import PipelineSpec, SpecError
from tests.webapp.conftest import orders_spec
from webapp.pipelines import services
from webapp.pipelines.models import PipelineVersion
from webapp.pipelines.spec_field import upgrade_spec

URL = "/api/v1/pipelines/"


@pytest.fixture
def pipeline(owner, kafka_conn, ch_conn, topics, clickhouse_target):
    spec = orders_spec(topics.orders, clickhouse_target.database)
    return services.pipeline_create(
        owner=owner, name="orders", kafka_connection=kafka_conn, clickhouse_connection=ch_conn, spec=spec
    )


def store_raw(version: PipelineVersion, json_text: str) -> None:
    """Write the column as an older version (or a hand) left it, past the model field."""
    with connection.cursor() as cursor:
        table = PipelineVersion._meta.db_table
        cursor.execute(f'UPDATE "{table}" SET spec = %s::jsonb WHERE id = %s', [json_text, version.pk])


def test_a_version_stores_the_json_and_reads_back_the_typed_spec(pipeline):
    version = PipelineVersion.objects.get(pk=pipeline.current_version_id)
    assert isinstance(version.spec, PipelineSpec)
    assert version.spec.sink.table == "orders"
    assert version.stored_spec["source"]["kafka"]["bootstrap_servers"] == version.spec.source.kafka.bootstrap_servers
    assert PipelineVersion.objects.filter(spec__sink__table="orders").count() == 1  # a JSON column as before


def test_an_old_stored_spec_reads_in_todays_words(pipeline):
    import json

    version = pipeline.current_version
    old = version.stored_spec
    del old["sink"]["insert_dedup_window"]
    old["sink"]["deduplication_window"] = 777  # the name before the rename
    store_raw(version, json.dumps(old))
    version = PipelineVersion.objects.get(pk=version.pk)
    assert version.spec.sink.insert_dedup_window == 777
    assert upgrade_spec(old)["sink"]["insert_dedup_window"] == 777
    assert "deduplication_window" in old["sink"]  # upgrade_spec copies: the original stays


def test_a_row_todays_rules_refuse_stays_readable_and_says_why(pipeline, api, owner_client):
    import json

    version = pipeline.current_version
    refused = version.stored_spec
    refused["sink"]["columns"][0]["type"] = "NoSuchType"
    store_raw(version, json.dumps(refused))
    version = PipelineVersion.objects.get(pk=version.pk)
    with pytest.raises(SpecError) as caught:
        _ = version.spec
    assert caught.value.errors[0].path == "sink.columns[0].type"
    assert version.stored_spec["sink"]["columns"][0]["type"] == "NoSuchType"
    # Shown as stored; the actions that need it say what to fix.
    assert api.get(f"{URL}{pipeline.pk}/").json()["spec"]["sink"]["columns"][0]["type"] == "NoSuchType"
    assert "NoSuchType" in owner_client.get(f"/pipelines/{pipeline.pk}/").content.decode()
    deploy = api.post(f"{URL}{pipeline.pk}/deploy/", {}, format="json")
    assert deploy.status_code == 400 and deploy.json()["errors"][0]["path"] == "spec.sink.columns[0].type"
