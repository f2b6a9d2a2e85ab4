"""The wizard's join step on the server, against the real broker and ClickHouse: the right topic's sample and
schema, the preview of joined rows, each bad input's error next to its field (the API's own checks), and the walk
to a saved pipeline: with a join its spec is version 2 with the join and a mapping named by side; skipped, it is
today's version 1."""

from __future__ import annotations

import json
import re
import time
import uuid

import pytest
from django.urls import reverse

from tests.webapp.heavy import page_answered
from tests.webapp.wizard.test_wizard_steps import alerts, mapping_post, sample_fields_post, step_url, submit
from tests.webapp.wizard.test_wizard_steps import walk_to_dedup as walk_to_left_sample
from webapp.pipelines.models import Pipeline
from webapp.wizard.models import WizardDraft

pytestmark = pytest.mark.django_db

ORDERS = [{"order_id": f"o-{i}", "amount": 10.0 + i, "customer": {"id": f"c{i % 2}"}} for i in range(1, 5)]
# o-1 paid, o-2 paid twice (a duplicate payment event), o-3 and o-4 not paid.
PAYMENTS = [
    {"payment_id": "p-1", "order_id": "o-1", "paid": 11.0},
    {"payment_id": "p-2", "order_id": "o-2", "paid": 12.0},
    {"payment_id": "p-2", "order_id": "o-2", "paid": 12.0},
]
WEEK_MS = 7 * 86400 * 1000


def _create_topic(
    bootstrap: str, name: str, events: list[dict], retention_ms: int, *, at_ms: list[int] | None = None
) -> str:
    """`name` with `events`, written now or each at its time of `at_ms` (the Kafka timestamps)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, 1, 1, config={"retention.ms": str(retention_ms)})]).values():
        future.result(timeout=30)
    if events:
        producer = Producer({"bootstrap.servers": bootstrap})
        for i, event in enumerate(events):
            producer.produce(name, json.dumps(event).encode(), **({"timestamp": at_ms[i]} if at_ms else {}))
        assert producer.flush(10) == 0
    return name


@pytest.fixture(scope="module")
def join_topics(kafka_bootstrap) -> dict[str, str]:
    """`orders` (left); `payments` (7 days' retention); `payments_short` (10 minutes' retention); `payments_none`
    (no event)."""
    suffix = uuid.uuid4().hex[:8]
    return {
        "orders": _create_topic(kafka_bootstrap, f"orders_{suffix}", ORDERS, WEEK_MS),
        "payments": _create_topic(kafka_bootstrap, f"payments_{suffix}", PAYMENTS, WEEK_MS),
        "payments_short": _create_topic(kafka_bootstrap, f"payments_short_{suffix}", PAYMENTS, 600 * 1000),
        "payments_none": _create_topic(kafka_bootstrap, f"payments_none_{suffix}", [], WEEK_MS),
    }


def walk_to_join(client, kafka_connection, join_topics) -> WizardDraft:
    """Steps 1-4 on the orders: sampled, deduplicated by order_id; the draft is at the join step."""
    draft = walk_to_left_sample(client, kafka_connection, join_topics["orders"])
    response = submit(
        client, draft, "dedup", {"enabled": "on", "keys": ["order_id"], "window": "1h", "time_basis": "ingestion"}
    )
    assert response.status_code == 302, alerts(response)
    draft.refresh_from_db()
    assert draft.step == "join"
    return draft


def fetch_right(client, draft, topic: str, *, position: str = "oldest") -> str:
    url = reverse("wizard:join_sample_fetch", kwargs={"draft_id": draft.pk})
    response = client.post(url, {"enabled": "on", "right_topic": topic, "count": 20, "position": position})
    assert response.status_code == 200
    assert 'id="right-sample-reading"' in response.content.decode()  # the worker reads the events
    response = page_answered(client, response)
    assert response.status_code == 200
    return response.content.decode()


RIGHT_FIELDS = [
    {"path": "payment_id", "type": "string", "nullable": False},
    {"path": "order_id", "type": "string", "nullable": False},
    {"path": "paid", "type": "float", "nullable": False},
]


def join_post(topic: str, *, fields=RIGHT_FIELDS, window: str = "30m", kind: str = "left") -> dict:
    """The join step's form as a user fills it: the joined topic, its fields, its dedup by payment_id, the key
    order_id = order_id, the window and type."""
    rows = {key.replace("f", "r", 1): value for key, value in sample_fields_post(fields).items()}
    return {
        "enabled": "on",
        "right_topic": topic,
        "count": 20,
        "position": "oldest",
        **rows,
        "right-enabled": "on",
        "right-keys": ["payment_id"],
        "right-window": "1h",
        "right-time_basis": "ingestion",
        "k0-left": "order_id",
        "k0-right": "order_id",
        "window": window,
        "type": kind,
        "time": "ingestion",
    }


def field_html(html: str, element_id: str) -> str:
    """The markup of the form field `element_id` (its label, input and errors)."""
    match = re.search(rf'<div class="field[^"]*" id="{element_id}">(.*?)</div>\s*(?:<div|$)', html, flags=re.S)
    assert match, f"no {element_id} in the page"
    return match.group(0)


def test_the_right_topics_sample_gives_its_fields_and_the_preview_joins_the_two_samples(
    owner_client, kafka_connection, join_topics
):
    draft = walk_to_join(owner_client, kafka_connection, join_topics)
    page = owner_client.get(step_url(draft, "join")).content.decode()
    assert "Join another topic" in page and "step 5 of 9" in page
    assert f'<option value="{join_topics["payments"]}"' in page
    assert f'<option value="{join_topics["orders"]}"' not in page  # not joined with itself

    html = fetch_right(owner_client, draft, join_topics["payments"])
    assert html.count('class="sample"') == len(PAYMENTS)
    assert 'name="r0-path" value="payment_id"' in html and 'name="r2-path" value="paid"' in html
    assert '<option value="payment_id">' in html  # offered as a key of the joined topic

    url = reverse("wizard:join_preview", kwargs={"draft_id": draft.pk})
    html = owner_client.post(url, join_post(join_topics["payments"])).content.decode()
    table = re.search(r'<table id="join-preview-table">.*?</table>', html, flags=re.S).group(0)
    rows = [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)[1:]]
    header = re.findall(r"<th><code>(.*?)</code></th>", table)
    assert set(header) == {
        *("left.order_id", "left.amount", "left.customer.id"),
        *("right.payment_id", "right.order_id", "right.paid"),
    }
    paid = {row[header.index("left.order_id")]: row[header.index("right.payment_id")] for row in rows}
    # A left join: every order, the unpaid ones with empty payment fields. o-2's duplicate payment is one event in
    # the engine (dedup first), but the preview joins the raw samples: it shows o-2 with each.
    assert paid["o-1"] == "p-1" and paid["o-2"] == "p-2"
    assert paid["o-3"] == paid["o-4"] == '<span class="muted">empty</span>'

    html = owner_client.post(url, join_post(join_topics["payments"], kind="inner")).content.decode()
    assert "o-3" not in html and "o-1" in html

    # Without the joined topic's dedup key, the preview names that piece, not a generic "choose the topic".
    no_key = {k: v for k, v in join_post(join_topics["payments"]).items() if k != "right-keys"}
    html = owner_client.post(url, no_key).content.decode()
    missing = re.search(r'<ul id="join-preview-missing">(.*?)</ul>', html, flags=re.S)
    assert missing and "Deduplication of the joined topic" in missing.group(1), html


def preview_pairs(html: str) -> list[tuple[str, str]]:
    """The preview's joined rows as (left.order_id, right.payment_id), in order."""
    table = re.search(r'<table id="join-preview-table">.*?</table>', html, flags=re.S)
    assert table, html
    header = re.findall(r"<th><code>(.*?)</code></th>", table.group(0))
    rows = [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", table.group(0), flags=re.S)]
    return [(row[header.index("left.order_id")], row[header.index("right.payment_id")]) for row in rows[1:]]


def test_the_joined_topic_is_sampled_over_the_time_of_the_first_sample_so_joining_events_meet(
    owner_client, kafka_connection, kafka_bootstrap
):
    """The orders were written an hour ago, their payments a few seconds after each; since then the payments topic
    has had 30 newer payments of other orders. Its newest 20 join none of the orders; read over the orders' time,
    the sample holds the payments that join, and the step says how it read it."""
    suffix = uuid.uuid4().hex[:8]
    hour_ago = int(time.time() * 1000) - 3600 * 1000
    orders = _create_topic(
        kafka_bootstrap, f"orders_{suffix}", ORDERS, WEEK_MS, at_ms=[hour_ago + i * 1000 for i in range(len(ORDERS))]
    )
    newer = [{"payment_id": f"p-new-{i}", "order_id": f"o-new-{i}", "paid": 1.0} for i in range(30)]
    payments = _create_topic(
        kafka_bootstrap,
        f"payments_{suffix}",
        PAYMENTS + newer,
        WEEK_MS,
        at_ms=[hour_ago + 10_000 + i * 1000 for i in range(len(PAYMENTS))] + [int(time.time() * 1000)] * len(newer),
    )
    late = _create_topic(kafka_bootstrap, f"payments_late_{suffix}", newer, WEEK_MS)
    draft = walk_to_join(owner_client, kafka_connection, {"orders": orders})
    preview = reverse("wizard:join_preview", kwargs={"draft_id": draft.pk})
    page = owner_client.get(step_url(draft, "join")).content.decode()
    assert re.search(r'<input type="radio" name="position" value="span"[^>]*checked', page)  # the default

    html = fetch_right(owner_client, draft, payments, position="newest")  # as the step read it before
    assert html.count('class="sample"') == 20 and "p-1" not in html and 'id="right-sample-time"' not in html
    assert 'id="join-preview-none"' in owner_client.post(preview, join_post(payments, kind="inner")).content.decode()

    html = fetch_right(owner_client, draft, payments, position="span")
    words = f"Joined topic sampled over the same 3 s as {orders}: 3 events."
    assert f'<p class="small" id="right-sample-time">{words}</p>' in html
    assert html.count('class="sample"') == 3 and "p-new-" not in html
    post = {**join_post(payments, kind="inner"), "position": "span"}
    html = owner_client.post(preview, post).content.decode()
    assert f'<p class="small" id="join-preview-sample">{words}</p>' in html
    assert preview_pairs(html) == [("o-1", "p-1"), ("o-2", "p-2"), ("o-2", "p-2")]  # o-2 with each of its two

    html = fetch_right(owner_client, draft, late, position="span")
    words = f"No events of {late} in the time of the {orders} sample; showing its newest 20."
    assert f'<p class="small" id="right-sample-time">{words}</p>' in html
    assert html.count('class="sample"') == 20
    html = owner_client.post(preview, {**join_post(late, kind="inner"), "position": "span"}).content.decode()
    assert f'<p class="small" id="join-preview-sample">{words}</p>' in html and 'id="join-preview-none"' in html


def test_keys_of_different_types_are_an_error_at_the_right_key(owner_client, kafka_connection, join_topics):
    draft = walk_to_join(owner_client, kafka_connection, join_topics)
    fetch_right(owner_client, draft, join_topics["payments"])
    fields = [dict(f, type="int") if f["path"] == "order_id" else f for f in RIGHT_FIELDS]
    response = submit(owner_client, draft, "join", join_post(join_topics["payments"], fields=fields))
    assert response.status_code == 422
    html = response.content.decode()
    keys = html[html.index('id="join-key-rows"') : html.index('id="join-key-template"')]
    assert 'class="field has-error"' in keys
    assert (
        "Key types differ: &#x27;order_id&#x27; is int on the right, &#x27;order_id&#x27; is string on the left; "
        "join fields of the same type" in keys
    )
    draft.refresh_from_db()
    assert draft.step == "join" and "join" not in draft.data["spec"]


def test_a_window_longer_than_a_topics_retention_is_an_error_at_the_window(owner_client, kafka_connection, join_topics):
    draft = walk_to_join(owner_client, kafka_connection, join_topics)
    fetch_right(owner_client, draft, join_topics["payments_short"])
    response = submit(owner_client, draft, "join", join_post(join_topics["payments_short"], window="1h"))
    assert response.status_code == 422
    window = field_html(response.content.decode(), "field-window")
    assert "has-error" in window
    assert (
        f"The window (1h) is longer than the retention of the right topic &#x27;{join_topics['payments_short']}&#x27; "
        "(10m): shorten the window or raise the topic&#x27;s retention.ms" in window
    )
    response = submit(owner_client, draft, "join", join_post(join_topics["payments_short"], window="5m"))
    assert response.status_code == 302, alerts(response)


def test_a_right_topic_without_events_is_an_error_at_the_topic(owner_client, kafka_connection, join_topics):
    draft = walk_to_join(owner_client, kafka_connection, join_topics)
    html = fetch_right(owner_client, draft, join_topics["payments_none"])
    assert 'id="right-empty-topic"' in html
    # The fields typed by hand do not make up for the missing events: the join could not be checked.
    response = submit(owner_client, draft, "join", join_post(join_topics["payments_none"]))
    assert response.status_code == 422
    topic = field_html(response.content.decode(), "field-right_topic")
    assert (
        f"No events in the sample of &#x27;{join_topics['payments_none']}&#x27;: the join&#x27;s fields and keys "
        "cannot be checked; produce some events to the topic first, or pick another topic" in topic
    )


def finish(client, draft, clickhouse_connection, *, table: str, order_by: str) -> tuple[Pipeline, dict[str, str]]:
    """Steps 6-9 as proposed: no filter, a new table, the proposed mapping, deployed; with the pages of the table
    and review steps."""
    assert submit(client, draft, "transform", {"filter": ""}).status_code == 302
    response = submit(
        client,
        draft,
        "clickhouse",
        {"phase": "connect", "source": "saved", "connection": clickhouse_connection.pk},
        action="connect",
    )
    assert response.status_code == 200, alerts(response)
    table_page = response.content.decode()
    destination = {
        "database": "default",
        "table_mode": "new",
        "new_table": table,
        "engine": "ReplacingMergeTree",
        "order_by": [order_by],
    }
    response = submit(client, draft, "clickhouse", destination)
    assert response.status_code == 302, alerts(response)
    response = submit(client, draft, "mapping", mapping_post(client, draft))
    assert response.status_code == 302, alerts(response)
    review_page = client.get(step_url(draft, "review")).content.decode()
    response = submit(client, draft, "review", {"name": table.replace("_", "-"), "starting_offsets": "earliest"})
    assert response.status_code == 302, alerts(response)
    return Pipeline.objects.get(name=table.replace("_", "-")), {"table": table_page, "review": review_page}


def test_finishing_the_wizard_with_a_join_saves_a_version_2_spec_with_the_join_and_a_mapping_by_side(
    owner_client, api, kafka_connection, clickhouse_connection, join_topics
):
    draft = walk_to_join(owner_client, kafka_connection, join_topics)
    fetch_right(owner_client, draft, join_topics["payments"])
    response = submit(owner_client, draft, "join", join_post(join_topics["payments"]))
    assert response.status_code == 302, alerts(response)
    html = owner_client.get(step_url(draft, "transform")).content.decode()
    assert "<code>left.amount</code>" in html and "<code>right.paid</code>" in html  # names an expression may use

    table = f"orders_paid_{uuid.uuid4().hex[:6]}"
    pipeline, pages = finish(owner_client, draft, clickhouse_connection, table=table, order_by="left.order_id")
    # The new table's ORDER BY is chosen among both sides' fields, the dedup key preselected.
    assert (
        re.search(r'value="left.order_id"[^>]*checked', pages["table"]) and 'value="right.payment_id"' in pages["table"]
    )
    review = re.search(r'<dd id="review-join">(.*?)</dd>', pages["review"], flags=re.S).group(1)
    assert re.sub(r"<[^>]+>", "", review) == (
        f"left join with {join_topics['payments']} (3 fields) on order_id = order_id, within 30m of ingestion time; "
        "its duplicates dropped by payment_id within 1h"
    )
    assert "Fix these before deploying" not in pages["review"]

    spec = api.get(f"/api/v1/pipelines/{pipeline.pk}/").json()["spec"]
    assert spec["version"] == 2
    join = spec["join"]
    assert join["source"]["topics"] == [join_topics["payments"]]
    assert join["source"]["fields"] == [{"path": f["path"], "type": f["type"]} for f in RIGHT_FIELDS]
    assert join["source"]["kafka"]["bootstrap_servers"] == kafka_connection.bootstrap_servers
    assert join["dedup"]["keys"] == ["payment_id"] and join["dedup"]["window"] == "1h"
    assert join["keys"] == [{"left": "order_id", "right": "order_id"}]
    assert (join["window"], join["type"], join["time"]) == ("30m", "left", "ingestion")
    fields = {c["field"] for c in spec["sink"]["columns"]}
    assert {"left.order_id", "left.amount", "left.customer.id", "right.payment_id", "right.paid"} <= fields
    payment = next(c for c in spec["sink"]["columns"] if c["field"] == "right.payment_id")
    assert payment["type"].startswith("Nullable(")  # empty for orders nothing matched (a left join)
    column_of = {c["field"]: c["column"] for c in spec["sink"]["columns"]}
    assert spec["sink"]["order_by"] == [column_of["left.order_id"]]

    # Editing it opens the join step with the join as saved.
    owner_client.get(reverse("wizard:wizard_edit", kwargs={"pk": pipeline.pk}))
    edit = WizardDraft.objects.get(pipeline=pipeline)
    html = owner_client.get(step_url(edit, "join")).content.decode()
    assert f'<option value="{join_topics["payments"]}" selected>' in html
    assert 'name="r2-path" value="paid"' in html and re.search(r'name="k0-right"[^>]*value="order_id"', html)


def test_skipping_the_join_gives_todays_version_1_spec(
    owner_client, kafka_connection, clickhouse_connection, join_topics
):
    draft = walk_to_join(owner_client, kafka_connection, join_topics)
    html = owner_client.get(step_url(draft, "join")).content.decode()
    assert re.search(r'<input type="radio" name="enabled" value="off"[^>]*checked', html)  # off unless chosen
    response = submit(owner_client, draft, "join", {"enabled": "off"})
    assert response.status_code == 302, alerts(response)
    table = f"orders_{uuid.uuid4().hex[:6]}"
    pipeline, _ = finish(owner_client, draft, clickhouse_connection, table=table, order_by="order_id")
    assert pipeline.stored_spec["version"] == 1
    assert pipeline.spec.join is None
    assert {c.field for c in pipeline.spec.sink.columns} >= {"order_id", "amount", "customer.id"}


def test_the_join_step_can_be_passed_by_without_saving_it(owner_client, kafka_connection, join_topics):
    """The step is optional: the step after it opens with it (a draft that never saves it has no join)."""
    draft = walk_to_join(owner_client, kafka_connection, join_topics)
    assert draft.reached == "transform"
    assert submit(owner_client, draft, "transform", {"filter": ""}).status_code == 302
    draft.refresh_from_db()
    assert draft.step == "clickhouse" and "join" not in draft.data["spec"]
