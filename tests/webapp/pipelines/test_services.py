"""Pipeline services: versions, validation, compare-and-set status changes, the worker hook on commit."""

from __future__ import annotations

from unittest import mock

import pytest
from django.core.exceptions import ValidationError

from clearflow_spec.spec import SECRET_MASK, SpecError
from tests.webapp.conftest import orders_spec
from webapp.connections.services import clickhouse_connection_create, kafka_connection_create
from webapp.core.exceptions import ConflictError
from webapp.pipelines import services
from webapp.pipelines.models import Pipeline, PipelineStatus, PipelineVersion

S = PipelineStatus


@pytest.fixture
def spec(topics, clickhouse_target):
    return orders_spec(topics.orders, clickhouse_target.database)


@pytest.fixture
def pipeline(owner, kafka_conn, ch_conn, spec):
    return services.pipeline_create(
        owner=owner, name="orders", kafka_connection=kafka_conn, clickhouse_connection=ch_conn, spec=spec
    )


def test_create_stores_version_one_with_connections_filled_in(pipeline, kafka_bootstrap, clickhouse_target):
    assert pipeline.status == S.DRAFT
    assert pipeline.current_version.number == 1
    stored = pipeline.stored_spec
    assert stored["name"] == "orders"
    assert stored["version"] == 1
    assert stored["source"]["kafka"]["bootstrap_servers"] == kafka_bootstrap
    assert stored["sink"]["clickhouse"]["database"] == clickhouse_target.database


def test_secrets_go_only_into_the_job_spec(owner, spec, clickhouse_server):
    kafka = kafka_connection_create(
        owner=owner,
        data={
            "name": "sasl",
            "bootstrap_servers": "b:9092",
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN",
            "sasl_username": "alice",
            "sasl_password": "kafka-pw",
        },
    )
    ch = clickhouse_connection_create(owner=owner, data={"name": "c", "host": "ch", "password": "ch-pw"})
    pipeline = services.pipeline_create(
        owner=owner, name="p", kafka_connection=kafka, clickhouse_connection=ch, spec=spec
    )
    pipeline.refresh_from_db()
    assert "kafka-pw" not in str(pipeline.stored_spec) and "ch-pw" not in str(pipeline.stored_spec)
    assert pipeline.stored_spec["source"]["kafka"]["sasl_password"] == SECRET_MASK
    job = services.pipeline_job_spec(pipeline=pipeline)
    assert job.source.kafka.sasl_password.get_secret_value() == "kafka-pw"
    assert job.sink.clickhouse.password.get_secret_value() == "ch-pw"
    assert job.name == pipeline.job_name


def test_invalid_spec_raises_with_paths_and_writes_nothing(owner, kafka_conn, ch_conn, spec):
    spec["sink"]["columns"][0]["type"] = "Strng"
    spec["dedup"]["keys"] = ["nope"]
    with pytest.raises(SpecError) as caught:
        services.pipeline_create(
            owner=owner, name="bad", kafka_connection=kafka_conn, clickhouse_connection=ch_conn, spec=spec
        )
    paths = {issue.path for issue in caught.value.errors}
    assert "sink.columns[0].type" in paths
    assert not Pipeline.objects.exists()
    assert not PipelineVersion.objects.exists()


def test_other_users_connection_and_taken_name(owner, other, kafka_conn, ch_conn, spec, pipeline):
    others = kafka_connection_create(owner=other, data={"name": "theirs", "bootstrap_servers": "b:1"})
    with pytest.raises(ValidationError) as caught:
        services.pipeline_create(
            owner=owner, name="x", kafka_connection=others, clickhouse_connection=ch_conn, spec=spec
        )
    assert "kafka_connection" in caught.value.message_dict
    with pytest.raises(ValidationError) as caught:
        services.pipeline_create(
            owner=owner, name="orders", kafka_connection=kafka_conn, clickhouse_connection=ch_conn, spec=spec
        )
    assert "name" in caught.value.message_dict
    assert Pipeline.objects.count() == 1


def test_update_makes_a_new_version_and_keeps_the_old(owner, pipeline, spec):
    spec["dedup"]["window"] = "2h"
    updated = services.pipeline_update(pipeline=pipeline, user=owner, spec=spec, note="longer window")
    assert updated.current_version.number == 2
    assert [v.number for v in updated.versions.all()] == [2, 1]
    assert updated.versions.get(number=1).spec.dedup.window == "1h"
    assert updated.spec.dedup.window == "2h"

    same = services.pipeline_update(pipeline=updated, user=owner, spec=spec)
    assert same.current_version.number == 2  # nothing changed: no new version

    renamed = services.pipeline_update(pipeline=same, user=owner, name="orders-v2")
    assert renamed.current_version.number == 3
    assert renamed.spec.name == "orders-v2"


def test_deploy_stop_resume_delete(owner, pipeline, django_capture_on_commit_callbacks):
    with mock.patch("webapp.core.queue.pipeline_reconcile") as hook:
        with django_capture_on_commit_callbacks(execute=True):
            services.pipeline_deploy(pipeline=pipeline, user=owner)
        hook.assert_called_once_with(pipeline_id=pipeline.pk)
    pipeline.refresh_from_db()
    assert pipeline.status == S.DEPLOY_REQUESTED
    assert pipeline.deployed_version == pipeline.current_version
    assert pipeline.deploy_requested_at is not None

    with pytest.raises(ConflictError):
        services.pipeline_resume(pipeline=pipeline, user=owner)

    services.pipeline_stop(pipeline=pipeline, user=owner)
    assert pipeline.status == S.STOPPED
    with pytest.raises(ConflictError):
        services.pipeline_stop(pipeline=pipeline, user=owner)

    services.pipeline_resume(pipeline=pipeline, user=owner)
    assert pipeline.status == S.DEPLOY_REQUESTED
    services.pipeline_stop(pipeline=pipeline, user=owner)
    services.pipeline_delete(pipeline=pipeline, user=owner)
    assert not Pipeline.objects.exists()
    assert not PipelineVersion.objects.exists()


def test_stop_of_a_running_pipeline_asks_the_worker(owner, pipeline, django_capture_on_commit_callbacks):
    Pipeline.objects.filter(pk=pipeline.pk).update(status=S.RUNNING)
    with mock.patch("webapp.core.queue.pipeline_reconcile") as hook:
        with django_capture_on_commit_callbacks(execute=True):
            services.pipeline_stop(pipeline=pipeline, user=owner)
        hook.assert_called_once_with(pipeline_id=pipeline.pk)
    assert pipeline.status == S.STOP_REQUESTED
    with pytest.raises(ConflictError):
        services.pipeline_deploy(pipeline=pipeline, user=owner)


def test_compare_and_set_loses_to_a_concurrent_change(owner, pipeline):
    stale = Pipeline.objects.get(pk=pipeline.pk)
    services.pipeline_deploy(pipeline=pipeline, user=owner)
    services.pipeline_stop(pipeline=pipeline, user=owner)
    Pipeline.objects.filter(pk=pipeline.pk).update(status=S.STOP_REQUESTED)
    # `stale` still believes it is a draft; the row says otherwise, so the change is refused.
    assert stale.status == S.DRAFT
    with pytest.raises(ConflictError):
        services.pipeline_deploy(pipeline=stale, user=owner)
    assert Pipeline.objects.get(pk=pipeline.pk).status == S.STOP_REQUESTED


def test_resume_needs_an_earlier_deploy(owner, pipeline):
    Pipeline.objects.filter(pk=pipeline.pk).update(status=S.STOPPED)
    pipeline.refresh_from_db()
    with pytest.raises(ConflictError, match="never deployed"):
        services.pipeline_resume(pipeline=pipeline, user=owner)


def test_connection_in_use_cannot_be_deleted(pipeline, kafka_conn):
    from webapp.connections.services import kafka_connection_delete

    with pytest.raises(ConflictError, match="orders"):
        kafka_connection_delete(connection=kafka_conn)


def test_live_validation_flags_missing_topics_columns_and_types(owner, kafka_conn, ch_conn, spec):
    services.pipeline_validate(spec=spec, kafka_connection=kafka_conn, clickhouse_connection=ch_conn, check_live=True)

    spec["source"]["topics"] = ["no-such-topic"]
    spec["sink"]["columns"] = [
        {"field": "order_id", "column": "order_id", "type": "UUID"},
        {"field": "created_at", "column": "seq", "type": "DateTime64(3, 'UTC')"},
        {"field": "customer.name", "column": "nope", "type": "String"},
    ]
    with pytest.raises(SpecError) as caught:
        services.pipeline_validate(
            spec=spec, kafka_connection=kafka_conn, clickhouse_connection=ch_conn, check_live=True
        )
    issues = {(i.path, i.message.split(" ")[0]) for i in caught.value.errors}
    paths = [i.path for i in caught.value.errors]
    assert "source.topics[0]" in paths
    assert "sink.columns[1].type" in paths  # a datetime into Int64
    assert "sink.columns[2].column" in paths  # no such column
    unmapped = [i.message for i in caught.value.errors if i.path == "sink.columns"]
    assert any("amount" in m for m in unmapped)  # required and not mapped
    assert not any("customer_name" in m or "inserted_at" in m for m in unmapped)  # Nullable / DEFAULT
    assert issues
