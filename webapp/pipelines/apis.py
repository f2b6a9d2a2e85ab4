"""REST API for pipelines: CRUD with the spec JSON, find by name, validate, deploy, stop, resume, status,
versions (the diff of a spec against the current version: `diff_apis`)."""

from __future__ import annotations

import json
from typing import Any

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from clearflow_spec.limits import size_issues
from clearflow_spec.spec import SpecError, SpecIssue
from webapp.api.errors import ERROR_RESPONSES
from webapp.api.inputs import NameQuery, validated_input
from webapp.connections import heavy_request_apis, heavy_requests
from webapp.connections import selectors as connection_selectors
from webapp.connections.models import HeavyRequest
from webapp.pipelines import exactly_once, live_check, metrics_history, selectors, services
from webapp.pipelines.exactly_once_apis import DeliveryGuaranteeOutput, ValidationWarningOutput, delivery_data
from webapp.pipelines.models import Pipeline, PipelineRun, PipelineStatus, PipelineTransition, PipelineVersion
from webapp.pipelines.observe_apis import PaceOutput, pace_or_none
from webapp.pipelines.state_size_outputs import EstimatedStateOutput, PlannedRateInput
from webapp.pipelines.type_fit_outputs import SampleReportOutput, accept_dead_letters_field

TAG = ["Pipelines"]


class SpecField(serializers.JSONField):
    """The pipeline spec (clearflow_spec.spec v1); `source.kafka` and `sink.clickhouse` come from the connections."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict) and (too_large := size_issues(data)):
            # Before anything reads the whole spec: a spec over its caps costs no more work (paths `spec.…`).
            raise SpecError([SpecIssue(path, message) for path, message in too_large])
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            raise serializers.ValidationError("A pipeline spec must be a JSON object.")
        if "\\u0000" in json.dumps(value):
            # PostgreSQL cannot store NUL characters in JSON.
            raise serializers.ValidationError("The spec may not contain NUL characters (\\u0000).")
        return value


class PipelineCreateInput(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    kafka_connection = serializers.IntegerField(help_text="Id of one of your Kafka connections.")
    clickhouse_connection = serializers.IntegerField(help_text="Id of one of your ClickHouse connections.")
    schema_registry_connection = serializers.IntegerField(
        required=False,
        help_text="Id of one of your schema registry connections: for source.format avro or protobuf in the "
        "Confluent wire format (it fills source.schema_registry).",
    )
    spec = SpecField()
    note = serializers.CharField(max_length=255, required=False, allow_blank=True, default="")


CHECKPOINT_HELP = (
    "Only when the new version cannot continue from the checkpoint (the API answers 409 and lists why): "
    "`keep` the offsets and dedup state anyway, or start `fresh` (read again from the starting offsets)."
)


class PipelineUpdateInput(serializers.Serializer):
    name = serializers.CharField(max_length=100, required=False)
    kafka_connection = serializers.IntegerField(required=False)
    clickhouse_connection = serializers.IntegerField(required=False)
    schema_registry_connection = serializers.IntegerField(required=False)
    spec = SpecField(required=False)
    note = serializers.CharField(max_length=255, required=False, allow_blank=True, default="")
    checkpoint = serializers.ChoiceField(["keep", "fresh"], required=False, help_text=CHECKPOINT_HELP)


class PipelineDeployInput(serializers.Serializer):
    checkpoint = serializers.ChoiceField(["keep", "fresh"], required=False, help_text=CHECKPOINT_HELP)


class PipelineDeleteInput(serializers.Serializer):
    remove_checkpoint = serializers.BooleanField(
        default=False, help_text="Also remove the checkpoint (start over). The ClickHouse rows stay either way."
    )


class ConfirmInput(serializers.Serializer):
    confirm = serializers.BooleanField(help_text="Must be true: the action cannot be undone.")

    def validate_confirm(self, value: bool) -> bool:
        if not value:
            raise serializers.ValidationError("Confirm with true: this cannot be undone.")
        return value


class PipelineRunOutput(serializers.ModelSerializer):
    version = serializers.IntegerField(source="version.number", allow_null=True, default=None)

    class Meta:
        model = PipelineRun
        fields = [
            "id",
            "version",
            "attempt",
            "host",
            "pid",
            "spark_app_id",
            "spark_master",
            "driver_memory",
            "start",
            "log_path",
            "started_at",
            "running_at",
            "stop_requested_at",
            "killed_at",
            "ended_at",
            "exit_code",
            "outcome",
            "reason",
            "cause",
            "log_tail",
            "sizing",
            "resize",
        ]


class PipelineTransitionOutput(serializers.ModelSerializer):
    class Meta:
        model = PipelineTransition
        fields = ["at", "from_status", "to_status", "reason"]


class PipelineLogOutput(serializers.Serializer):
    lines = serializers.ListField(child=serializers.CharField(allow_blank=True))


class PipelineLogInput(serializers.Serializer):
    lines = serializers.IntegerField(min_value=1, max_value=200, default=100)


class PipelineValidateInput(PlannedRateInput):
    spec = SpecField()
    name = serializers.CharField(max_length=100, required=False)
    kafka_connection = serializers.IntegerField(required=False)
    clickhouse_connection = serializers.IntegerField(required=False)
    schema_registry_connection = serializers.IntegerField(required=False)
    check_live = serializers.BooleanField(
        default=False,
        help_text="Also check topics and the target table on the systems, and sample the topics to check that the "
        "events fit the mapping, have the dedup keys and a readable event time (needs both connections).",
    )
    accept_dead_letters = accept_dead_letters_field()


class PipelineCheckInput(PlannedRateInput):
    check_live = serializers.BooleanField(default=True)
    accept_dead_letters = accept_dead_letters_field()


class ValidationOutput(serializers.Serializer):
    valid = serializers.BooleanField()
    spec = serializers.JSONField(help_text="The normalized spec (secrets masked).")
    delivery = DeliveryGuaranteeOutput(
        allow_null=True, help_text="Only with check_live: what the target table guarantees."
    )
    warnings = ValidationWarningOutput(many=True, help_text="Problems that do not make the spec invalid.")
    estimated_state = EstimatedStateOutput(
        allow_null=True,
        help_text="With dedup: the state the window holds once full, and the job's memory for it. Null when no rate "
        "is known (give events_per_second, or check_live to ask the topics).",
    )
    sample = SampleReportOutput(
        allow_null=True,
        default=None,
        help_text="With check_live: per mapped field, dedup key and event time, how the newest events fit. "
        "A blocking finding is a 400 with this report in `extra.sample`.",
    )


class PipelineStatusOutput(serializers.ModelSerializer):
    current_version = serializers.IntegerField(source="current_version.number", allow_null=True, default=None)
    deployed_version = serializers.IntegerField(source="deployed_version.number", allow_null=True, default=None)

    class Meta:
        model = Pipeline
        fields = [
            "id",
            "status",
            "status_message",
            "status_changed_at",
            "current_version",
            "deployed_version",
            "deploy_requested_at",
            "restart_at",
        ]


class PipelineOutput(PipelineStatusOutput):
    spec = serializers.JSONField(source="stored_spec", allow_null=True)

    class Meta:
        model = Pipeline
        fields = [
            "id",
            "name",
            "status",
            "status_message",
            "status_changed_at",
            "kafka_connection",
            "clickhouse_connection",
            "schema_registry_connection",
            "current_version",
            "deployed_version",
            "deploy_requested_at",
            "restart_at",
            "spec",
            "workspace",
            "created_at",
            "updated_at",
        ]


class PipelineVersionOutput(serializers.ModelSerializer):
    created_by = serializers.CharField(source="created_by.get_username", allow_null=True, default=None)
    spec = serializers.JSONField(source="stored_spec")

    class Meta:
        model = PipelineVersion
        fields = ["number", "spec", "note", "created_by", "created_at"]


def connections_of(request: Request, data: dict[str, Any]) -> dict[str, Any]:
    """Replace connection ids with connections of the user's workspaces; unknown or others' ids are a 400 on the
    field (the services then check that they are the pipeline's workspace's)."""
    out = {}
    for name, getter in (
        ("kafka_connection", connection_selectors.kafka_connection_list),
        ("clickhouse_connection", connection_selectors.clickhouse_connection_list),
        ("schema_registry_connection", connection_selectors.schema_registry_connection_list),
    ):
        if data.get(name) is not None:
            connection = getter(user=request.user).filter(pk=data[name]).first()
            if connection is None:
                raise serializers.ValidationError({name: ["No such connection."]})
            out[name] = connection
    return out


class PipelineListCreateApi(APIView):
    workspace_actions = {"POST": "pipeline.create"}  # webapp.workspaces.permissions

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_list",
        parameters=[NameQuery],
        responses={200: PipelineOutput(many=True), **ERROR_RESPONSES},
    )
    def get(self, request: Request) -> Response:
        query = validated_input(NameQuery, request.query_params)
        pipelines = selectors.pipeline_list(user=request.user, name=query.get("name"), workspace=request.workspace)
        return Response(PipelineOutput(pipelines, many=True).data)

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_create",
        request=PipelineCreateInput,
        responses={201: PipelineOutput, **ERROR_RESPONSES},
    )
    def post(self, request: Request) -> Response:
        data = validated_input(PipelineCreateInput, request.data)
        data.update(connections_of(request, data))
        pipeline = services.pipeline_create(owner=request.user, workspace=request.workspace, **data)
        return Response(PipelineOutput(pipeline).data, status=status.HTTP_201_CREATED)


class PipelineDetailOutput(PipelineOutput):
    delivery = DeliveryGuaranteeOutput(help_text="What the target table guarantees now (asked from ClickHouse).")
    pace = PaceOutput(
        allow_null=True,
        help_text="Its lag behind the topics as last read from the brokers, and whether it keeps up (null: not "
        "read, e.g. not deployed or the metrics store is down). The lag over time: `.../lag/`.",
    )

    topics_read = serializers.ListField(
        child=serializers.CharField(),
        allow_null=True,
        help_text="The topics it reads now, as the brokers last listed them: the spec's topics, or those its "
        "`source.topic_pattern` matches, including topics created since it started (null: not read yet).",
    )

    class Meta(PipelineOutput.Meta):
        fields = [*PipelineOutput.Meta.fields, "delivery", "pace", "topics_read"]


class PipelineDetailApi(APIView):
    workspace_model = Pipeline
    workspace_actions = {"PATCH": "pipeline.edit", "DELETE": "pipeline.delete"}

    @extend_schema(
        tags=TAG, operation_id="pipelines_retrieve", responses={200: PipelineDetailOutput, **ERROR_RESPONSES}
    )
    def get(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        pipeline.delivery = delivery_data(*exactly_once.pipeline_insert_dedup(pipeline=pipeline))
        pipeline.pace = pace_or_none(pipeline)
        pipeline.topics_read = metrics_history.topics_read_or_none(pipeline)
        return Response(PipelineDetailOutput(pipeline).data)

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_update",
        description="Change the name, connections or spec; a change makes a new version and keeps the old ones.",
        request=PipelineUpdateInput,
        responses={200: PipelineOutput, **ERROR_RESPONSES},
    )
    def patch(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        data = validated_input(PipelineUpdateInput, request.data)
        data.update(connections_of(request, data))
        pipeline = services.pipeline_update(pipeline=pipeline, user=request.user, **data)
        return Response(PipelineOutput(pipeline).data)

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_delete",
        description="Delete the pipeline; a running job is stopped. ClickHouse rows stay; the checkpoint stays "
        "unless `?remove_checkpoint=true`.",
        parameters=[PipelineDeleteInput],
        responses={204: None, **ERROR_RESPONSES},
    )
    def delete(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        data = validated_input(PipelineDeleteInput, request.query_params)
        services.pipeline_delete(pipeline=pipeline, user=request.user, **data)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PipelineVersionListApi(APIView):
    workspace_model = Pipeline

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_versions_list",
        responses={200: PipelineVersionOutput(many=True), **ERROR_RESPONSES},
    )
    def get(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        return Response(PipelineVersionOutput(selectors.pipeline_version_list(pipeline=pipeline), many=True).data)


class PipelineSpecValidateApi(APIView):
    reads_only = True  # a read-only API token may call it (webapp.api.permissions.TokenMayWrite)

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_validate_spec",
        description="Validate a spec without saving it. 400 lists every problem with its path (`spec.…`). With "
        "`check_live` and a Kafka connection the worker asks the systems: the answer is `202` with the `url` to GET "
        "for the validation (`pipelines_validate_spec_result`); such checks count with the samples against "
        "`CLEARFLOW_HEAVY_REQUESTS_PER_USER` and `CLEARFLOW_HEAVY_REQUESTS_PER_WORKSPACE` (a 429 in words past them).",
        request=PipelineValidateInput,
        responses={200: ValidationOutput, **heavy_request_apis.START_RESPONSES},
    )
    def post(self, request: Request) -> Response:
        data = validated_input(PipelineValidateInput, request.data)
        data.update(connections_of(request, data))
        if live_check.reads_systems(check_live=data["check_live"], kafka_connection=data.get("kafka_connection")):
            live_check.spec_check(**data)  # a spec that does not read is a 400 at once, before any system is asked
            heavy = live_check.live_check_start(user=request.user, data=data)
            return heavy_request_apis.accepted(request, heavy, "api:pipeline-spec-validate-result", url_kwargs={})
        return Response(ValidationOutput(live_check.pipeline_check(**data)).data)


class PipelineSpecValidateResultApi(APIView):
    reads_only = True

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_validate_spec_result",
        description="The live check asked for with `POST .../validate/` and `check_live`: `202` while the worker "
        "asks the systems (ask again after `Retry-After` seconds), then the validation, or its error (a 400 "
        "listing every problem with its path, 502 for a system that does not answer). Kept for 10 minutes.",
        responses=heavy_request_apis.accepted_responses(ValidationOutput, "The validation"),
    )
    def get(self, request: Request, request_id: str) -> Response:
        heavy = heavy_requests.heavy_request_get(user=request.user, pk=request_id, kind=HeavyRequest.Kind.LIVE_CHECK)
        if heavy.params.get("pipeline") is not None:
            raise Http404("No such request: it was never made by you, or it ended long ago.")
        return heavy_request_apis.answer(
            request, heavy, "api:pipeline-spec-validate-result", ValidationOutput, url_kwargs={}
        )


class PipelineValidateApi(APIView):
    workspace_model = Pipeline
    reads_only = True  # a read-only API token may call it (webapp.api.permissions.TokenMayWrite)

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_validate",
        description="Validate the pipeline's current spec, by default also against Kafka and ClickHouse: then the "
        "worker asks them and the answer is `202` with the `url` to GET for the validation "
        "(`pipelines_validate_result`), capped as the samples are. With `check_live: false`, the validation at once.",
        request=PipelineCheckInput,
        responses={200: ValidationOutput, **heavy_request_apis.START_RESPONSES},
    )
    def post(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        data = validated_input(PipelineCheckInput, request.data)
        if live_check.reads_systems(check_live=data["check_live"], kafka_connection=pipeline.kafka_connection):
            heavy = live_check.live_check_start(user=request.user, data=data, pipeline=pipeline)
            return heavy_request_apis.accepted(
                request, heavy, "api:pipeline-validate-result", url_kwargs={"pk": pipeline.pk}
            )
        result = live_check.pipeline_check(
            spec=pipeline.spec,
            kafka_connection=pipeline.kafka_connection,
            clickhouse_connection=pipeline.clickhouse_connection,
            schema_registry_connection=pipeline.schema_registry_connection,
            **data,
        )
        return Response(ValidationOutput(result).data)


class PipelineValidateResultApi(APIView):
    workspace_model = Pipeline
    reads_only = True

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_validate_result",
        description="The live check asked for with `POST .../validate/`: `202` while the worker asks the systems "
        "(ask again after `Retry-After` seconds), then the validation, or its error. Kept for 10 minutes.",
        responses=heavy_request_apis.accepted_responses(ValidationOutput, "The validation"),
    )
    def get(self, request: Request, pk: int, request_id: str) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        heavy = heavy_requests.heavy_request_get(user=request.user, pk=request_id, kind=HeavyRequest.Kind.LIVE_CHECK)
        if heavy.params.get("pipeline") != pipeline.pk:
            raise Http404("No such request: it was never made by you, or it ended long ago.")
        return heavy_request_apis.answer(
            request, heavy, "api:pipeline-validate-result", ValidationOutput, url_kwargs={"pk": pipeline.pk}
        )


class PipelineStatusApi(APIView):
    workspace_model = Pipeline

    @extend_schema(tags=TAG, operation_id="pipelines_status", responses={200: PipelineStatusOutput, **ERROR_RESPONSES})
    def get(self, request: Request, pk: int) -> Response:
        return Response(PipelineStatusOutput(selectors.pipeline_get(user=request.user, pk=pk)).data)


class PipelineRunListApi(APIView):
    workspace_model = Pipeline

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_runs_list",
        description=(
            "Every attempt to run the job, newest first: version, process, start/end, exit code, and for a failed "
            "run why in words (reason), its cause's code (cause) and the log's last lines (log_tail)."
        ),
        responses={200: PipelineRunOutput(many=True), **ERROR_RESPONSES},
    )
    def get(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        return Response(PipelineRunOutput(selectors.pipeline_run_list(pipeline=pipeline)[:100], many=True).data)


class PipelineHistoryApi(APIView):
    workspace_model = Pipeline

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_history",
        description="Status changes, newest first (time, from, to, reason).",
        responses={200: PipelineTransitionOutput(many=True), **ERROR_RESPONSES},
    )
    def get(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        transitions = selectors.pipeline_transition_list(pipeline=pipeline)[:200]
        return Response(PipelineTransitionOutput(transitions, many=True).data)


class PipelineLogApi(APIView):
    workspace_model = Pipeline

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_log",
        description="The last lines of the job's log (latest run), secrets redacted. 502 when Redis is down.",
        parameters=[PipelineLogInput],
        responses={200: PipelineLogOutput, **ERROR_RESPONSES},
    )
    def get(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        data = validated_input(PipelineLogInput, request.query_params)
        return Response({"lines": selectors.pipeline_log(pipeline=pipeline, lines=data["lines"])})


class PipelineCheckpointResetApi(APIView):
    workspace_model = Pipeline
    workspace_actions = {"POST": "pipeline.checkpoint_reset"}

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_checkpoint_reset",
        description="Start over: remove the checkpoint of a stopped pipeline (needs `confirm: true`). Its next "
        "start reads again from the spec's `source.starting_offsets` (a time replays from it); an event whose "
        "dedup key the table received within the dedup window is not written again.",
        request=ConfirmInput,
        responses={200: PipelineStatusOutput, **ERROR_RESPONSES},
    )
    def post(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        validated_input(ConfirmInput, request.data)
        pipeline = services.pipeline_checkpoint_reset(pipeline=pipeline, user=request.user)
        return Response(PipelineStatusOutput(pipeline).data)


class PipelineDeployApi(APIView):
    workspace_model = Pipeline
    workspace_actions = {"POST": "pipeline.deploy"}

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_deploy",
        description=f"Run the current version (status `{PipelineStatus.DEPLOY_REQUESTED}`, shown as Deploying, "
        "then `running`). A running pipeline is redeployed. 409 with `extra.checkpoint_problems` when the new "
        "version cannot continue from the checkpoint: send `checkpoint` then.",
        request=PipelineDeployInput,
        responses={200: PipelineStatusOutput, **ERROR_RESPONSES},
    )
    def post(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        data = validated_input(PipelineDeployInput, request.data)
        pipeline = services.pipeline_deploy(pipeline=pipeline, user=request.user, **data)
        return Response(PipelineStatusOutput(pipeline).data)


def _action_view(service: Any, operation_id: str, description: str, action: str) -> type[APIView]:
    class ActionApi(APIView):
        workspace_model = Pipeline
        workspace_actions = {"POST": action}

        @extend_schema(
            tags=TAG,
            operation_id=operation_id,
            description=description,
            request=None,
            responses={200: PipelineStatusOutput, **ERROR_RESPONSES},
        )
        def post(self, request: Request, pk: int) -> Response:
            pipeline = selectors.pipeline_get(user=request.user, pk=pk)
            pipeline = service(pipeline=pipeline, user=request.user)
            return Response(PipelineStatusOutput(pipeline).data)

    ActionApi.__name__ = ActionApi.__qualname__ = "".join(p.title() for p in operation_id.split("_")) + "Api"
    return ActionApi


PipelineStopApi = _action_view(
    services.pipeline_stop,
    "pipelines_stop",
    "Stop the pipeline: graceful (the job finishes its micro-batch), forced after the stop timeout; a deploy "
    "whose job has not started is withdrawn at once.",
    "pipeline.stop",
)
PipelineResumeApi = _action_view(
    services.pipeline_resume,
    "pipelines_resume",
    "Start a stopped or failed pipeline again with its last version, from its checkpoint.",
    "pipeline.resume",
)
