"""REST API: the columns proposed for a pipeline's fields (`POST /pipelines/mapping/`), into an existing table or
for a new one, through the pipelines' mapping service (`webapp.pipelines.mapping`) the wizard uses too."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from clearflow_spec.clickhouse_types import clickhouse_type_error
from clearflow_spec.field_types import field_type_compatible, field_type_text
from clearflow_spec.limits import FIELDS
from webapp.api.errors import ERROR_RESPONSES
from webapp.api.inputs import validated_input
from webapp.pipelines import selectors
from webapp.pipelines.apis import TAG, connections_of
from webapp.pipelines.mapping import SourceField


class MappingFieldInput(serializers.Serializer):
    path = serializers.CharField(max_length=500)
    type = serializers.CharField(
        max_length=500,
        help_text="A field type: a scalar (string, int, uuid...) or a nested one in Spark's spelling "
        "(array<T>, map<string,T>, struct<name:T,...>), as infer-schema answers it.",
    )
    nullable = serializers.BooleanField(default=False)
    clickhouse_type = serializers.CharField(
        max_length=500,
        required=False,
        allow_null=True,
        default=None,
        help_text="For a new table: the column type the field's schema proposes (infer-schema's `clickhouse_type` "
        "with a schema registry: Decimal(P, S), DateTime64(3, 'UTC'), Date, LowCardinality(String)...); left out, "
        "the field type's default.",
    )

    def validate_type(self, value: str) -> str:
        try:
            return field_type_text(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        column_type = attrs.get("clickhouse_type")
        if column_type is not None:
            if problem := clickhouse_type_error(column_type):
                raise serializers.ValidationError({"clickhouse_type": [problem]})
            if not field_type_compatible(attrs["type"], column_type):
                message = f"a {attrs['type']} field cannot be written to {column_type}"
                raise serializers.ValidationError({"clickhouse_type": [message]})
        return attrs


class MappingInput(serializers.Serializer):
    fields = MappingFieldInput(many=True, allow_empty=False, max_length=FIELDS.maximum)
    clickhouse_connection = serializers.IntegerField(required=False, help_text="Needed for an existing table.")
    database = serializers.CharField(max_length=255, required=False)
    table = serializers.CharField(
        max_length=255,
        required=False,
        help_text="An existing table (its columns are matched), or the name of one to create (columns are proposed, "
        "as when it is left out).",
    )
    order_by = serializers.ListField(
        child=serializers.CharField(max_length=500),
        required=False,
        default=list,
        max_length=100,
        help_text="For a new table: the fields of its ORDER BY (their columns are never proposed Nullable).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("table") and attrs.get("clickhouse_connection") is None:
            raise serializers.ValidationError({"clickhouse_connection": ["Needed to read an existing table."]})
        return attrs


class ColumnMappingOutput(serializers.Serializer):
    field = serializers.CharField()
    column = serializers.CharField()
    type = serializers.CharField()
    compatible = serializers.BooleanField()
    problem = serializers.CharField(allow_blank=True)


class MappingOutput(serializers.Serializer):
    columns = ColumnMappingOutput(many=True, help_text="Usable as spec.sink.columns (field, column, type).")
    unmapped_required = serializers.ListField(child=serializers.CharField())
    unmapped_fields = serializers.ListField(child=serializers.CharField())
    create_table = serializers.BooleanField(
        help_text="True when the table does not exist yet: the columns are proposed for it (spec.sink.create_table)."
    )


class PipelineMappingApi(APIView):
    reads_only = True  # a read-only API token may call it (webapp.api.permissions.TokenMayWrite)

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_mapping_suggest",
        description=(
            "Map fields to columns by name (nested paths with '_' for '.'): into an existing table, flagging "
            "incompatible types and required columns left unmapped, or for a new table (none named, or a name that "
            "does not exist yet in the database) with the types the fields' schema proposes (`clickhouse_type`), "
            "else the field types' defaults."
        ),
        request=MappingInput,
        responses={200: MappingOutput, **ERROR_RESPONSES},
    )
    def post(self, request: Request) -> Response:
        data = validated_input(MappingInput, request.data)
        connections = connections_of(request, data)
        suggestion = selectors.pipeline_mapping_suggest(
            fields=[SourceField(**f) for f in data["fields"]],
            clickhouse_connection=connections.get("clickhouse_connection"),
            database=data.get("database"),
            table=data.get("table"),
            order_by=data["order_by"],
        )
        return Response(MappingOutput(suggestion).data)
