"""The proof panel on the pipeline page and the Audits pages, as a logged-in user sees them."""

from __future__ import annotations

import re

import pytest
import redis

from spark_jobs.metrics import BatchMetrics, MetricsPublisher, history_key, latest_key, totals_key
from tests.webapp.audits.conftest import insert_orders
from webapp.audits import services
from webapp.audits.models import AuditedTable

pytestmark = pytest.mark.django_db


def record(batch_id: int, timestamp: str, *, read: int, written: int, dups: int, dead: int, filtered: int):
    return BatchMetrics(
        pipeline="ignored",
        batch_id=batch_id,
        timestamp=timestamp,
        input_rows=read,
        duplicates_dropped=dups,
        rows_written=written,
        dead_letters=dead,
        filtered_out=filtered,
        batch_duration_ms=100,
    )


@pytest.fixture
def published(audited_pipeline, redis_url, settings):
    settings.REDIS_URL = redis_url
    name = audited_pipeline.job_name
    redis.Redis.from_url(redis_url).delete(latest_key(name), history_key(name), totals_key(name))
    publisher = MetricsPublisher(name, redis_url)
    publisher.publish(record(0, "2026-11-23T09:10:00.000Z", read=100, written=80, dups=15, dead=3, filtered=2))
    publisher.publish(record(1, "2026-11-23T09:50:00.000Z", read=50, written=50, dups=0, dead=0, filtered=0))
    # An hour whose counts do not add up: 7 events read that no count accounts for.
    publisher.publish(record(2, "2026-11-23T10:05:00.000Z", read=40, written=30, dups=3, dead=0, filtered=0))
    return audited_pipeline


def rows_of(html: str) -> dict[str, list[str]]:
    """{hour: [cells]} of the proof table."""
    out = {}
    for hour, body in re.findall(r'<tr data-hour="([^"]+)">(.*?)</tr>', html, re.S):
        out[hour[:13]] = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", body, re.S)]
    return out


def test_the_pipeline_page_loads_the_proof_panel(client, owner, audited_pipeline):
    client.force_login(owner)
    page = client.get(f"/pipelines/{audited_pipeline.pk}/").content.decode()
    assert f'hx-get="/pipelines/{audited_pipeline.pk}/proof/"' in page


def test_the_proof_adds_up_per_hour_and_shows_the_audit_with_its_query(client, owner, published, pipeline_table, ch):
    insert_orders(ch, pipeline_table, [1, 2, 3])
    services.audit_check(audited_table=services.audited_table_sync_pipeline(pipeline=published))
    client.force_login(owner)

    html = client.get(f"/pipelines/{published.pk}/proof/").content.decode()

    rows = rows_of(html)
    assert rows["2026-11-23T09"][1:7] == ["150", "130", "15", "3", "2", "0"]
    assert rows["2026-11-23T09"][7] == "= adds up"
    assert rows["2026-11-23T10"][7] == "7 unaccounted"
    assert "0 duplicate keys</strong> in the last hour" in html
    assert "0 duplicate keys</strong> in the last 6 hours" in html
    assert "GROUP BY `order_id`" in html and "INTERVAL 3600 SECOND" in html


def test_the_proof_counts_duplicates_that_are_there(client, owner, published, pipeline_table, ch):
    insert_orders(ch, pipeline_table, [1, 1, 2])
    services.audit_check(audited_table=services.audited_table_sync_pipeline(pipeline=published))
    client.force_login(owner)
    html = client.get(f"/pipelines/{published.pk}/proof/").content.decode()
    assert "1 duplicate key</strong> in the last hour" in html and "2 rows" in html


def test_before_any_batch_or_audit_the_panel_says_so(client, owner, audited_pipeline, redis_url, settings):
    settings.REDIS_URL = redis_url
    client.force_login(owner)
    html = client.get(f"/pipelines/{audited_pipeline.pk}/proof/").content.decode()
    assert 'id="proof-empty"' in html and "starts once the pipeline runs." in html


def test_another_users_proof_is_404(client, other, audited_pipeline):
    client.force_login(other)
    assert client.get(f"/pipelines/{audited_pipeline.pk}/proof/").status_code == 404


def test_the_audits_page_adds_a_table_and_shows_its_results(client, owner, ch_conn, pipeline_table, ch):
    client.force_login(owner)
    form = {
        "connection": ch_conn.pk,
        "database": pipeline_table.database,
        "table": pipeline_table.table,
        "key_columns": "order_id, nope",
        "time_column": "_cf_ingested_at",
        "extra_window": "2h",
    }
    response = client.post("/audits/", form)
    assert response.status_code == 200
    html = response.content.decode()
    assert re.search(r'id="field-key_columns".*?has no column nope', html, re.S)
    assert 'class="field has-error" id="field-key_columns"' in html
    assert not AuditedTable.objects.exists()

    response = client.post("/audits/", {**form, "key_columns": "order_id", "extra_window": "2x"})
    assert 'class="field has-error" id="field-extra_window"' in response.content.decode()

    response = client.post("/audits/", {**form, "key_columns": "order_id"})
    audited = AuditedTable.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/audits/{audited.pk}/"
    assert audited.windows == [3600, 7200]

    insert_orders(ch, pipeline_table, [4, 4])
    services.audit_check(audited_table=audited)
    detail = client.get(f"/audits/{audited.pk}/").content.decode()
    assert "1 duplicate key</strong> in the last hour" in detail
    assert "1 duplicate key</strong> in the last 2 hours" in detail
    assert detail.count("<tr><td") >= 2
    listing = client.get("/audits/").content.decode()
    assert f"{pipeline_table.database}.orders" in listing


def test_another_users_audit_page_is_404_and_their_connection_is_not_offered(
    client, other, owner, ch_conn, pipeline_table
):
    audited = services.audited_table_create(
        owner=owner,
        connection=ch_conn,
        database=pipeline_table.database,
        table="orders",
        key_columns=["order_id"],
        time_column="_cf_ingested_at",
    )
    client.force_login(other)
    assert client.get(f"/audits/{audited.pk}/").status_code == 404
    assert client.post(f"/audits/{audited.pk}/delete/").status_code == 404
    page = client.get("/audits/").content.decode()
    assert ch_conn.name not in page and pipeline_table.database not in page
    response = client.post(
        "/audits/",
        {"connection": ch_conn.pk, "table": "orders", "key_columns": "order_id", "time_column": "_cf_ingested_at"},
    )
    assert 'has-error" id="field-connection"' in response.content.decode()
    assert AuditedTable.objects.count() == 1
