"""`GET /api/v1/activity/`: who did what, newest first, with filters."""

from __future__ import annotations

from datetime import UTC, datetime

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.activity import selectors
from webapp.activity.models import ActivityEntry
from webapp.api.errors import ERROR_RESPONSES
from webapp.api.inputs import validated_input
from webapp.pipelines.observe_apis import SinceField

TAG = ["Activity"]


def _at(unix_ms: int | str | None) -> datetime | None:
    """A bound as unix ms; blank (`?until=`) is no bound."""
    return None if unix_ms in (None, "") else datetime.fromtimestamp(int(unix_ms) / 1000, tz=UTC)


class ActivityQuery(serializers.Serializer):
    workspace = serializers.IntegerField(required=False, help_text="Only this workspace's entries.")
    action = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=50,
        help_text='e.g. "pipeline.deploy", or a prefix ending in ".": "pipeline."',
    )
    object_type = serializers.CharField(
        required=False, allow_blank=True, max_length=50, help_text='e.g. "pipeline", "kafkaconnection"'
    )
    object_id = serializers.IntegerField(required=False, min_value=1)
    actor = serializers.CharField(required=False, allow_blank=True, max_length=150, help_text="A username.")
    # As the metrics' `since` (ISO 8601 or unix ms), one spelling of a time in every query of the API.
    since = SinceField(required=False, allow_blank=True, help_text="Only entries at or after this time.")
    until = SinceField(required=False, allow_blank=True, help_text="Only entries before this time.")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=1000, default=100)


class ActivityOutput(serializers.ModelSerializer):
    class Meta:
        model = ActivityEntry
        fields = [
            "id",
            "at",
            "workspace",
            "actor_name",
            "token_name",
            "action",
            "object_type",
            "object_id",
            "object_name",
            "before",
            "after",
        ]


class ActivityListApi(APIView):
    @extend_schema(
        tags=TAG,
        operation_id="activity_list",
        description="Every change in the caller's workspaces (and sign-ins), newest first; secrets are masked.",
        parameters=[ActivityQuery],
        responses={200: ActivityOutput(many=True), **ERROR_RESPONSES},
    )
    def get(self, request: Request) -> Response:
        query = validated_input(ActivityQuery, request.query_params)
        limit = query.pop("limit")
        query.pop("workspace", None)  # checked and resolved by webapp.workspaces.permissions
        query = {name: value for name, value in query.items() if value != ""}  # a blank filter is no filter
        for bound in ("since", "until"):
            if bound in query:
                query[bound] = _at(query[bound])
        entries = selectors.activity_list(user=request.user, workspace=request.workspace, **query)[:limit]
        return Response(ActivityOutput(entries, many=True).data)
