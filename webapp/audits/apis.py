"""REST API for duplicate audits: the user's audited tables (list, add by hand, remove), their results, and a
pipeline's latest audit. Other people's tables, connections and pipelines are 404."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field, extend_schema_view
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from clearflow_spec.spec import MAX_WINDOW_SECONDS
from webapp.api.errors import ERROR_RESPONSES
from webapp.api.inputs import validated_input
from webapp.audits import selectors, services
from webapp.audits.models import MAX_KEY_COLUMNS, AuditedTable, AuditResult
from webapp.connections.selectors import clickhouse_connection_get
from webapp.pipelines.models import Pipeline
from webapp.pipelines.selectors import pipeline_get

TAG = ["Duplicate audits"]


class AuditResultOutput(serializers.ModelSerializer):
    class Meta:
        model = AuditResult
        fields = [
            "id",
            "checked_at",
            "window_seconds",
            "duplicate_keys",
            "duplicate_rows",
            "elapsed_ms",
            "query",
            "error",
        ]


class AuditedTableOutput(serializers.ModelSerializer):
    connection_name = serializers.CharField(source="connection.name", read_only=True)
    windows = serializers.ListField(child=serializers.IntegerField(), read_only=True)
    latest = serializers.SerializerMethodField(help_text="The newest result of each window, the hour first.")

    class Meta:
        model = AuditedTable
        fields = [
            "id",
            "connection",
            "connection_name",
            "database",
            "table",
            "key_columns",
            "time_column",
            "extra_window_seconds",
            "windows",
            "pipeline",
            "latest",
            "workspace",
            "created_at",
        ]

    @extend_schema_field(AuditResultOutput(many=True))
    def get_latest(self, audited: AuditedTable) -> list[dict]:
        return AuditResultOutput(selectors.latest_results(audited_table=audited), many=True).data


class AuditedTableInput(serializers.Serializer):
    connection = serializers.IntegerField(help_text="One of your ClickHouse connections.")
    database = serializers.CharField(max_length=255, required=False, help_text="Default: the connection's.")
    table = serializers.CharField(max_length=255)
    key_columns = serializers.ListField(
        child=serializers.CharField(max_length=255), min_length=1, max_length=MAX_KEY_COLUMNS
    )
    time_column = serializers.CharField(max_length=255, help_text="A Date/DateTime column: bounds the check.")
    extra_window_seconds = serializers.IntegerField(
        min_value=60, max_value=MAX_WINDOW_SECONDS, required=False, allow_null=True,
        help_text="A second window checked besides the last hour.",
    )  # fmt: skip


class ResultsQuery(serializers.Serializer):
    limit = serializers.IntegerField(min_value=1, max_value=1000, default=100)


class PipelineAuditOutput(serializers.Serializer):
    audited_table = AuditedTableOutput(allow_null=True, help_text="null until the pipeline has run.")


@extend_schema_view(
    get=extend_schema(tags=TAG, operation_id="audits_list", responses=AuditedTableOutput(many=True)),
    post=extend_schema(
        tags=TAG,
        operation_id="audits_create",
        description="Add a table to the periodic duplicate audit. The table and columns are checked in ClickHouse.",
        request=AuditedTableInput,
        responses={201: AuditedTableOutput, **ERROR_RESPONSES},
    ),
)
class AuditedTableListCreateApi(APIView):
    workspace_actions = {"POST": "audit.edit"}  # webapp.workspaces.permissions

    def get(self, request: Request) -> Response:
        return Response(
            AuditedTableOutput(
                selectors.audited_table_list(user=request.user, workspace=request.workspace), many=True
            ).data
        )

    def post(self, request: Request) -> Response:
        data = validated_input(AuditedTableInput, request.data)
        connection = clickhouse_connection_get(user=request.user, pk=data.pop("connection"))
        data.setdefault("database", connection.database)
        audited = services.audited_table_create(
            owner=request.user, connection=connection, workspace=request.workspace, **data
        )
        return Response(AuditedTableOutput(audited).data, status=status.HTTP_201_CREATED)


@extend_schema_view(
    get=extend_schema(tags=TAG, operation_id="audits_retrieve", responses={200: AuditedTableOutput, **ERROR_RESPONSES}),
    delete=extend_schema(
        tags=TAG,
        operation_id="audits_delete",
        description="Stop auditing a table added by hand (its results go too). A pipeline's own table: 400.",
        responses={204: None, **ERROR_RESPONSES},
    ),
)
class AuditedTableDetailApi(APIView):
    workspace_model = AuditedTable
    workspace_actions = {"DELETE": "audit.edit"}

    def get(self, request: Request, pk: int) -> Response:
        return Response(AuditedTableOutput(selectors.audited_table_get(user=request.user, pk=pk)).data)

    def delete(self, request: Request, pk: int) -> Response:
        services.audited_table_delete(
            audited_table=selectors.audited_table_get(user=request.user, pk=pk), actor=request.user
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema_view(
    get=extend_schema(
        tags=TAG,
        operation_id="audits_results",
        description="The table's checks, newest first (each window is its own result).",
        parameters=[ResultsQuery],
        responses={200: AuditResultOutput(many=True), **ERROR_RESPONSES},
    )
)
class AuditResultListApi(APIView):
    workspace_model = AuditedTable

    def get(self, request: Request, pk: int) -> Response:
        audited = selectors.audited_table_get(user=request.user, pk=pk)
        query = validated_input(ResultsQuery, request.query_params)
        results = selectors.audit_result_list(audited_table=audited)[: query["limit"]]
        return Response(AuditResultOutput(results, many=True).data)


@extend_schema_view(
    get=extend_schema(
        tags=TAG,
        operation_id="pipelines_audit",
        description="The pipeline's audited table with its newest results (null before its first run).",
        responses={200: PipelineAuditOutput, **ERROR_RESPONSES},
    )
)
class PipelineAuditApi(APIView):
    workspace_model = Pipeline

    def get(self, request: Request, pk: int) -> Response:
        pipeline = pipeline_get(user=request.user, pk=pk)
        audited = selectors.audited_table_of_pipeline(pipeline=pipeline)
        return Response(PipelineAuditOutput({"audited_table": audited}).data)
