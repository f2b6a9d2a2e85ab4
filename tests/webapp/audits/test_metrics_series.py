"""/metrics carries each pipeline's latest audit (parsed with prometheus_client's own parser)."""

from __future__ import annotations

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from tests.webapp.audits.conftest import insert_orders
from webapp.audits import services

pytestmark = pytest.mark.django_db

TOKEN = "audit-scrape-token"


def scrape(client) -> dict[tuple[str, frozenset], float]:
    response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(response.content.decode())
        for s in family.samples
    }


def test_the_scrape_holds_the_last_audits_duplicate_keys(
    client, settings, redis_url, owner, audited_pipeline, pipeline_table, ch
):
    settings.CLEARFLOW_METRICS_TOKEN = TOKEN
    settings.REDIS_URL = redis_url
    labels = {"pipeline_id": str(audited_pipeline.pk), "pipeline": "audited", "owner": owner.get_username()}
    assert not [k for k in scrape(client) if k[0].startswith("clearflow_pipeline_audit")]

    insert_orders(ch, pipeline_table, [1, 1, 2, 2, 2, 3])
    services.audit_check(audited_table=services.audited_table_sync_pipeline(pipeline=audited_pipeline))
    values = scrape(client)

    assert values[("clearflow_pipeline_audit_duplicate_keys", frozenset(labels.items()))] == 2
    assert values[("clearflow_pipeline_audit_ok", frozenset(labels.items()))] == 1
    assert values[("clearflow_pipeline_audit_timestamp_seconds", frozenset(labels.items()))] > 1.7e9

    # A failing audit: no count, ok 0.
    ch.command(f"DROP TABLE `{pipeline_table.database}`.orders")
    services.audit_check(audited_table=services.audited_table_sync_pipeline(pipeline=audited_pipeline))
    values = scrape(client)
    assert ("clearflow_pipeline_audit_duplicate_keys", frozenset(labels.items())) not in values
    assert values[("clearflow_pipeline_audit_ok", frozenset(labels.items()))] == 0
