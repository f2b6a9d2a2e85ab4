"""A request that runs beside the user's Next (the sample fetched from Kafka, seconds under load) writes only
what it changed: it does not put back the draft it loaded at its start."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from webapp.wizard import services
from webapp.wizard.models import WizardDraft
from webapp.wizard.steps import sample as sample_step

pytestmark = pytest.mark.django_db


class _FormatForm:
    """What `save_format` reads of the sample step's form."""

    def __init__(self, fmt: str) -> None:
        self.cleaned_data = {"format": fmt, "schema_registry": None}


def _fields(draft: WizardDraft) -> list[str]:
    return [field.path for field in WizardDraft.objects.get(pk=draft.pk).spec.source.fields or []]


def test_a_slow_sample_fetch_keeps_the_fields_a_next_saved_meanwhile(owner):
    draft = services.draft_get_or_create(user=owner)
    spec = draft.spec.model_copy(deep=True)
    spec.source.topics = ["signups"]
    services.draft_save_step(draft=draft, step="topics", spec=spec, advance=True)
    fetching = WizardDraft.objects.get(pk=draft.pk)  # the fetch's request loads the draft, then asks Kafka

    # Meanwhile the user's Next saves the schema's fields.
    spec = draft.spec.model_copy(deep=True)
    spec.source.fields = [{"path": "event_id", "type": "uuid"}, {"path": "address.country", "type": "string"}]
    services.draft_save_step(draft=draft, step="sample", spec=spec, advance=True)

    # The fetch ends: it stores the sample and the format from the draft it loaded.
    sample_step.save_format(fetching, _FormatForm("json"))
    services.draft_update_section(draft=fetching, step="sample", changes={"events": [], "fetched_at": "now"})

    assert _fields(draft) == ["event_id", "address.country"]
    stored = WizardDraft.objects.get(pk=draft.pk)
    assert stored.spec.source.topics == ["signups"]
    assert stored.spec.source.format == "json"
    assert stored.section("sample")["fetched_at"] == "now"


def test_a_next_keeps_what_was_typed_into_another_step_meanwhile(owner):
    draft = services.draft_get_or_create(user=owner)
    spec = draft.spec.model_copy(deep=True)
    spec.source.topics = ["signups"]
    services.draft_save_step(draft=draft, step="topics", spec=spec, advance=True)
    next_request = WizardDraft.objects.get(pk=draft.pk)  # the Next's request loads the draft, then validates

    # Meanwhile another tab keeps what the user typed into the dedup step (not validated yet).
    services.draft_keep_raw(draft=draft, step="dedup", post=QueryDict("window=2h"), go_back=False)

    spec = next_request.spec.model_copy(deep=True)
    spec.source.fields = [{"path": "id", "type": "int"}]
    services.draft_save_step(draft=next_request, step="sample", values={"count": 10}, spec=spec, advance=True)

    stored = WizardDraft.objects.get(pk=draft.pk)
    assert stored.data[services.RAW_KEY]["dedup"] == {"window": ["2h"]}
    assert stored.section("sample") == {"count": 10}
    assert [field.path for field in stored.spec.source.fields or []] == ["id"]
