"""The review step shows the chosen window's expected dedup state (keys, MB on disk, MB of memory) at the rate the
key advice measured, and warns before deploy when this machine cannot hold it."""

from __future__ import annotations

import re
import uuid

import pytest
from django.urls import reverse

from tests.webapp.wizard.test_join_step import _create_topic as create_topic
from webapp.wizard.models import WizardDraft

pytestmark = pytest.mark.django_db

MEASURED = {"keys": ["event_id"], "time": "ingestion", "event_time_field": None}


def review_page(client, owner, *, window: str, events_per_second: float, unique_share: float = 1.0) -> str:
    advice = {
        "window": "1h",
        "lower_bound": False,
        "state_bytes": None,
        "events_per_second": events_per_second,
        "unique_share": unique_share,
        **MEASURED,
    }
    spec = {"source": {"topics": ["events"]}, "dedup": {"keys": ["event_id"], "window": window}}
    draft = WizardDraft.objects.create(
        user=owner, data={"spec": spec, "dedup": {"advice": advice}}, step="review", reached="review"
    )
    response = client.get(reverse("wizard:step", kwargs={"draft_id": draft.pk, "step": "review"}))
    assert response.status_code == 200
    return response.content.decode()


def text_of(html: str, element_id: str) -> str:
    match = re.search(rf'id="{element_id}"[^>]*>(.*?)</(dd|p|div)>', html, flags=re.S)
    assert match, f"#{element_id} not on the page"
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", match.group(1))).strip()


def test_a_seven_day_window_at_200_events_per_second_shows_its_size(owner_client, owner, a_machine_with_room):
    html = review_page(owner_client, owner, window="7d", events_per_second=200)
    assert "Dedup state for 7d" in html
    assert text_of(html, "state-keys") == "120,960,000"
    assert text_of(html, "state-disk") == "19.2 GB"  # 170 bytes a key, in the warnings' units
    assert text_of(html, "state-memory") == "3.75 GB (a 1 GB heap, RocksDB bounded at 1.5 GB)"
    assert "at 200 events/s measured on the topic by the key advice, 100% of them new keys" in text_of(
        html, "state-basis"
    )
    assert 'id="state-warning"' not in html


def test_a_one_hour_window_at_20k_events_per_second_shows_72_million_keys(owner_client, owner):
    html = review_page(owner_client, owner, window="1h", events_per_second=20_000)
    assert text_of(html, "state-keys") == "72,000,000"
    assert text_of(html, "state-disk") == "11.4 GB"
    assert text_of(html, "state-memory") == "3.19 GB (a 1 GB heap, RocksDB bounded at 960 MB)"
    assert text_of(html, "state-trigger").startswith("every 500 milliseconds")  # batches back to back


def test_a_light_pipeline_shows_the_light_heap(owner_client, owner):
    html = review_page(owner_client, owner, window="1h", events_per_second=100)
    assert text_of(html, "state-keys") == "360,000"
    assert text_of(html, "state-memory") == "1.97 GB (a 512 MB heap, RocksDB bounded at 384 MB)"
    # A light pipeline's batches wait for about 500 events: the analyst sees the delay that comes with it.
    assert text_of(html, "state-trigger") == (
        "every 5 seconds (rows reach ClickHouse within about that, plus the batch's own time)"
    )


def test_a_state_no_disk_here_holds_is_warned_before_deploy(owner_client, owner):
    html = review_page(owner_client, owner, window="7d", events_per_second=100_000)
    warning = text_of(html, "state-warning")
    assert "60,480,000,000 keys" in warning and "Choose a shorter window" in warning


def test_without_a_measured_rate_the_review_says_how_to_get_one(owner_client, owner):
    spec = {"source": {"topics": ["events"]}, "dedup": {"keys": ["event_id"], "window": "1h"}}
    draft = WizardDraft.objects.create(user=owner, data={"spec": spec}, step="review", reached="review")
    html = owner_client.get(reverse("wizard:step", kwargs={"draft_id": draft.pk, "step": "review"})).content.decode()
    assert "No rate known yet" in text_of(html, "state-basis")


def test_the_state_is_sized_at_the_topics_live_rate_when_the_advice_averaged_a_quiet_past(
    owner_client, owner, kafka_connection, kafka_bootstrap, a_machine_with_room
):
    # The advice's 0.5/s is its sample's average over hours; the topic took 600 events in the last minute.
    events = [{"event_id": f"e{i}"} for i in range(600)]  # written now
    topic = create_topic(kafka_bootstrap, f"busy_{uuid.uuid4().hex[:8]}", events, retention_ms=3_600_000)
    advice = {"window": "1h", "lower_bound": False, "state_bytes": None, "events_per_second": 0.5, **MEASURED}
    spec = {"source": {"topics": [topic]}, "dedup": {"keys": ["event_id"], "window": "1h"}}
    draft = WizardDraft.objects.create(
        user=owner,
        data={
            "spec": spec,
            "kafka": {"connection_id": kafka_connection.pk},
            "dedup": {"advice": {**advice, "unique_share": 0.5}},
        },
        step="review",
        reached="review",
    )
    html = owner_client.get(reverse("wizard:step", kwargs={"draft_id": draft.pk, "step": "review"})).content.decode()
    basis = text_of(html, "state-basis")
    rate = float(re.search(r"at ([\d,.]+) events/s", basis).group(1).replace(",", ""))
    assert rate >= 2, basis  # 600 events over the last 1 to 5 minutes, not the advice's 0.5/s
    assert "the topic's rate over the last minutes, 50% of them new keys as the key advice measured" in basis
    keys = int(text_of(html, "state-keys").replace(",", ""))
    assert abs(keys - rate * 3600 * 0.5) <= 0.05 * keys  # the live rate, with the advice's share of new keys
    assert "The memory is mostly the job's own, whatever the state" in text_of(html, "state-memory-note")
