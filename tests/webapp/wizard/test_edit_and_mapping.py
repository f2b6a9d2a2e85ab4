"""Editing a pipeline in the wizard keeps what the wizard does not show, opens on the pipeline's own table, and
the wizard proposes the same mapping as the API (one implementation, webapp/pipelines/mapping.py).

The edits are walked as a user would: open each step, press Next with what the page shows (the form as a
browser would submit it), save on the review step.
"""

from __future__ import annotations

import copy
import re
import uuid

import clickhouse_connect
import pytest
from django.urls import reverse

from tests.webapp.heavy import page_answered
from tests.webapp.wizard.html_forms import form_data, form_pairs
from tests.webapp.wizard.test_wizard_steps import alerts, step_url, submit, walk_to_dedup, walk_to_sample
from webapp.wizard.models import WizardDraft

pytestmark = pytest.mark.django_db

STEPS = ("kafka", "topics", "sample", "dedup", "join", "transform", "clickhouse", "mapping", "review")


def clickhouse_command(server, sql: str) -> None:
    client = clickhouse_connect.get_client(host=server.host, port=server.port)
    try:
        client.command(sql)
    finally:
        client.close()


def api_pipeline(api, *, kafka_connection, clickhouse_connection, topic: str, table: str) -> dict:
    """A pipeline created through the API with the settings the wizard does not show."""
    spec = {
        "source": {
            "topics": [topic],
            "fields": [
                {"path": "event_id", "type": "uuid"},
                {"path": "email", "type": "string"},
                {"path": "created_at", "type": "datetime"},
            ],
            "max_records_per_batch": 1234,
        },
        "dedup": {"keys": ["event_id"], "window": "2h", "state_store": "memory"},
        "sink": {
            "clickhouse": {"database": "default"},
            "table": table,
            "create_table": True,
            "engine": "ReplacingMergeTree",
            "order_by": ["event_id"],
            "columns": [
                {"field": "event_id", "column": "event_id", "type": "UUID"},
                {"field": "email", "column": "email_address", "type": "String"},
                {"field": "created_at", "column": "created_at", "type": "DateTime64(3, 'UTC')"},
            ],
            "dlq_table": f"{table}_dead",
            "insert_dedup_window": 500,
        },
    }
    response = api.post(
        "/api/v1/pipelines/",
        {
            "name": f"api-{table}",
            "kafka_connection": kafka_connection.pk,
            "clickhouse_connection": clickhouse_connection.pk,
            "spec": spec,
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    return response.json()


def page_data(client, draft, step: str) -> dict[str, list[str]]:
    """The step's form as its page shows it, with what the page loads by htmx (the table list) added."""
    response = client.get(step_url(draft, step))
    assert response.status_code == 200, (step, response.status_code)
    html = response.content.decode()
    data = form_data(html)
    if step == "clickhouse" and "database" in data:
        tables = client.get(
            reverse("wizard:clickhouse_tables", kwargs={"draft_id": draft.pk}), {"database": data["database"][0]}
        ).content.decode()
        data.update(form_data(tables, form_id=None))
    return data


def walk_edit(client, pipeline_id: int, changes: dict[str, dict[str, list[str]]], action: str = "save"):
    """Open the edit, press Next on every step with what it shows (plus `changes` per step), then save."""
    response = client.get(reverse("wizard:wizard_edit", kwargs={"pk": pipeline_id}))
    assert response.status_code == 302
    draft = WizardDraft.objects.get(pipeline_id=pipeline_id)
    for step in STEPS:
        data = {**page_data(client, draft, step), **changes.get(step, {})}
        data["action"] = [action if step == "review" else "next"]
        response = client.post(step_url(draft, step), data)
        assert response.status_code == 302, (step, alerts(response))
    return response


def test_an_edit_in_the_wizard_keeps_the_settings_it_does_not_show(
    owner_client, api, kafka_connection, clickhouse_connection, users_topic
):
    table = f"never_deployed_{uuid.uuid4().hex[:6]}"
    created = api_pipeline(
        api,
        kafka_connection=kafka_connection,
        clickhouse_connection=clickhouse_connection,
        topic=users_topic,
        table=table,
    )

    stored = created["spec"]
    # An earlier version's `state_store` is read and never written back; the settings the wizard hides are kept.
    assert "state_store" not in stored["dedup"] and stored["source"]["max_records_per_batch"] == 1234
    assert stored["sink"]["dlq_table"] == f"{table}_dead" and 500 in stored["sink"].values()  # the insert window

    walk_edit(owner_client, created["id"], {"dedup": {"window": ["6h"]}})

    spec = api.get(f"/api/v1/pipelines/{created['id']}/").json()["spec"]
    # The one change made in the wizard; every other field, shown or not, is as the API stored it.
    assert spec["dedup"]["window"] == "6h"
    expected = copy.deepcopy(stored)
    expected["dedup"]["window"] = "6h"
    assert spec == expected
    versions = api.get(f"/api/v1/pipelines/{created['id']}/versions/").json()
    assert [v["number"] for v in versions] == [2, 1]


def test_editing_a_deployed_pipeline_opens_on_its_own_table(
    owner_client, api, kafka_connection, clickhouse_connection, clickhouse_server, users_topic
):
    table = f"deployed_{uuid.uuid4().hex[:6]}"
    created = api_pipeline(
        api,
        kafka_connection=kafka_connection,
        clickhouse_connection=clickhouse_connection,
        topic=users_topic,
        table=table,
    )
    # What the job does on its first start: the table now exists, remembering the spec's 500 inserts (so the
    # table step's exactly-once check passes, as it does for a table the job created).
    clickhouse_command(
        clickhouse_server,
        f"CREATE TABLE default.{table} (event_id UUID, email_address String, created_at DateTime64(3, 'UTC')) "
        "ENGINE = ReplacingMergeTree ORDER BY event_id SETTINGS non_replicated_deduplication_window = 500",
    )

    owner_client.get(reverse("wizard:wizard_edit", kwargs={"pk": created["id"]}))
    draft = WizardDraft.objects.get(pipeline_id=created["id"])
    shown = page_data(owner_client, draft, "clickhouse")
    assert shown["table_mode"] == ["existing"]
    assert shown["table"] == [table]

    walk_edit(owner_client, created["id"], {"dedup": {"window": ["6h"]}})

    spec = api.get(f"/api/v1/pipelines/{created['id']}/").json()["spec"]
    assert spec["sink"]["table"] == table
    expected = copy.deepcopy(created["spec"])
    expected["dedup"]["window"] = "6h"
    assert spec == expected  # the same table, columns, ORDER BY, and how the job creates the table


def mapping_rows_shown(html: str) -> dict[str, tuple[str, str, bool]]:
    """field -> (column, type, included) as the mapping page shows them."""
    pairs = form_pairs(html)
    values = dict(pairs)
    rows = {}
    for name, field in pairs:
        match = re.fullmatch(r"m(\d+)-field", name)
        if match:
            i = match.group(1)
            included = f"m{i}-include" in values if any(n.endswith("-include") for n, _ in pairs) else True
            rows[field] = (values.get(f"m{i}-column", ""), values.get(f"m{i}-type", ""), included)
    return rows


def walk_to_destination(client, kafka_connection, clickhouse_connection, topic, fields: dict | None = None):
    draft = walk_to_sample(client, kafka_connection, topic)
    if fields is None:
        fetched = page_answered(
            client,
            client.post(
                reverse("wizard:sample_fetch", kwargs={"draft_id": draft.pk}), {"count": 20, "position": "oldest"}
            ),
        ).content.decode()
        fields_post = {**page_data(client, draft, "sample"), **form_data(fetched, form_id=None)}
    else:
        fields_post = {"count": ["20"], "position": ["oldest"], **fields}
    response = submit(client, draft, "sample", fields_post)
    assert response.status_code == 302, alerts(response)
    assert submit(client, draft, "dedup", {"enabled": "off"}).status_code == 302
    assert submit(client, draft, "transform", {"filter": ""}).status_code == 302
    response = submit(
        client, draft, "clickhouse", {"source": "saved", "connection": clickhouse_connection.pk}, action="connect"
    )
    assert response.status_code == 200, alerts(response)
    return draft


def test_the_wizard_never_maps_into_materialized_or_alias_columns_like_the_api(
    owner_client, api, kafka_connection, clickhouse_connection, clickhouse_server, users_topic
):
    table = f"computed_{uuid.uuid4().hex[:6]}"
    clickhouse_command(
        clickhouse_server,
        f"CREATE TABLE default.{table} (event_id UUID, email String, plan String ALIAS 'free', "
        "age UInt32 MATERIALIZED 7) ENGINE = MergeTree ORDER BY event_id",
    )
    draft = walk_to_destination(owner_client, kafka_connection, clickhouse_connection, users_topic)
    response = submit(
        owner_client,
        draft,
        "clickhouse",
        # The table keeps no recent inserts: at-least-once, accepted (the mapping is what this test is about).
        {"database": "default", "table_mode": "existing", "table": table, "accept_at_least_once": "on"},
    )
    assert response.status_code == 302, alerts(response)

    html = owner_client.get(step_url(draft, "mapping")).content.decode()
    shown = mapping_rows_shown(html)
    assert shown["plan"][0] == "" and shown["age"][0] == ""  # ClickHouse computes those columns
    assert shown["event_id"][0] == "event_id" and shown["email"][0] == "email"
    # The column choices offer only columns an insert can write.
    assert not re.search(r'<option value="(plan|age)"', html)

    suggestion = api.post(
        "/api/v1/pipelines/mapping/",
        {
            "fields": [
                {"path": "event_id", "type": "uuid"},
                {"path": "email", "type": "string"},
                {"path": "plan", "type": "string"},
                {"path": "age", "type": "int"},
            ],
            "clickhouse_connection": clickhouse_connection.pk,
            "database": "default",
            "table": table,
        },
        format="json",
    ).json()
    api_columns = {c["field"]: c["column"] for c in suggestion["columns"]}
    wizard_columns = {field: row[0] for field, row in shown.items() if row[0]}
    assert wizard_columns == api_columns == {"event_id": "event_id", "email": "email"}

    # Mapping a field into a computed column by hand is refused next to the row.
    data = form_data(html)
    index = next(n.split("-")[0] for n, v in form_pairs(html) if n.endswith("-field") and v == "plan")
    data[f"{index}-column"] = ["plan"]
    response = submit(owner_client, draft, "mapping", data)
    assert response.status_code == 422
    assert any("ALIAS" in a and "plan" in a for a in alerts(response)), alerts(response)

    response = submit(owner_client, draft, "mapping", form_data(html))
    assert response.status_code == 302, alerts(response)


def test_the_wizard_and_the_api_propose_the_same_nullable_types(
    owner_client, api, kafka_connection, clickhouse_connection, users_topic
):
    fields = [
        ("order_key", "string", True),  # sometimes missing, but in ORDER BY: cannot be Nullable
        ("payload", "json", True),  # a sometimes-missing JSON document
        ("amount", "float", True),
        ("seen_at", "datetime", False),
    ]
    posted = {}
    for i, (path, kind, nullable) in enumerate(fields):
        posted.update({f"f{i}-path": path, f"f{i}-type": kind, f"f{i}-manual": "1"})
        if nullable:
            posted[f"f{i}-nullable"] = "on"
    draft = walk_to_destination(owner_client, kafka_connection, clickhouse_connection, users_topic, fields=posted)
    response = submit(
        owner_client,
        draft,
        "clickhouse",
        {
            "database": "default",
            "table_mode": "new",
            "new_table": f"n_{uuid.uuid4().hex[:6]}",
            "order_by": ["order_key"],
        },
    )
    assert response.status_code == 302, alerts(response)

    shown = mapping_rows_shown(owner_client.get(step_url(draft, "mapping")).content.decode())
    wizard_types = {field: row[1] for field, row in shown.items() if row[2]}
    suggestion = api.post(
        "/api/v1/pipelines/mapping/",
        {
            "fields": [{"path": p, "type": t, "nullable": n} for p, t, n in fields],
            "order_by": ["order_key"],
        },
        format="json",
    )
    assert suggestion.status_code == 200, suggestion.json()
    api_types = {c["field"]: c["type"] for c in suggestion.json()["columns"]}
    assert (
        wizard_types
        == api_types
        == {
            "order_key": "String",
            "payload": "Nullable(String)",
            "amount": "Nullable(Float64)",
            "seen_at": "DateTime64(3, 'UTC')",
        }
    )


def test_the_filter_step_checks_computed_fields_by_the_spec_rules(owner_client, kafka_connection, users_topic):
    draft = walk_to_dedup(owner_client, kafka_connection, users_topic)
    assert submit(owner_client, draft, "dedup", {"enabled": "off"}).status_code == 302
    # `address` is the parent of the sampled `address.city`: the spec refuses it, so the step does too.
    response = submit(
        owner_client,
        draft,
        "transform",
        {"filter": "", "c0-name": "address", "c0-expression": "upper(email)", "c0-type": "string"},
    )
    assert response.status_code == 422
    assert "'address' clashes with a field of the same name" in " ".join(alerts(response)).replace("&#x27;", "'")
    response = submit(
        owner_client,
        draft,
        "transform",
        {"filter": "", "c0-name": "address_upper", "c0-expression": "upper(email)", "c0-type": "string"},
    )
    assert response.status_code == 302, alerts(response)


def test_the_review_of_a_running_pipelines_edit_shows_what_changes_and_reads_on_from_its_checkpoint(
    owner_client, api, kafka_connection, clickhouse_connection, clickhouse_server, users_topic
):
    from webapp.pipelines.models import Pipeline, PipelineRun

    table = f"running_{uuid.uuid4().hex[:6]}"
    created = api_pipeline(
        api, kafka_connection=kafka_connection, clickhouse_connection=clickhouse_connection, topic=users_topic,
        table=table,
    )  # fmt: skip
    clickhouse_command(
        clickhouse_server,
        f"CREATE TABLE default.{table} (event_id UUID, email_address String, created_at DateTime64(3, 'UTC')) "
        "ENGINE = ReplacingMergeTree ORDER BY event_id SETTINGS non_replicated_deduplication_window = 500",
    )
    # As the worker leaves a pipeline whose version 1 runs: deployed, with a run.
    pipeline = Pipeline.objects.get(pk=created["id"])
    Pipeline.objects.filter(pk=pipeline.pk).update(status="running", deployed_version=pipeline.current_version)
    PipelineRun.objects.create(pipeline=pipeline, version=pipeline.current_version)

    owner_client.get(reverse("wizard:wizard_edit", kwargs={"pk": pipeline.pk}))
    draft = WizardDraft.objects.get(pipeline_id=pipeline.pk)
    for step in STEPS[:-1]:
        data = {**page_data(owner_client, draft, step), **({"window": ["6h"]} if step == "dedup" else {})}
        response = owner_client.post(step_url(draft, step), {**data, "action": ["next"]})
        assert response.status_code == 302, (step, alerts(response))
    page = owner_client.get(step_url(draft, "review")).content.decode()

    # No "read from the oldest" for a pipeline that reads on from its checkpoint.
    assert 'type="radio" name="starting_offsets"' not in page
    assert "From its checkpoint: where version 1 stopped reading." in page
    # The change, against the running version, before anything is saved.
    assert "What changes from version 1 (running)" in page
    row = re.search(r'<tr data-path="dedup.window">(.*?)</tr>', page, re.S)
    assert row and "<code>2h</code>" in row.group(1) and "<code>6h</code>" in row.group(1), page
    assert page.count('<tr data-path="') == 1  # only what was changed
    assert "Saving redeploys the pipeline with it." in page
