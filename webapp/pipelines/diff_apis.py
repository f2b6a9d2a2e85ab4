"""REST API: what saving a spec as a pipeline's new version would change (for clients that apply files, such
as `clearflow apply`), without saving anything."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.errors import ERROR_RESPONSES
from webapp.api.inputs import validated_input
from webapp.api.outputs import ChangeOutput
from webapp.pipelines import selectors
from webapp.pipelines.api_serializers import SpecField
from webapp.pipelines.apis import TAG, connections_of
from webapp.pipelines.models import Pipeline


class PipelineDiffInput(serializers.Serializer):
    spec = SpecField(help_text="The spec as for an update: connection sections come from the connections.")
    kafka_connection = serializers.IntegerField(required=False, help_text="Id of one of your Kafka connections.")
    clickhouse_connection = serializers.IntegerField(
        required=False, help_text="Id of one of your ClickHouse connections."
    )
    schema_registry_connection = serializers.IntegerField(
        required=False,
        help_text="Id of one of your schema registry connections (format avro or protobuf); left out, the "
        "pipeline's stays while the spec reads Avro or Protobuf, as in an update.",
    )


class PipelineDiffOutput(serializers.Serializer):
    changed = serializers.BooleanField(help_text="Saving this would make a new version.")
    current_version = serializers.IntegerField(allow_null=True)
    changes = ChangeOutput(many=True, help_text="Compared without the connections' own details (they are theirs).")
    redeploys = serializers.BooleanField(help_text="The pipeline runs: saving the change redeploys it.")
    checkpoint_problems = serializers.ListField(
        child=serializers.CharField(),
        help_text="Why the new version could not continue from the checkpoint: a deploy then needs `checkpoint`.",
    )


class PipelineDiffApi(APIView):
    workspace_model = Pipeline
    reads_only = True  # a read-only API token may call it (webapp.api.permissions.TokenMayWrite)

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_diff",
        description="What an update with this spec (and connections) would change, without saving anything: the "
        "same checks as an update (400 with spec paths), then each changed field with its current and new value.",
        request=PipelineDiffInput,
        responses={200: PipelineDiffOutput, **ERROR_RESPONSES},
    )
    def post(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        data = validated_input(PipelineDiffInput, request.data)
        data.update(connections_of(request, data))
        diff = selectors.pipeline_changes(pipeline=pipeline, **data)
        output = {
            "changed": diff.changed,
            "current_version": pipeline.current_version.number if pipeline.current_version else None,
            "changes": diff.changes,
            "redeploys": diff.redeploys,
            "checkpoint_problems": diff.checkpoint_problems,
        }
        return Response(PipelineDiffOutput(output).data)
