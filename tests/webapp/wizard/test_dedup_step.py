"""The dedup step's advisor on the server: a busy topic's expected dedup state, in keys and MB on disk (the sizing's
words), and no state store to choose: the state is always in RocksDB."""

from __future__ import annotations

import re
import uuid

import pytest
from django.urls import reverse

from clearflow_spec.sizing import MB, state_estimate
from tests.webapp.heavy import page_answered
from webapp.wizard.draft_spec import load_draft_spec
from webapp.wizard.models import WizardDraft
from webapp.wizard.services import draft_get_or_create, draft_save_step

pytestmark = pytest.mark.django_db

EVENTS = 100_000  # distinct 36-character keys in one second of record time: 100,000 new keys a second


def shown(html: str, element_id: str, unit: str = "") -> float:
    """The figure the page shows in the element (digits grouped by thousands)."""
    match = re.search(rf'<b id="{element_id}">([\d,.]+){unit}</b>', html)
    assert match, f"no #{element_id} figure"
    return float(match.group(1).replace(",", ""))


@pytest.fixture
def busy_topic(kafka_bootstrap) -> str:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"busy_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    for future in admin.create_topics([NewTopic(topic, num_partitions=1)]).values():
        future.result(timeout=10)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 20})
    base_ms = 1_790_000_000_000
    records = [(i, base_ms + i // 100) for i in range(EVENTS)]
    records.append((EVENTS - 1, base_ms + (EVENTS - 1) // 100 + 510))  # one copy, 510 ms later
    for key, timestamp in records:
        producer.produce(topic, value=b'{"id": "%036d"}' % key, timestamp=timestamp)
        producer.poll(0)
        if len(producer) > 50_000:
            producer.flush(30)
    assert producer.flush(30) == 0
    return topic


def test_a_large_state_is_shown_in_keys_and_mb_on_disk_with_no_store_to_choose(
    owner, owner_client, kafka_connection, busy_topic
):
    draft = draft_get_or_create(user=owner)
    draft_save_step(draft=draft, step="kafka", values={"connection_id": kafka_connection.pk}, advance=True)
    topics = load_draft_spec({"source": {"topics": [busy_topic]}})
    draft_save_step(draft=draft, step="topics", spec=topics, advance=True)
    url = reverse("wizard:key_advice", kwargs={"draft_id": draft.pk})
    html = page_answered(owner_client, owner_client.post(url, {"enabled": "on", "keys": ["id"]})).content.decode()
    # The newest 50,000 events span about a second (with the copy): some 50,000 new keys a second, kept for a
    # minute. The page sizes it as the review step does (clearflow_spec.sizing), at the rate the advice measured.
    assert 'data-recommended-window="1m"' in html
    kept = WizardDraft.objects.get(pk=draft.pk).section("dedup")["advice"]
    expected = state_estimate(
        events_per_second=kept["events_per_second"], window_seconds=60, unique_share=kept["unique_share"]
    )
    assert expected.keys > 1_000_000
    # The kept rate and share are rounded (3 and 4 decimals): the same figures within a thousandth.
    keys = shown(html, "state-estimate-keys")
    assert keys == pytest.approx(expected.keys, rel=1e-3)
    # In the review step's units (powers of 1024, three digits).
    size = re.search(r'<b id="state-estimate-disk">([\d.]+) (KB|MB|GB)</b>', html)
    assert size, "no #state-estimate-disk size"
    shown_bytes = float(size.group(1)) * {"KB": 1024, "MB": MB, "GB": 1024 * MB}[size.group(2)]
    assert shown_bytes == pytest.approx(expected.disk_bytes, rel=5e-3)
    assert "on disk in RocksDB, with bounded memory" in html
    # No store to choose or preselect, and none of the old in-memory advice.
    assert "state-store" not in html and "state store" not in html and "in-memory" not in html.lower()

    with_fields = load_draft_spec({"source": {"topics": [busy_topic], "fields": [{"path": "id", "type": "string"}]}})
    draft_save_step(draft=draft, step="sample", values={"events": []}, spec=with_fields, advance=True)
    response = owner_client.get(reverse("wizard:step", kwargs={"draft_id": draft.pk, "step": "dedup"}))
    assert response.status_code == 200
    page = response.content.decode()
    assert 'name="state_store"' not in page and "State store" not in page
    assert "on disk, in RocksDB under its checkpoint" in page
