"""The filter and computed fields tried on the sampled events: what a person checks before the job runs them."""

from __future__ import annotations

import pytest

from webapp.wizard.transform_preview import preview

pytestmark = pytest.mark.fast

EVENTS = [
    {"age": 20, "email": "Ann@example.com", "user": {"id": "u1"}},
    {"age": 12, "email": "bob@example.org", "user": {"id": "u2"}},
    {"age": 41, "email": "cy@example.net", "user": {"id": "u3"}},
]


def test_the_filter_says_how_many_sampled_events_it_keeps_and_computed_fields_show_their_values():
    computed = [("email_lower", "lower(email)"), ("tag", "concat(user.id, '/', email_lower)")]
    tried = preview(EVENTS, "age >= 18", computed)
    assert (tried.events, tried.kept) == (3, 2)
    assert tried.rows == [
        [("email_lower", "ann@example.com"), ("tag", "u1/ann@example.com")],
        [("email_lower", "cy@example.net"), ("tag", "u3/cy@example.net")],
    ]


def test_what_cannot_be_tried_here_is_named_and_never_guessed():
    tried = preview(EVENTS, "", [("domain", "split(email, '@')[1]")])
    assert tried.kept is None and tried.rows == []
    assert tried.unpreviewed == {"domain": "not tried on the sample: split() is evaluated by the job only"}
