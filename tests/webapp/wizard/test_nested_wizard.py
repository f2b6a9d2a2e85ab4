"""Nested fields in the wizard: a field's parts as a tree, an array exploded into one row per element, whose
members the filter and the mapping then offer."""

from __future__ import annotations

import pytest

from tests.webapp.wizard.test_wizard_steps import alerts, step_url, submit, walk_to_sample

pytestmark = pytest.mark.django_db

ITEMS = "array<struct<sku:string,qty:int>>"


def test_an_array_of_structs_is_a_tree_and_can_be_exploded(owner_client, kafka_connection, empty_topic):
    draft = walk_to_sample(owner_client, kafka_connection, empty_topic)
    fields = {"f0-path": "order_id", "f0-type": "string", "f0-manual": "1"}
    fields |= {"f1-path": "items", "f1-type": "array< struct<sku: string, qty: int> >", "f1-manual": "1"}
    response = submit(owner_client, draft, "sample", {"count": 20, "position": "newest", **fields})
    assert response.status_code == 302, alerts(response)
    draft.refresh_from_db()
    assert draft.data["spec"]["source"]["fields"][1] == {"path": "items", "type": ITEMS}

    html = owner_client.get(step_url(draft, "sample")).content.decode()
    assert 'aria-label="Parts of items"' in html
    assert f'<option value="{ITEMS.replace(">", "&gt;").replace("<", "&lt;")}" selected>' in html
    assert '<span class="type-tree-name">qty</span> <code>int</code>' in html

    submit(owner_client, draft, "dedup", {"enabled": "off"})
    page = owner_client.get(step_url(draft, "transform")).content.decode()
    assert "One row per element of" in page and '<option value="items">items</option>' in page
    response = submit(owner_client, draft, "transform", {"explode": "items", "filter": "items.qty > 1"})
    assert response.status_code == 302, alerts(response)
    draft.refresh_from_db()
    assert draft.data["spec"]["explode"] == "items"
    assert draft.data["spec"]["filter"] == "items.qty > 1"
    from webapp.wizard.steps.common import row_fields

    assert ("items.qty", "int") in [(f["path"], f["type"]) for f in row_fields(draft)]  # what the mapping offers
