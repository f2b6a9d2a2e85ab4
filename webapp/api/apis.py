"""REST API for a user's own API tokens: list, create (the token is in this one answer only), revoke; and who
the caller is (`me`: user and token, what a command-line client checks when it logs in)."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api import tokens
from webapp.api.errors import ERROR_RESPONSES
from webapp.api.inputs import validated_input
from webapp.api.models import ApiToken
from webapp.workspaces import policy
from webapp.workspaces.selectors import workspace_default

TAG = ["API tokens"]


class ApiTokenInput(serializers.Serializer):
    name = serializers.CharField(max_length=100, help_text="What uses the token, e.g. 'deploy script'.")
    expires_in_days = serializers.IntegerField(
        min_value=1, max_value=3650, required=False, allow_null=True, help_text="Leave out for no expiry."
    )
    read_only = serializers.BooleanField(
        default=False, help_text="The token may read everything you may read, and change nothing (403)."
    )


class ApiTokenOutput(serializers.ModelSerializer):
    class Meta:
        model = ApiToken
        fields = ["id", "name", "read_only", "workspace", "created", "expiry", "last_used"]


class ApiTokenCreatedOutput(ApiTokenOutput):
    token = serializers.CharField(help_text="Send as 'Authorization: Token <token>'. Shown only in this answer.")

    class Meta(ApiTokenOutput.Meta):
        fields = [*ApiTokenOutput.Meta.fields, "token"]


class ApiTokenListCreateApi(APIView):
    workspace_actions = {"POST": "token.create"}  # webapp.workspaces.permissions

    @extend_schema(tags=TAG, operation_id="api_tokens_list", responses=ApiTokenOutput(many=True))
    def get(self, request: Request) -> Response:
        own = tokens.api_token_list(user=request.user, workspace=request.workspace)
        return Response(ApiTokenOutput(own, many=True).data)

    @extend_schema(
        tags=TAG,
        operation_id="api_tokens_create",
        request=ApiTokenInput,
        responses={201: ApiTokenCreatedOutput, **ERROR_RESPONSES},
    )
    def post(self, request: Request) -> Response:
        data = validated_input(ApiTokenInput, request.data)
        token, text = tokens.api_token_create(
            user=request.user,
            name=data["name"],
            expires_in_days=data.get("expires_in_days"),
            read_only=data["read_only"],
            workspace=request.workspace,
        )
        token.token = text
        return Response(ApiTokenCreatedOutput(token).data, status=status.HTTP_201_CREATED)


class ApiTokenDetailApi(APIView):
    workspace_model = ApiToken
    workspace_actions = {"DELETE": "token.revoke"}

    @extend_schema(tags=TAG, operation_id="api_tokens_revoke", responses={204: None, **ERROR_RESPONSES})
    def delete(self, request: Request, pk: int) -> Response:
        try:
            token = tokens.api_token_get(user=request.user, pk=pk)
        except ApiToken.DoesNotExist:
            raise Http404 from None
        tokens.api_token_revoke(token=token, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeOutput(serializers.Serializer):
    username = serializers.CharField()
    token = ApiTokenOutput(allow_null=True, help_text="The API token of this request; null for a browser session.")
    workspace = serializers.IntegerField(
        allow_null=True, help_text="Where new objects go when none is named: the token's workspace, or the default."
    )
    role = serializers.CharField(allow_null=True, help_text="The caller's role there: viewer, editor or admin.")


class MeApi(APIView):
    @extend_schema(
        tags=TAG,
        operation_id="me_retrieve",
        description="Who is calling: the user, and the API token used (its name, whether it is read-only).",
        responses={200: MeOutput, **ERROR_RESPONSES},
    )
    def get(self, request: Request) -> Response:
        token = request.auth if isinstance(request.auth, ApiToken) else None
        workspace = workspace_default(user=request.user)
        role = policy.role_of(request.user, workspace) if workspace is not None else None
        me = {
            "username": request.user.get_username(),
            "token": token,
            "workspace": workspace.pk if workspace is not None else None,
            "role": role.value if role is not None else None,
        }
        return Response(MeOutput(me).data)
