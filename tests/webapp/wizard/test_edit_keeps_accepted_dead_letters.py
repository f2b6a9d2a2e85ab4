"""A pipeline keeps its "accept dead letters" choices: made on the mapping step, saved with the pipeline, ticked
again when the pipeline is edited, so an edit passes the mapping step as the first walk did."""

from __future__ import annotations

import re
import uuid

import pytest
from django.urls import reverse

from tests.webapp.wizard.html_forms import form_data
from tests.webapp.wizard.test_edit_and_mapping import walk_edit, walk_to_destination
from tests.webapp.wizard.test_wizard_steps import alerts, fetch_sample, mapping_post, step_url, submit
from webapp.pipelines.models import Pipeline
from webapp.wizard.models import WizardDraft

pytestmark = pytest.mark.django_db


def test_an_edit_keeps_the_fields_whose_dead_letters_were_accepted(
    owner_client, owner, kafka_connection, clickhouse_connection, users_topic
):
    draft = walk_to_destination(owner_client, kafka_connection, clickhouse_connection, users_topic)
    table = f"dl_{uuid.uuid4().hex[:6]}"
    response = submit(
        owner_client,
        draft,
        "clickhouse",
        {"database": "default", "table_mode": "new", "new_table": table, "order_by": ["event_id"]},
    )
    assert response.status_code == 302, alerts(response)
    # The mistake the user accepts: emails into an integer column. None of the sampled values fits: blocked...
    data = mapping_post(owner_client, draft)
    email_row = next(key.split("-")[0] for key, value in data.items() if key.endswith("-field") and value == "email")
    data[f"{email_row}-type"] = "Int32"
    response = submit(owner_client, draft, "mapping", data)
    assert response.status_code == 422
    assert any("email&#x27; cannot fit Int32" in a for a in alerts(response)), alerts(response)
    # ...until its dead letters are accepted.
    response = submit(owner_client, draft, "mapping", {**data, f"{email_row}-accept": "on"})
    assert response.status_code == 302, alerts(response)
    response = submit(
        owner_client, draft, "review", {"name": "accepts-dead-letters", "starting_offsets": "earliest"}, action="save"
    )
    assert response.status_code == 302, alerts(response)
    pipeline = Pipeline.objects.get(owner=owner, name="accepts-dead-letters")
    assert pipeline.current_version.accept_dead_letters == ["email"]

    # The edit: a fresh sample shows again that no email fits; the box is ticked as it was, so Next passes.
    owner_client.get(reverse("wizard:wizard_edit", kwargs={"pk": pipeline.pk}))
    edit = WizardDraft.objects.get(pipeline=pipeline)
    assert fetch_sample(owner_client, edit).status_code == 200
    html = owner_client.get(step_url(edit, "mapping")).content.decode()
    assert "cannot fit: none of" in html
    assert re.search(rf'name="{email_row}-accept"[^>]* checked', html), html
    assert form_data(html)[f"{email_row}-accept"] == ["on"]

    walk_edit(owner_client, pipeline.pk, {"review": {"name": ["accepts-dead-letters-2"]}})

    pipeline.refresh_from_db()
    assert pipeline.name == "accepts-dead-letters-2" and pipeline.current_version.number == 2
    assert pipeline.current_version.accept_dead_letters == ["email"]
