"""The API side of schema changes (`webapp.pipelines.schema_changes`): what the events carry that the pipeline does
not read (or no longer find), and the one action that adds a new field as a column."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.errors import ERROR_RESPONSES
from webapp.api.inputs import validated_input
from webapp.pipelines import column_fill, schema_changes, selectors
from webapp.pipelines.api_serializers import PipelineOutput
from webapp.pipelines.models import Pipeline

TAG = ["Pipelines"]


class SchemaChangeOutput(serializers.Serializer):
    kind = serializers.ChoiceField(["new", "removed", "retyped"])
    path = serializers.CharField()
    message = serializers.CharField(
        help_text="In words: 'new field `coupon` (string or null) seen in 1,204 events since 10:02'."
    )
    field_type = serializers.CharField(
        allow_null=True, help_text="new: the field type to read it as; retyped: the type the schema has now."
    )
    schema_type = serializers.CharField(allow_null=True, help_text="What the Avro schema says; null for JSON keys.")
    events = serializers.IntegerField(help_text="Events seen with it (new) or written with the schema that changed it.")
    estimated = serializers.BooleanField(help_text="Counted from the JSON sample (1 event in 16), not exact.")
    since = serializers.CharField(allow_null=True, help_text="ISO time of the first batch that had it.")
    schema_id = serializers.IntegerField(allow_null=True)
    effect = serializers.CharField(help_text="What it does to the mapping.")
    column = serializers.CharField(allow_null=True, help_text="new: the column `add-column` would add.")
    column_type = serializers.CharField(allow_null=True, help_text="new: its ClickHouse type.")
    rows_since = serializers.IntegerField(
        allow_null=True,
        help_text="new: rows written since it showed (counted in ClickHouse): they hold NULL for it until "
        "`add-column` fills them from their events read again.",
    )


class SchemaChangesOutput(serializers.Serializer):
    changes = SchemaChangeOutput(many=True)
    last_fill = serializers.CharField(help_text="The last column fill in words; empty when none.")


class AddColumnInput(serializers.Serializer):
    path = serializers.CharField(max_length=500, help_text="A new field's path, as `changes[].path` lists it.")


class AddColumnOutput(serializers.Serializer):
    column = serializers.CharField()
    pipeline = PipelineOutput()


class PipelineSchemaChangesApi(APIView):
    workspace_model = Pipeline

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_schema_changes",
        description="Fields the events carry that the pipeline does not read (a new Avro schema version, a new JSON "
        "key), and fields it reads that the newest schema removed or retyped, with what that does to the mapping.",
        responses={200: SchemaChangesOutput, **ERROR_RESPONSES},
    )
    def get(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        changes = schema_changes.pipeline_schema_changes(pipeline=pipeline)
        last_fill = column_fill.last_fill_message(pipeline)
        return Response(SchemaChangesOutput({"changes": changes, "last_fill": last_fill}).data)


class PipelineAddColumnApi(APIView):
    workspace_model = Pipeline

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_schema_changes_add_column",
        description="Add a new field as a column: ALTER TABLE … ADD COLUMN with the proposed type on a table "
        "ClearFlow created (409 for a table made by hand, with the statement to run), then a new version mapping "
        "the field to it; a running pipeline continues from its checkpoint with that version. The rows written before "
        "it are then filled from their events read again from Kafka (`last_fill` of schema-changes says how many).",
        request=AddColumnInput,
        responses={200: AddColumnOutput, **ERROR_RESPONSES},
    )
    def post(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        data = validated_input(AddColumnInput, request.data)
        pipeline, column = schema_changes.pipeline_field_add_column(
            pipeline=pipeline, user=request.user, path=data["path"]
        )
        return Response(AddColumnOutput({"column": column, "pipeline": pipeline}).data)
