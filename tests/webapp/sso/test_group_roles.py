"""The group mapping's format (CLEARFLOW_OIDC_GROUP_ROLES) and the groups claim, read without a provider."""

from __future__ import annotations

import pytest

from webapp.sso.config import GroupRole, SsoConfigError, parse_group_roles
from webapp.sso.services import claim_groups
from webapp.workspaces.models import Role

pytestmark = pytest.mark.fast


def test_entries_name_group_workspace_and_role_and_a_workspace_may_hold_colons() -> None:
    assert parse_group_roles(" data-team:Data team:admin,analysts:Ops: night shift:viewer ,") == [
        GroupRole("data-team", "Data team", Role.ADMIN),
        GroupRole("analysts", "Ops: night shift", Role.VIEWER),
    ]
    assert parse_group_roles("") == []


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("data-team:admin", "is not GROUP:WORKSPACE:ROLE"),
        ("data-team:Data team:owner", "names the role 'owner'; use viewer, editor or admin"),
        (":Data team:admin", "is not GROUP:WORKSPACE:ROLE"),
    ],
)
def test_a_wrong_entry_is_refused_in_words(text: str, words: str) -> None:
    with pytest.raises(SsoConfigError, match="CLEARFLOW_OIDC_GROUP_ROLES") as refused:
        parse_group_roles(text)
    assert words in str(refused.value)


def test_groups_come_without_keycloaks_leading_slash_from_a_list_or_one_string(settings) -> None:
    settings.CLEARFLOW_OIDC_GROUPS_CLAIM = "groups"
    assert claim_groups({"groups": ["/data-team", "analysts", ""]}) == ["analysts", "data-team"]
    assert claim_groups({"groups": "/data-team"}) == ["data-team"]
    settings.CLEARFLOW_OIDC_GROUPS_CLAIM = "roles"
    assert claim_groups({"groups": ["x"], "roles": ["admins"]}) == ["admins"]
    assert claim_groups({}) == []
