"""Resumable wizard state: one draft per user for a new pipeline, and one per pipeline being edited.

`data` holds what the user entered, never a secret: a partial pipeline spec (`data["spec"]`, read as
`WizardDraft.spec`, a typed `webapp.wizard.draft_spec.DraftSpec`) and, per step, what a spec has no place for
(`data["kafka"]["connection_id"]`, the sampled events, ...). A new connection is saved (encrypted) by the
connections service when its step is submitted and the draft keeps only its id. `step` is where the user
is; `reached` is the furthest step they may open.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from webapp.wizard.draft_spec import SPEC_KEY, DraftSection, load_draft_spec
from webapp.wizard.steps import SLUGS


class WizardDraft(models.Model):
    STEP_CHOICES = [(slug, slug) for slug in SLUGS]

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="wizard_drafts")
    # Set when the draft edits an existing pipeline: deploying it makes a new version of that pipeline.
    pipeline = models.ForeignKey(
        "pipelines.Pipeline", on_delete=models.CASCADE, null=True, blank=True, related_name="wizard_drafts"
    )
    data = models.JSONField(default=dict, blank=True)
    step = models.CharField(max_length=20, choices=STEP_CHOICES, default=SLUGS[0])
    reached = models.CharField(max_length=20, choices=STEP_CHOICES, default=SLUGS[0])
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user"], condition=models.Q(pipeline__isnull=True), name="wizard_one_new_draft_per_user"
            ),
            models.UniqueConstraint(fields=["user", "pipeline"], name="wizard_one_edit_draft_per_pipeline"),
        ]

    def __str__(self) -> str:
        target = f"pipeline {self.pipeline_id}" if self.pipeline_id else "new pipeline"
        return f"Draft of {self.user} for {target} at {self.step}"

    def section(self, slug: str) -> dict:
        """What a step keeps beside the spec (an empty dict if the step was never saved)."""
        value = self.data.get(slug)
        return value if isinstance(value, dict) else {}

    @property
    def spec(self) -> DraftSection:
        """The partial spec, typed (`draft_spec.DraftSpec`): `draft.spec.source.topics`, `draft.spec.dedup`.
        To change it, a step edits a copy (`draft.spec.model_copy(deep=True)`) and saves that
        (`services.draft_save_step(spec=...)`)."""
        raw = self.data.get(SPEC_KEY)
        cached: tuple[Any, DraftSection] | None = self.__dict__.get("_spec_cache")
        if cached is None or cached[0] is not raw:
            cached = (raw, load_draft_spec(raw))
            self.__dict__["_spec_cache"] = cached
        return cached[1]

    @property
    def reached_index(self) -> int:
        return SLUGS.index(self.reached)

    def can_open(self, slug: str) -> bool:
        return SLUGS.index(slug) <= self.reached_index
