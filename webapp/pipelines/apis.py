"""REST API for pipelines: CRUD with the spec JSON, find by name, validate, deploy, stop, resume, status,
versions (the diff of a spec against the current version: `diff_apis`; the serializers: `api_serializers`)."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.errors import ERROR_RESPONSES
from webapp.api.inputs import NameQuery, validated_input
from webapp.connections import heavy_request_apis, heavy_requests
from webapp.connections import selectors as connection_selectors
from webapp.connections.models import HeavyRequest
from webapp.pipelines import exactly_once, live_check, metrics_history, selectors, services
from webapp.pipelines.api_serializers import (
    ConfirmInput,
    PipelineCheckInput,
    PipelineCreateInput,
    PipelineDeleteInput,
    PipelineDeployInput,
    PipelineDetailOutput,
    PipelineLogInput,
    PipelineLogOutput,
    PipelineOutput,
    PipelineRunOutput,
    PipelineStatusOutput,
    PipelineTransitionOutput,
    PipelineUpdateInput,
    PipelineValidateInput,
    PipelineVersionOutput,
    ValidationOutput,
)
from webapp.pipelines.exactly_once_apis import delivery_data
from webapp.pipelines.models import Pipeline, PipelineStatus
from webapp.pipelines.observe_apis import pace_or_none

TAG = ["Pipelines"]


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
