"""REST API for a user's own API tokens: list, create (the token is in this one answer only), revoke."""

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

TAG = ["API tokens"]


class ApiTokenInput(serializers.Serializer):
    name = serializers.CharField(max_length=100, help_text="What uses the token, e.g. 'deploy script'.")
    expires_in_days = serializers.IntegerField(
        min_value=1, max_value=3650, required=False, allow_null=True, help_text="Leave out for no expiry."
    )


class ApiTokenOutput(serializers.ModelSerializer):
    class Meta:
        model = ApiToken
        fields = ["id", "name", "created", "expiry", "last_used"]


class ApiTokenCreatedOutput(ApiTokenOutput):
    token = serializers.CharField(help_text="Send as 'Authorization: Token <token>'. Shown only in this answer.")

    class Meta(ApiTokenOutput.Meta):
        fields = [*ApiTokenOutput.Meta.fields, "token"]


class ApiTokenListCreateApi(APIView):
    @extend_schema(tags=TAG, operation_id="api_tokens_list", responses=ApiTokenOutput(many=True))
    def get(self, request: Request) -> Response:
        return Response(ApiTokenOutput(tokens.api_token_list(user=request.user), many=True).data)

    @extend_schema(
        tags=TAG,
        operation_id="api_tokens_create",
        request=ApiTokenInput,
        responses={201: ApiTokenCreatedOutput, **ERROR_RESPONSES},
    )
    def post(self, request: Request) -> Response:
        data = validated_input(ApiTokenInput, request.data)
        token, text = tokens.api_token_create(
            user=request.user, name=data["name"], expires_in_days=data.get("expires_in_days")
        )
        token.token = text
        return Response(ApiTokenCreatedOutput(token).data, status=status.HTTP_201_CREATED)


class ApiTokenDetailApi(APIView):
    @extend_schema(tags=TAG, operation_id="api_tokens_revoke", responses={204: None, **ERROR_RESPONSES})
    def delete(self, request: Request, pk: int) -> Response:
        try:
            token = tokens.api_token_get(user=request.user, pk=pk)
        except ApiToken.DoesNotExist:
            raise Http404 from None
        tokens.api_token_revoke(token=token)
        return Response(status=status.HTTP_204_NO_CONTENT)
