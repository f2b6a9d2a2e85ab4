"""The wizard's part of the pipeline pages: a draft in progress to resume, and how many steps the wizard has.
Template tags, so that the pipelines app's pages show them without the pipelines app importing the wizard."""

from __future__ import annotations

from typing import Any

from django import template

from webapp.wizard import selectors
from webapp.wizard.steps import STEPS

register = template.Library()


@register.simple_tag(takes_context=True)
def new_pipeline_draft(context: dict[str, Any]) -> Any:
    """The user's draft of a new pipeline, or None."""
    return selectors.draft_for_new(user=context["request"].user)


@register.simple_tag(takes_context=True)
def pipeline_edit_draft(context: dict[str, Any], pipeline: Any) -> Any:
    """The user's edit of `pipeline` in progress, or None."""
    return selectors.draft_for_pipeline(user=context["request"].user, pipeline=pipeline)


_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven")


@register.simple_tag
def wizard_steps_in_words() -> str:
    """The wizard's steps counted from its list of steps: "nine short steps, one of them optional"."""

    def words(n: int) -> str:
        return _NUMBER_WORDS[n] if n < len(_NUMBER_WORDS) else str(n)

    optional = sum(1 for step in STEPS if step.optional)
    text = f"{words(len(STEPS))} short steps"
    return f"{text}, {words(optional)} of them optional" if optional else text
