"""/api/v1/audits/: the owner lists, adds and reads results; an outsider gets 404 for every one of them."""

from __future__ import annotations

import pytest

from tests.webapp.audits.conftest import insert_orders
from webapp.audits import services
from webapp.audits.models import AuditedTable

pytestmark = pytest.mark.django_db


def add_body(ch_conn, pipeline_table, **extra) -> dict:
    return {
        "connection": ch_conn.pk,
        "database": pipeline_table.database,
        "table": pipeline_table.table,
        "key_columns": ["order_id"],
        "time_column": "_cf_ingested_at",
        **extra,
    }


def test_the_owner_adds_a_table_and_reads_its_results(api, ch_conn, pipeline_table, ch):
    response = api.post("/api/v1/audits/", add_body(ch_conn, pipeline_table, extra_window_seconds=7200), format="json")
    assert response.status_code == 201, response.json()
    created = response.json()
    assert created["pipeline"] is None and created["windows"] == [3600, 7200] and created["latest"] == []

    insert_orders(ch, pipeline_table, [1, 1, 1, 2])
    services.audit_check(audited_table=AuditedTable.objects.get(pk=created["id"]))

    listed = api.get("/api/v1/audits/").json()
    assert [t["id"] for t in listed] == [created["id"]]
    hour = listed[0]["latest"][0]
    assert (hour["window_seconds"], hour["duplicate_keys"], hour["duplicate_rows"], hour["error"]) == (3600, 1, 3, "")
    assert "GROUP BY `order_id`" in hour["query"]
    results = api.get(f"/api/v1/audits/{created['id']}/results/?limit=1").json()
    assert len(results) == 1 and results[0]["window_seconds"] in (3600, 7200)
    assert len(api.get(f"/api/v1/audits/{created['id']}/results/").json()) == 2


def test_bad_columns_are_named_next_to_the_field(api, ch_conn, pipeline_table):
    response = api.post(
        "/api/v1/audits/", add_body(ch_conn, pipeline_table, key_columns=["order_id", "nope"]), format="json"
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "key_columns"
    assert "nope" in response.json()["errors"][0]["message"]

    response = api.post("/api/v1/audits/", add_body(ch_conn, pipeline_table, time_column="seq"), format="json")
    assert response.status_code == 400 and response.json()["errors"][0]["path"] == "time_column"

    response = api.post("/api/v1/audits/", add_body(ch_conn, pipeline_table, table="missing"), format="json")
    assert response.status_code == 400 and response.json()["errors"][0]["path"] == "table"

    response = api.post("/api/v1/audits/", add_body(ch_conn, pipeline_table, key_columns=["a`b"]), format="json")
    assert response.status_code == 400
    assert not AuditedTable.objects.exists()


def test_an_outsider_gets_404_and_sees_nothing(api, other_api, ch_conn, pipeline_table, audited_pipeline):
    created = api.post("/api/v1/audits/", add_body(ch_conn, pipeline_table), format="json").json()
    services.audited_table_sync_pipeline(pipeline=audited_pipeline)

    assert other_api.get("/api/v1/audits/").json() == []
    for url in (f"/api/v1/audits/{created['id']}/", f"/api/v1/audits/{created['id']}/results/"):
        assert other_api.get(url).status_code == 404
    assert other_api.delete(f"/api/v1/audits/{created['id']}/").status_code == 404
    assert other_api.get(f"/api/v1/pipelines/{audited_pipeline.pk}/audit/").status_code == 404
    # Someone else's connection is as good as none.
    response = other_api.post("/api/v1/audits/", add_body(ch_conn, pipeline_table), format="json")
    assert response.status_code == 404
    assert AuditedTable.objects.count() == 2


def test_the_pipelines_latest_audit(api, audited_pipeline, pipeline_table, ch):
    assert api.get(f"/api/v1/pipelines/{audited_pipeline.pk}/audit/").json() == {"audited_table": None}

    insert_orders(ch, pipeline_table, [5, 5])
    services.audit_check(audited_table=services.audited_table_sync_pipeline(pipeline=audited_pipeline))

    audit = api.get(f"/api/v1/pipelines/{audited_pipeline.pk}/audit/").json()["audited_table"]
    assert audit["pipeline"] == audited_pipeline.pk
    assert [(r["window_seconds"], r["duplicate_keys"]) for r in audit["latest"]] == [(3600, 1), (21600, 1)]
    # A pipeline's own table stays audited: it cannot be removed by hand.
    response = api.delete(f"/api/v1/audits/{audit['id']}/")
    assert response.status_code == 400 and AuditedTable.objects.filter(pk=audit["id"]).exists()


def test_the_schema_documents_the_audit_operations(api):
    paths = api.get("/api/v1/schema/?format=json").json()["paths"]
    assert {"/api/v1/audits/", "/api/v1/audits/{id}/", "/api/v1/audits/{id}/results/"} <= set(paths)
    assert "/api/v1/pipelines/{id}/audit/" in paths
