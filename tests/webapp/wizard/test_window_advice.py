"""The dedup step's advice beside the choice: the window the user picked is never replaced by the advice, and the
review step compares the choice with the advice measured for its keys and time basis, warning when the two are
more than 10 times apart. Pure functions over a draft's data."""

from __future__ import annotations

import pytest
from django.utils.datastructures import MultiValueDict

from webapp.wizard.models import WizardDraft
from webapp.wizard.steps.dedup import chosen_fields, window_advice

pytestmark = pytest.mark.fast

MEASURED = {"keys": ["event_id"], "time": "ingestion", "event_time_field": None}


def advice(window: str = "1m", **extra) -> dict:
    return {"window": window, "lower_bound": False, "state_bytes": 2_000_000, **MEASURED, **extra}


def draft(window: str | None, saved_advice: dict | None = None, **section) -> WizardDraft:
    spec = {"source": {"topics": ["t"]}}
    if window:
        spec["dedup"] = {"keys": ["event_id"], "window": window}
    return WizardDraft(data={"spec": spec, "dedup": {**section, "advice": saved_advice}})


def test_a_window_is_chosen_only_when_the_user_picked_it():
    # What the page posts (or kept while typing): the hidden flags the page sets on a change of the select.
    posted = MultiValueDict({"window_chosen": ["1"]})
    assert chosen_fields(draft(None), posted) == {"window": True}
    # A refused Next kept the default window, not chosen: the advice may still preselect its own.
    assert chosen_fields(draft(None), MultiValueDict({"window": ["1h"], "window_chosen": [""]}))["window"] is False
    # As saved with the step.
    assert chosen_fields(draft("1h", window_chosen=False)) == {"window": False}
    assert chosen_fields(draft("6h", window_chosen=True))["window"] is True
    # A pipeline being edited chose its window when it was made.
    assert chosen_fields(WizardDraft(data={"spec": {"dedup": {"keys": ["id"], "window": "2h"}}}))["window"] is True
    assert chosen_fields(WizardDraft(data={}))["window"] is False


def test_the_review_puts_the_advice_beside_the_choice_and_warns_past_ten_times():
    same = window_advice(draft("1m", advice()))
    assert same["same"] and not same["warn"] and same["factor"] == 1
    longer = window_advice(draft("1h", advice()))
    assert longer["longer"] and longer["factor"] == 60 and longer["warn"]
    assert longer["state_bytes"] == 120_000_000  # the advised window's state, 60 times over
    assert same["state_bytes"] == 2_000_000
    assert window_advice(draft("1h", advice(state_bytes=None)))["state_bytes"] is None
    shorter = window_advice(draft("1m", advice(window="1h")))
    assert not shorter["longer"] and shorter["factor"] == 60 and shorter["warn"]
    near = window_advice(draft("5m", advice()))
    assert near["factor"] == 5 and not near["warn"]
    # An "at least" advice cannot say a longer window is too long (only a shorter one too short).
    assert not window_advice(draft("1h", advice(lower_bound=True)))["warn"]
    assert window_advice(draft("1m", advice(window="1h", lower_bound=True)))["warn"]
    # Advice measured for other keys is not this choice's advice; without dedup there is nothing to compare.
    assert window_advice(draft("1h", advice(keys=["user_id"])))["advice"] is None
    assert window_advice(draft("1h", None))["advice"] is None
    assert window_advice(draft(None)) is None
