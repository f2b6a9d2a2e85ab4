"""Every API route on one object names the model whose workspace the policy checks (webapp.workspaces.permissions):
without it a change would be checked against the caller's default workspace instead of the object's."""

from __future__ import annotations

import pytest
from django.urls import get_resolver

from tests.webapp.api.test_anonymous_access import walk
from webapp.workspaces.policy import ACTIONS

pytestmark = pytest.mark.fast


def api_views():
    for route, pattern in walk(get_resolver().url_patterns):
        view = getattr(pattern.callback, "cls", None)
        if view is not None and route.startswith("api/v1/"):
            yield route, view()


def test_every_api_route_on_an_object_names_its_workspace_model():
    on_objects = [(route, view) for route, view in api_views() if "<int:pk>" in route]
    assert len(on_objects) > 40
    missing = [route for route, view in on_objects if getattr(view, "workspace_model", None) is None]
    assert missing == []


def test_every_action_a_view_names_is_in_the_policy():
    named = {action for _, view in api_views() for action in getattr(view, "workspace_actions", {}).values()}
    assert named and named <= set(ACTIONS)
