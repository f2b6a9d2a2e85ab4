"""Reads for the wizard: a user's drafts (someone else's draft is a 404, like a missing one)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404

from webapp.wizard.models import WizardDraft


def draft_list(*, user: Any) -> QuerySet[WizardDraft]:
    return WizardDraft.objects.filter(user=user).select_related("pipeline").order_by("-updated_at")


def draft_get(*, user: Any, pk: int) -> WizardDraft:
    try:
        return draft_list(user=user).get(pk=pk)
    except WizardDraft.DoesNotExist:
        raise Http404("This draft is gone: a draft ends once its pipeline is saved, or when it is discarded.") from None


def draft_for_new(*, user: Any) -> WizardDraft | None:
    return WizardDraft.objects.filter(user=user, pipeline__isnull=True).first()


def draft_for_pipeline(*, user: Any, pipeline: Any) -> WizardDraft | None:
    return WizardDraft.objects.filter(user=user, pipeline=pipeline).first()
