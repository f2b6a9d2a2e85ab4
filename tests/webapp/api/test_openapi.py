from __future__ import annotations

import pytest


@pytest.mark.django_db
def test_schema_lists_every_operation_with_auth(client):
    response = client.get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    schema = response.json()
    operations = {
        op["operationId"] for item in schema["paths"].values() for op in item.values() if isinstance(op, dict)
    }
    for expected in (
        "kafka_connections_create",
        "kafka_connections_test",
        "kafka_topics_list",
        "kafka_events_sample",
        "kafka_schema_infer",
        "clickhouse_databases_list",
        "clickhouse_tables_list",
        "clickhouse_columns_list",
        "pipelines_create",
        "pipelines_validate",
        "pipelines_deploy",
        "pipelines_rollback",
        "pipelines_stop",
        "pipelines_resume",
        "pipelines_delete",
        "pipelines_status",
        "schema_registry_connections_list",
        "schema_registry_connections_diff",
    ):
        assert expected in operations
    assert {"tokenAuth", "cookieAuth"} <= set(schema["components"]["securitySchemes"])
    # Secrets are accepted but never described as returned.
    assert "sasl_password" in schema["components"]["schemas"]["KafkaConnectionInputRequest"]["properties"]
    assert "sasl_password" not in schema["components"]["schemas"]["KafkaConnectionOutput"]["properties"]
    # The key advice's state store is no longer a choice: documented as deprecated, the size in the sizing's words.
    advice = schema["components"]["schemas"]["DedupAnalysisOutput"]["properties"]
    assert advice["state_store"]["deprecated"] is True and "always `rocksdb`" in advice["state_store"]["description"]
    assert {"estimated_state_keys", "estimated_state_bytes"} <= set(advice)


@pytest.mark.django_db
def test_docs_page_uses_local_assets(client):
    response = client.get("/api/v1/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in html
    assert "cdn" not in html.lower()


@pytest.mark.django_db
def test_docs_say_how_to_authenticate_and_keep_the_token(client):
    schema = client.get("/api/v1/schema/?format=json").json()
    description = schema["info"]["description"]
    assert "API tokens" in description and "Authorization: Token <token>" in description
    assert "Authorize" in description
    script = client.get("/api/v1/docs/?script=").content.decode()  # the page's script, served apart for the CSP
    assert '"persistAuthorization": true' in script  # a token entered under Authorize survives a reload
