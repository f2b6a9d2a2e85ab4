"""POST /api/v1/pipelines/{id}/rollback/: deploy an earlier version again (`webapp.pipelines.rollback`)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.errors import ERROR_RESPONSES
from webapp.api.inputs import validated_input
from webapp.pipelines import selectors
from webapp.pipelines.api_serializers import CHECKPOINT_HELP, PipelineStatusOutput
from webapp.pipelines.apis import TAG
from webapp.pipelines.models import Pipeline
from webapp.pipelines.rollback import pipeline_rollback


class PipelineRollbackInput(serializers.Serializer):
    version = serializers.IntegerField(min_value=1, help_text="The number of the version to deploy again.")
    checkpoint = serializers.ChoiceField(["keep", "fresh"], required=False, help_text=CHECKPOINT_HELP)


class PipelineRollbackApi(APIView):
    workspace_model = Pipeline
    workspace_actions = {"POST": "pipeline.deploy"}  # a rollback deploys: an editor's right

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_rollback",
        description="Deploy version N again: a new version with N's spec (the current one when it already holds "
        "it), deployed. 409 with `extra.checkpoint_problems` when it cannot continue from the checkpoint: send "
        "`checkpoint` then; nothing is saved until it can.",
        request=PipelineRollbackInput,
        responses={200: PipelineStatusOutput, **ERROR_RESPONSES},
    )
    def post(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        data = validated_input(PipelineRollbackInput, request.data)
        pipeline = pipeline_rollback(pipeline=pipeline, user=request.user, **data)
        return Response(PipelineStatusOutput(pipeline).data)
