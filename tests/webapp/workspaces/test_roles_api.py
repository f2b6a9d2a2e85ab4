"""Every API operation of the OpenAPI schema, tried as a viewer, an editor and an admin of the workspace that holds
the objects, as a member of another workspace, and anonymously (generated from the schema as in
test_anonymous_access, so a new operation is covered the moment it is routed).

What each role may do is the roles table of docs/teams.md, written out here rather than read from the policy: a
member whose role does not allow an operation gets 403 with a JSON body that says which role it takes; an outsider
gets 404 for everything of the workspace; nobody ever gets a 500.
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.webapp.api.test_anonymous_access import METHODS, operation_url
from tests.webapp.workspaces.conftest import MARK, RANK
from webapp.api.tokens import api_token_create
from webapp.workspaces.models import Membership
from webapp.workspaces.services import workspace_create

pytestmark = pytest.mark.django_db

# Changes only an admin may make.
ADMIN_ONLY = {
    "pipelines_checkpoint_reset",
    "pipelines_dead_letters_purge",
    "workspaces_update",
    "workspace_members_create",
    "workspace_members_update",
    "workspace_members_delete",
    "workspace_invites_create",
}
# Operations sent with POST or DELETE that a viewer may call: they only read, or they are the caller's own tokens
# and workspaces.
VIEWER_MAY = {
    "kafka_connections_diff",
    "clickhouse_connections_diff",
    "schema_registry_connections_diff",
    "kafka_connections_test",
    "clickhouse_connections_test",
    "schema_registry_connections_test",
    "kafka_dedup_analysis",
    "kafka_schema_infer",
    "kafka_events_sample",
    "pipelines_validate",
    "pipelines_validate_spec",
    "pipelines_diff",
    "pipelines_mapping_suggest",
    "api_tokens_create",
    "api_tokens_revoke",
    "workspaces_create",
}


def least_role(operation_id: str, method: str) -> str:
    if operation_id in ADMIN_ONLY:
        return "admin"
    if method == "get" or operation_id in VIEWER_MAY:
        return "viewer"
    return "editor"


def concrete(path: str, item: dict, team: dict) -> str | None:
    """The operation's URL on the team's objects (None: the workspace holds no object of that kind)."""
    url = operation_url(path, item)
    if "{" not in path:
        return url
    for prefix, pk in team["ids"].items():
        if path.startswith(prefix + "{"):
            url = prefix + str(pk) + url[len(prefix) + 1 :]
            return url.replace("/members/1/", f"/members/{team['member']}/").replace("/x/", "/t/")
    return None  # schema registries and incidents: none in the workspace


def body(team: dict) -> dict:
    return {
        "workspace": team["workspace"].pk,
        "name": "taken",
        "kafka_connection": team["kafka"].pk,
        "clickhouse_connection": team["clickhouse"].pk,
        "connection": team["clickhouse"].pk,
        "database": "default",
        "table": "t",
        "topics": ["t"],
        "username": "outsider-user",
        "role": "editor",
        "confirm": True,
        "fields": [{"path": "a", "type": "string", "nullable": False}],
        "spec": {"source": {"topics": ["t"], "fields": [{"path": "a", "type": "string"}]}},
    }


def operations(client: APIClient):
    """Every operation; the deletes last, so that the objects are there for the others."""
    paths = client.get("/api/v1/schema/?format=json").json()["paths"]
    found = [
        (path, item, method, item[method]["operationId"])
        for path, item in paths.items()
        for method in METHODS
        if method in item
    ]
    return sorted(found, key=lambda operation: operation[2] == "delete")


def call(client: APIClient, method: str, url: str, team: dict):
    if method == "get":
        separator = "&" if "?" in url else "?"
        return client.get(f"{url}{separator}workspace={team['workspace'].pk}" if "{" not in url else url)
    return getattr(client, method)(url, body(team), format="json")


@pytest.mark.parametrize("role", ["viewer", "editor", "admin"])
def test_a_member_may_do_what_the_role_allows_and_is_refused_the_rest_in_words(role, team):
    api = APIClient()
    api.force_authenticate(team["users"][role])
    tried = refused = 0
    for path, item, method, operation_id in operations(api):
        url = concrete(path, item, team)
        if url is None:
            continue
        response = call(api, method, url, team)
        tried += 1
        where = f"{role}: {method.upper()} {url} ({operation_id})"
        assert response.status_code != 500, where
        if RANK[role] < RANK[least_role(operation_id, method)]:
            refused += 1
            assert response.status_code == 403, f"{where}: {response.status_code} {response.content[:300]}"
            error = response.json()
            assert error["code"] == "permission_denied", where
            assert f"takes the {least_role(operation_id, method)} role" in error["message"], where
        else:
            assert response.status_code != 403, f"{where}: {response.content[:300]}"
    assert tried >= 70
    assert refused == 0 if role == "admin" else refused > 0


def test_an_outsider_gets_404_for_everything_of_the_workspace_and_sees_none_of_it(team):
    api = APIClient()
    api.force_authenticate(team["users"]["outsider"])
    tried = 0
    for path, item, method, operation_id in operations(api):
        url = concrete(path, item, team)
        if url is None:
            continue
        response = call(api, method, url, team)
        tried += 1
        where = f"outsider: {method.upper()} {url} ({operation_id})"
        if operation_id == "workspaces_create":  # a workspace of their own, whatever the body names
            assert response.status_code in (200, 201) and MARK not in response.content.decode(), where
            continue
        assert response.status_code == 404, f"{where}: {response.status_code} {response.content[:300]}"
        assert MARK not in response.content.decode(), where
    # Without ?workspace=, the lists are the outsider's own workspace's: empty of the team's objects.
    for prefix in team["ids"]:
        response = api.get(prefix)
        assert response.status_code == 200 and MARK not in response.content.decode(), prefix
    assert tried >= 70


def test_anonymous_callers_are_refused_every_operation(team):
    api = APIClient()
    for path, item, method, _ in operations(api):
        url = concrete(path, item, team)
        if url is not None:
            assert call(api, method, url, team).status_code == 401, url


def test_a_token_acts_in_its_workspace_with_its_users_role_and_never_more(team, client):
    editor = team["users"]["editor"]
    pipeline = team["ids"]["/api/v1/pipelines/"]
    own = workspace_create(user=editor, name="editor's own")
    _, in_team = api_token_create(user=editor, name="ci", workspace=team["workspace"])
    _, read_only = api_token_create(user=editor, name="ro", workspace=team["workspace"], read_only=True)
    _, elsewhere = api_token_create(user=editor, name="own", workspace=own)
    api = APIClient()

    api.credentials(HTTP_AUTHORIZATION=f"Token {in_team}")
    assert api.get(f"/api/v1/pipelines/{pipeline}/").status_code == 200
    assert api.post(f"/api/v1/pipelines/{pipeline}/stop/").status_code == 409  # allowed; a draft does not stop
    refused = api.post(f"/api/v1/pipelines/{pipeline}/checkpoint/reset/", {"confirm": True}, format="json")
    assert refused.status_code == 403 and "admin role" in refused.json()["message"]
    assert api.get("/api/v1/me/").json()["role"] == "editor"

    api.credentials(HTTP_AUTHORIZATION=f"Token {read_only}")
    refused = api.post(f"/api/v1/pipelines/{pipeline}/stop/")
    assert refused.status_code == 403 and "read-only" in refused.json()["message"]

    api.credentials(HTTP_AUTHORIZATION=f"Token {elsewhere}")
    assert api.get(f"/api/v1/pipelines/{pipeline}/").status_code == 404
    assert [w["name"] for w in api.get("/api/v1/workspaces/").json()] == ["editor's own"]

    # The user demoted: the token is demoted with them.
    Membership.objects.filter(workspace=team["workspace"], user=editor).update(role="viewer")
    api.credentials(HTTP_AUTHORIZATION=f"Token {in_team}")
    assert api.post(f"/api/v1/pipelines/{pipeline}/stop/").status_code == 403


def test_changing_a_saved_connections_secret_takes_an_admin(team):
    kafka = team["ids"]["/api/v1/connections/kafka/"]
    api = APIClient()
    api.force_authenticate(team["users"]["editor"])
    url = f"/api/v1/connections/kafka/{kafka}/"
    assert api.patch(url, {"name": f"{MARK}-renamed"}, format="json").status_code == 200
    refused = api.patch(url, {"sasl_password": "new-secret"}, format="json")
    assert refused.status_code == 403 and "admin role" in refused.json()["message"]
    api.force_authenticate(team["users"]["admin"])
    assert api.patch(url, {"sasl_password": "new-secret"}, format="json").status_code == 200
