"""REST API for alerts: channels, each pipeline's rules, and the incident history (one view per action; the
view validates, calls one service or selector, serializes). Webhook URLs are write-only: answers show the
scheme and host only (`webhook_url_masked`)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.alerts import selectors, services
from webapp.alerts.conditions import RULE_PARAMS
from webapp.alerts.models import (
    AlertChannel,
    AlertDelivery,
    AlertIncident,
    AlertNotification,
    AlertRule,
    ChannelKind,
    RuleKind,
    WebhookFormat,
)
from webapp.api.errors import ERROR_RESPONSES
from webapp.api.inputs import validated_input
from webapp.pipelines import selectors as pipeline_selectors
from webapp.pipelines.models import Pipeline

CHANNEL_TAG = ["Alert channels"]
RULE_TAG = ["Alert rules"]
INCIDENT_TAG = ["Alert history"]


class ChannelInput(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    kind = serializers.ChoiceField(ChannelKind.choices)
    enabled = serializers.BooleanField(default=True)
    email_to = serializers.CharField(
        max_length=1000, required=False, allow_blank=True, help_text="Email: addresses separated by commas."
    )
    webhook_url = serializers.CharField(
        max_length=2000,
        required=False,
        allow_blank=True,
        write_only=True,
        help_text="Webhook: http(s) URL; stored encrypted, never shown again. On update, leave out to keep it.",
    )
    webhook_format = serializers.ChoiceField(WebhookFormat.choices, default=WebhookFormat.JSON)


class ChannelUpdateInput(ChannelInput):
    name = serializers.CharField(max_length=100, required=False)
    kind = serializers.ChoiceField(ChannelKind.choices, required=False)
    enabled = serializers.BooleanField(required=False)
    webhook_format = serializers.ChoiceField(WebhookFormat.choices, required=False)


class ChannelOutput(serializers.ModelSerializer):
    has_webhook_url = serializers.BooleanField(read_only=True)
    webhook_url_masked = serializers.CharField(source="masked_webhook_url", read_only=True)

    class Meta:
        model = AlertChannel
        fields = [
            "id",
            "name",
            "kind",
            "enabled",
            "email_to",
            "has_webhook_url",
            "webhook_url_masked",
            "webhook_format",
            "workspace",
            "created_at",
            "updated_at",
        ]


class RuleOutput(serializers.ModelSerializer):
    title = serializers.SerializerMethodField()
    threshold_means = serializers.SerializerMethodField()
    minutes_means = serializers.SerializerMethodField()

    class Meta:
        model = AlertRule
        fields = [
            "kind",
            "title",
            "enabled",
            "threshold",
            "threshold_means",
            "minutes",
            "minutes_means",
            "renotify_minutes",
            "state",
            "state_since",
            "last_value",
            "last_evaluated_at",
        ]

    def get_title(self, rule: AlertRule) -> str:
        return RuleKind(rule.kind).label

    def get_threshold_means(self, rule: AlertRule) -> str | None:
        return RULE_PARAMS[rule.kind].threshold_label

    def get_minutes_means(self, rule: AlertRule) -> str | None:
        return RULE_PARAMS[rule.kind].minutes_label


class RuleUpdateInput(serializers.Serializer):
    enabled = serializers.BooleanField(required=False)
    threshold = serializers.FloatField(required=False, min_value=0, max_value=1e12)
    minutes = serializers.IntegerField(required=False, min_value=0, max_value=10080)
    renotify_minutes = serializers.IntegerField(
        required=False, min_value=0, max_value=10080, help_text="0: notify only when it starts and when it ends."
    )


class DeliveryOutput(serializers.ModelSerializer):
    class Meta:
        model = AlertDelivery
        fields = ["channel", "channel_name", "status", "attempts", "last_error", "sent_at"]


class NotificationOutput(serializers.ModelSerializer):
    deliveries = DeliveryOutput(many=True, read_only=True)

    class Meta:
        model = AlertNotification
        fields = ["event", "created_at", "message", "deliveries"]


class IncidentOutput(serializers.ModelSerializer):
    pipeline_name = serializers.CharField(source="pipeline.name", read_only=True)
    notifications = NotificationOutput(many=True, read_only=True)

    class Meta:
        model = AlertIncident
        fields = [
            "id",
            "pipeline",
            "pipeline_name",
            "kind",
            "started_at",
            "resolved_at",
            "last_notified_at",
            "summary",
            "value",
            "notifications",
        ]


class IncidentListInput(serializers.Serializer):
    pipeline = serializers.IntegerField(required=False, help_text="Only this pipeline's incidents.")
    open = serializers.BooleanField(required=False, default=False, help_text="Only incidents still open.")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=500, default=100)


# -- views --------------------------------------------------------------------------------------------------


class ChannelListCreateApi(APIView):
    workspace_actions = {"POST": "alert.edit"}  # webapp.workspaces.permissions

    @extend_schema(tags=CHANNEL_TAG, operation_id="alert_channels_list", responses=ChannelOutput(many=True))
    def get(self, request: Request) -> Response:
        return Response(
            ChannelOutput(selectors.alert_channel_list(user=request.user, workspace=request.workspace), many=True).data
        )

    @extend_schema(
        tags=CHANNEL_TAG,
        operation_id="alert_channels_create",
        request=ChannelInput,
        responses={201: ChannelOutput, **ERROR_RESPONSES},
    )
    def post(self, request: Request) -> Response:
        data = validated_input(ChannelInput, request.data)
        channel = services.alert_channel_create(owner=request.user, data=data, workspace=request.workspace)
        return Response(ChannelOutput(channel).data, status=status.HTTP_201_CREATED)


class ChannelDetailApi(APIView):
    workspace_model = AlertChannel
    workspace_actions = {"PATCH": "alert.edit", "DELETE": "alert.edit"}

    @extend_schema(
        tags=CHANNEL_TAG, operation_id="alert_channels_retrieve", responses={200: ChannelOutput, **ERROR_RESPONSES}
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(ChannelOutput(selectors.alert_channel_get(user=request.user, pk=pk)).data)

    @extend_schema(
        tags=CHANNEL_TAG,
        operation_id="alert_channels_update",
        request=ChannelUpdateInput,
        responses={200: ChannelOutput, **ERROR_RESPONSES},
    )
    def patch(self, request: Request, pk: int) -> Response:
        channel = selectors.alert_channel_get(user=request.user, pk=pk)
        data = validated_input(ChannelUpdateInput, request.data, partial=True)
        return Response(
            ChannelOutput(services.alert_channel_update(channel=channel, data=data, actor=request.user)).data
        )

    @extend_schema(tags=CHANNEL_TAG, operation_id="alert_channels_delete", responses={204: None, **ERROR_RESPONSES})
    def delete(self, request: Request, pk: int) -> Response:
        services.alert_channel_delete(channel=selectors.alert_channel_get(user=request.user, pk=pk), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class RuleListApi(APIView):
    workspace_model = Pipeline

    @extend_schema(
        tags=RULE_TAG, operation_id="alert_rules_list", responses={200: RuleOutput(many=True), **ERROR_RESPONSES}
    )
    def get(self, request: Request, pk: int) -> Response:
        pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
        return Response(RuleOutput(selectors.alert_rule_list(pipeline=pipeline), many=True).data)


KIND_PARAMETER = OpenApiParameter("kind", OpenApiTypes.STR, OpenApiParameter.PATH, enum=RuleKind.values)


class RuleDetailApi(APIView):
    workspace_model = Pipeline
    workspace_actions = {"PATCH": "alert.edit", "PUT": "alert.edit"}

    def _rule(self, request: Request, pk: int, kind: str) -> AlertRule:
        pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
        return selectors.alert_rule_get(pipeline=pipeline, kind=kind)

    @extend_schema(
        tags=RULE_TAG,
        operation_id="alert_rules_retrieve",
        parameters=[KIND_PARAMETER],
        responses={200: RuleOutput, **ERROR_RESPONSES},
    )
    def get(self, request: Request, pk: int, kind: str) -> Response:
        return Response(RuleOutput(self._rule(request, pk, kind)).data)

    @extend_schema(
        tags=RULE_TAG,
        operation_id="alert_rules_update",
        parameters=[KIND_PARAMETER],
        request=RuleUpdateInput,
        responses={200: RuleOutput, **ERROR_RESPONSES},
    )
    def patch(self, request: Request, pk: int, kind: str) -> Response:
        rule = self._rule(request, pk, kind)
        data = validated_input(RuleUpdateInput, request.data, partial=True)
        return Response(RuleOutput(services.alert_rule_update(rule=rule, data=data, actor=request.user)).data)


class IncidentListApi(APIView):
    @extend_schema(
        tags=INCIDENT_TAG,
        operation_id="alert_incidents_list",
        parameters=[IncidentListInput],
        responses={200: IncidentOutput(many=True), **ERROR_RESPONSES},
    )
    def get(self, request: Request) -> Response:
        params: dict[str, Any] = validated_input(IncidentListInput, request.query_params)
        pipeline = None
        if params.get("pipeline") is not None:
            pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=params["pipeline"])
        incidents = selectors.alert_incident_list(
            user=request.user, pipeline=pipeline, open_only=params["open"], workspace=request.workspace
        )
        return Response(IncidentOutput(incidents[: params["limit"]], many=True).data)


class IncidentDetailApi(APIView):
    workspace_model = AlertIncident
    workspace_field = "pipeline__workspace"

    @extend_schema(
        tags=INCIDENT_TAG, operation_id="alert_incidents_retrieve", responses={200: IncidentOutput, **ERROR_RESPONSES}
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(IncidentOutput(selectors.alert_incident_get(user=request.user, pk=pk)).data)
