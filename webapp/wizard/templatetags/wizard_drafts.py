"""The wizard's part of the pipeline pages: a draft in progress to resume. A template tag, so that the
pipelines app's pages show it without the pipelines app importing the wizard."""

from __future__ import annotations

from typing import Any

from django import template

from webapp.wizard import selectors

register = template.Library()


@register.simple_tag(takes_context=True)
def new_pipeline_draft(context: dict[str, Any]) -> Any:
    """The user's draft of a new pipeline, or None."""
    return selectors.draft_for_new(user=context["request"].user)


@register.simple_tag(takes_context=True)
def pipeline_edit_draft(context: dict[str, Any], pipeline: Any) -> Any:
    """The user's edit of `pipeline` in progress, or None."""
    return selectors.draft_for_pipeline(user=context["request"].user, pipeline=pipeline)
