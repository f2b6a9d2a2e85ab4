"""REST API for connections and what they hold (one view per action; the view validates, calls one
service or selector, serializes the result). Secrets are write-only: outputs say only whether one is set, and a
diff says only whether one would change.
"""

from __future__ import annotations

from dataclasses import dataclass

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from spark_jobs.field_types import FIELD_TYPE_CHOICES, FIELD_TYPES
from webapp.api.errors import ERROR_RESPONSES
from webapp.api.inputs import NameQuery, validated_input
from webapp.api.outputs import ChangeOutput
from webapp.connections import kinds, selectors
from webapp.connections.kinds import ConnectionKind
from webapp.connections.models import ClickHouseConnection, KafkaConnection

KAFKA_TAG = ["Kafka connections"]
CLICKHOUSE_TAG = ["ClickHouse connections"]


# -- serializers ----------------------------------------------------------------------------------------


def _input_meta(model: type[KafkaConnection] | type[ClickHouseConnection]) -> type:
    """Input serializers' Meta: the fields a user sets (`EDITABLE_FIELDS`, read from the spec's connection model);
    secrets write-only and taken as typed."""
    return type(
        "Meta",
        (),
        {
            "model": model,
            "fields": list(model.EDITABLE_FIELDS),
            "extra_kwargs": {name: {"write_only": True, "trim_whitespace": False} for name in model.SECRET_FIELDS},
        },
    )


def _output_fields(model: type[KafkaConnection] | type[ClickHouseConnection], flags: dict[str, str]) -> list[str]:
    """Outputs show every setting but the secrets; `flags` names the `has_…` field shown after each secret."""
    fields = ["id"]
    for name in model.EDITABLE_FIELDS:
        fields.append(flags[name] if name in model.SECRET_FIELDS else name)
    return [*fields, "created_at", "updated_at"]


class KafkaConnectionInput(serializers.ModelSerializer):
    # The model's fields and validators; the services validate again (model.clean) and save.
    Meta = _input_meta(KafkaConnection)


class KafkaConnectionOutput(serializers.ModelSerializer):
    has_sasl_password = serializers.BooleanField(read_only=True)
    has_ssl_key = serializers.BooleanField(read_only=True)

    class Meta:
        model = KafkaConnection
        fields = _output_fields(KafkaConnection, {"sasl_password": "has_sasl_password", "ssl_key_pem": "has_ssl_key"})


class ConnectionDiffOutput(serializers.Serializer):
    exists = serializers.BooleanField(help_text="You have a connection of this name: saving would change it.")
    id = serializers.IntegerField(allow_null=True)
    changes = ChangeOutput(many=True, help_text="Fields that would change; a secret's values are never shown.")


class KafkaClusterInfoOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    brokers = serializers.ListField(child=serializers.CharField())
    topic_count = serializers.IntegerField()
    cluster_id = serializers.CharField(allow_null=True)


class TopicOutput(serializers.Serializer):
    name = serializers.CharField()
    partitions = serializers.IntegerField()
    message_count = serializers.IntegerField(allow_null=True, help_text="Estimate: high minus low watermark.")


class SampleInput(serializers.Serializer):
    topics = serializers.ListField(child=serializers.CharField(max_length=249), min_length=1, max_length=50)
    count = serializers.IntegerField(min_value=1, max_value=500, default=20)
    position = serializers.ChoiceField(["newest", "oldest"], default="newest")


class SampledEventOutput(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField()
    offset = serializers.IntegerField()
    timestamp = serializers.DateTimeField(allow_null=True)
    key = serializers.CharField(allow_null=True)
    value = serializers.JSONField()
    is_json = serializers.BooleanField()
    size = serializers.IntegerField()


class InferredFieldOutput(serializers.Serializer):
    path = serializers.CharField()
    type = serializers.ChoiceField(list(FIELD_TYPE_CHOICES))
    nullable = serializers.BooleanField()
    present = serializers.IntegerField()
    examples = serializers.ListField(child=serializers.JSONField())


class InferSchemaOutput(serializers.Serializer):
    sampled = serializers.IntegerField()
    fields = InferredFieldOutput(many=True)


class ClickHouseConnectionInput(serializers.ModelSerializer):
    Meta = _input_meta(ClickHouseConnection)


class ClickHouseConnectionOutput(serializers.ModelSerializer):
    has_password = serializers.BooleanField(read_only=True)

    class Meta:
        model = ClickHouseConnection
        fields = _output_fields(ClickHouseConnection, {"password": "has_password"})


class ClickHouseServerInfoOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    version = serializers.CharField()
    database_count = serializers.IntegerField()


class DatabaseOutput(serializers.Serializer):
    name = serializers.CharField()


class TableOutput(serializers.Serializer):
    name = serializers.CharField()
    engine = serializers.CharField()
    total_rows = serializers.IntegerField(allow_null=True)


class ColumnOutput(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField()
    nullable = serializers.BooleanField()
    default_kind = serializers.CharField(allow_blank=True)
    default_expression = serializers.CharField(allow_blank=True)
    in_sorting_key = serializers.BooleanField()
    required = serializers.BooleanField(help_text="Not Nullable and no default: an insert must give a value.")
    comment = serializers.CharField(allow_blank=True)


# -- connections: the same views for both kinds -----------------------------------------------------------


@dataclass(frozen=True)
class _ApiKind(ConnectionKind):
    """A kind of connection (`webapp.connections.kinds`) with its serializers."""

    input: type[serializers.Serializer]
    output: type[serializers.Serializer]
    test_output: type[serializers.Serializer]


_KAFKA = _ApiKind(
    **vars(kinds.KAFKA), input=KafkaConnectionInput, output=KafkaConnectionOutput, test_output=KafkaClusterInfoOutput
)
_CLICKHOUSE = _ApiKind(
    **vars(kinds.CLICKHOUSE),
    input=ClickHouseConnectionInput,
    output=ClickHouseConnectionOutput,
    test_output=ClickHouseServerInfoOutput,
)


class _ConnectionListCreateApi(APIView):
    kind: _ApiKind

    def get(self, request: Request) -> Response:
        query = validated_input(NameQuery, request.query_params)
        connections = self.kind.list(user=request.user, name=query.get("name"))
        return Response(self.kind.output(connections, many=True).data)

    def post(self, request: Request) -> Response:
        data = validated_input(self.kind.input, request.data)
        connection = self.kind.create(owner=request.user, data=data)
        return Response(self.kind.output(connection).data, status=status.HTTP_201_CREATED)


class _ConnectionDetailApi(APIView):
    kind: _ApiKind

    def get(self, request: Request, pk: int) -> Response:
        connection = self.kind.get(user=request.user, pk=pk)
        return Response(self.kind.output(connection).data)

    def patch(self, request: Request, pk: int) -> Response:
        connection = self.kind.get(user=request.user, pk=pk)
        data = validated_input(self.kind.input, request.data, partial=True)
        connection = self.kind.update(connection=connection, data=data)
        return Response(self.kind.output(connection).data)

    def delete(self, request: Request, pk: int) -> Response:
        connection = self.kind.get(user=request.user, pk=pk)
        self.kind.delete(connection=connection)
        return Response(status=status.HTTP_204_NO_CONTENT)


class _ConnectionDiffApi(APIView):
    kind: _ApiKind
    reads_only = True  # a read-only API token may call it (webapp.api.permissions.TokenMayWrite)

    def post(self, request: Request) -> Response:
        data = validated_input(self.kind.input, request.data)
        diff = selectors.connection_changes(model=self.kind.model, owner=request.user, data=data)
        connection = diff.connection
        output = {"exists": connection is not None, "id": getattr(connection, "pk", None), "changes": diff.changes}
        return Response(ConnectionDiffOutput(output).data)


class _ConnectionTestApi(APIView):
    kind: _ApiKind

    def post(self, request: Request, pk: int) -> Response:
        connection = self.kind.get(user=request.user, pk=pk)
        info = self.kind.test(connection=connection)
        return Response(self.kind.test_output({"ok": True, **info.__dict__}).data)


class _ConnectionTestUnsavedApi(APIView):
    kind: _ApiKind

    def post(self, request: Request) -> Response:
        data = validated_input(self.kind.input, request.data)
        connection = self.kind.build(owner=request.user, data=data)
        info = self.kind.test(connection=connection)
        return Response(self.kind.test_output({"ok": True, **info.__dict__}).data)


# -- Kafka ----------------------------------------------------------------------------------------------


@extend_schema_view(
    get=extend_schema(
        tags=KAFKA_TAG,
        operation_id="kafka_connections_list",
        parameters=[NameQuery],
        responses={200: KafkaConnectionOutput(many=True), **ERROR_RESPONSES},
    ),
    post=extend_schema(
        tags=KAFKA_TAG,
        operation_id="kafka_connections_create",
        request=KafkaConnectionInput,
        responses={201: KafkaConnectionOutput, **ERROR_RESPONSES},
    ),
)
class KafkaConnectionListCreateApi(_ConnectionListCreateApi):
    kind = _KAFKA


@extend_schema_view(
    post=extend_schema(
        tags=KAFKA_TAG,
        operation_id="kafka_connections_diff",
        request=KafkaConnectionInput,
        description="What saving these settings under their `name` would do, without saving anything: "
        "create a connection, or change these fields of yours (checked as when saving: 400 by field). "
        "A secret left out is kept; a secret's values are never returned.",
        responses={200: ConnectionDiffOutput, **ERROR_RESPONSES},
    )
)
class KafkaConnectionDiffApi(_ConnectionDiffApi):
    kind = _KAFKA


@extend_schema_view(
    get=extend_schema(tags=KAFKA_TAG, operation_id="kafka_connections_retrieve", responses=KafkaConnectionOutput),
    patch=extend_schema(
        tags=KAFKA_TAG,
        operation_id="kafka_connections_update",
        description="Change the given fields. A secret is changed only when sent; an empty string clears it.",
        request=KafkaConnectionInput(partial=True),
        responses={200: KafkaConnectionOutput, **ERROR_RESPONSES},
    ),
    delete=extend_schema(
        tags=KAFKA_TAG, operation_id="kafka_connections_delete", responses={204: None, **ERROR_RESPONSES}
    ),
)
class KafkaConnectionDetailApi(_ConnectionDetailApi):
    kind = _KAFKA


@extend_schema_view(
    post=extend_schema(
        tags=KAFKA_TAG,
        operation_id="kafka_connections_test",
        request=None,
        description="Ask the cluster for its brokers and topics (a few seconds at most). 502 with the reason.",
        responses={200: KafkaClusterInfoOutput, **ERROR_RESPONSES},
    )
)
class KafkaConnectionTestApi(_ConnectionTestApi):
    kind = _KAFKA


@extend_schema_view(
    post=extend_schema(
        tags=KAFKA_TAG,
        operation_id="kafka_connections_test_unsaved",
        request=KafkaConnectionInput,
        description="Test connection settings without saving them.",
        responses={200: KafkaClusterInfoOutput, **ERROR_RESPONSES},
    )
)
class KafkaConnectionTestUnsavedApi(_ConnectionTestUnsavedApi):
    kind = _KAFKA


class KafkaTopicListApi(APIView):
    @extend_schema(
        tags=KAFKA_TAG, operation_id="kafka_topics_list", responses={200: TopicOutput(many=True), **ERROR_RESPONSES}
    )
    def get(self, request: Request, pk: int) -> Response:
        connection = selectors.kafka_connection_get(user=request.user, pk=pk)
        topics = selectors.kafka_topic_list(connection=connection)
        return Response(TopicOutput(topics, many=True).data)


class KafkaSampleApi(APIView):
    @extend_schema(
        tags=KAFKA_TAG,
        operation_id="kafka_events_sample",
        request=SampleInput,
        description="Up to `count` newest or oldest events of the topics, oldest first. Nothing is committed.",
        responses={200: SampledEventOutput(many=True), **ERROR_RESPONSES},
    )
    def post(self, request: Request, pk: int) -> Response:
        connection = selectors.kafka_connection_get(user=request.user, pk=pk)
        data = validated_input(SampleInput, request.data)
        events = selectors.kafka_event_sample(connection=connection, **data)
        return Response(SampledEventOutput(events, many=True).data)


class KafkaInferSchemaApi(APIView):
    @extend_schema(
        tags=KAFKA_TAG,
        operation_id="kafka_schema_infer",
        request=SampleInput,
        description=f"Sample the topics and infer fields: dotted paths; {', '.join(FIELD_TYPES)}.",
        responses={200: InferSchemaOutput, **ERROR_RESPONSES},
    )
    def post(self, request: Request, pk: int) -> Response:
        connection = selectors.kafka_connection_get(user=request.user, pk=pk)
        data = validated_input(SampleInput, request.data)
        events = selectors.kafka_event_sample(connection=connection, **data)
        fields = selectors.schema_infer(values=[event.value for event in events])
        return Response(InferSchemaOutput({"sampled": len(events), "fields": fields}).data)


# -- ClickHouse -----------------------------------------------------------------------------------------


@extend_schema_view(
    get=extend_schema(
        tags=CLICKHOUSE_TAG,
        operation_id="clickhouse_connections_list",
        parameters=[NameQuery],
        responses={200: ClickHouseConnectionOutput(many=True), **ERROR_RESPONSES},
    ),
    post=extend_schema(
        tags=CLICKHOUSE_TAG,
        operation_id="clickhouse_connections_create",
        request=ClickHouseConnectionInput,
        responses={201: ClickHouseConnectionOutput, **ERROR_RESPONSES},
    ),
)
class ClickHouseConnectionListCreateApi(_ConnectionListCreateApi):
    kind = _CLICKHOUSE


@extend_schema_view(
    post=extend_schema(
        tags=CLICKHOUSE_TAG,
        operation_id="clickhouse_connections_diff",
        request=ClickHouseConnectionInput,
        description="What saving these settings under their `name` would do, without saving anything: "
        "create a connection, or change these fields of yours (checked as when saving: 400 by field). "
        "A password left out is kept; a secret's values are never returned.",
        responses={200: ConnectionDiffOutput, **ERROR_RESPONSES},
    )
)
class ClickHouseConnectionDiffApi(_ConnectionDiffApi):
    kind = _CLICKHOUSE


@extend_schema_view(
    get=extend_schema(
        tags=CLICKHOUSE_TAG, operation_id="clickhouse_connections_retrieve", responses=ClickHouseConnectionOutput
    ),
    patch=extend_schema(
        tags=CLICKHOUSE_TAG,
        operation_id="clickhouse_connections_update",
        description="Change the given fields. The password is changed only when sent; an empty string clears it.",
        request=ClickHouseConnectionInput(partial=True),
        responses={200: ClickHouseConnectionOutput, **ERROR_RESPONSES},
    ),
    delete=extend_schema(
        tags=CLICKHOUSE_TAG, operation_id="clickhouse_connections_delete", responses={204: None, **ERROR_RESPONSES}
    ),
)
class ClickHouseConnectionDetailApi(_ConnectionDetailApi):
    kind = _CLICKHOUSE


@extend_schema_view(
    post=extend_schema(
        tags=CLICKHOUSE_TAG,
        operation_id="clickhouse_connections_test",
        request=None,
        responses={200: ClickHouseServerInfoOutput, **ERROR_RESPONSES},
    )
)
class ClickHouseConnectionTestApi(_ConnectionTestApi):
    kind = _CLICKHOUSE


@extend_schema_view(
    post=extend_schema(
        tags=CLICKHOUSE_TAG,
        operation_id="clickhouse_connections_test_unsaved",
        request=ClickHouseConnectionInput,
        description="Test connection settings without saving them.",
        responses={200: ClickHouseServerInfoOutput, **ERROR_RESPONSES},
    )
)
class ClickHouseConnectionTestUnsavedApi(_ConnectionTestUnsavedApi):
    kind = _CLICKHOUSE


class ClickHouseDatabaseListApi(APIView):
    @extend_schema(
        tags=CLICKHOUSE_TAG,
        operation_id="clickhouse_databases_list",
        responses={200: DatabaseOutput(many=True), **ERROR_RESPONSES},
    )
    def get(self, request: Request, pk: int) -> Response:
        connection = selectors.clickhouse_connection_get(user=request.user, pk=pk)
        names = selectors.clickhouse_database_list(connection=connection)
        return Response(DatabaseOutput([{"name": name} for name in names], many=True).data)


class ClickHouseTableListApi(APIView):
    @extend_schema(
        tags=CLICKHOUSE_TAG,
        operation_id="clickhouse_tables_list",
        responses={200: TableOutput(many=True), **ERROR_RESPONSES},
    )
    def get(self, request: Request, pk: int, database: str) -> Response:
        connection = selectors.clickhouse_connection_get(user=request.user, pk=pk)
        tables = selectors.clickhouse_table_list(connection=connection, database=database)
        return Response(TableOutput(tables, many=True).data)


class ClickHouseColumnListApi(APIView):
    @extend_schema(
        tags=CLICKHOUSE_TAG,
        operation_id="clickhouse_columns_list",
        responses={200: ColumnOutput(many=True), **ERROR_RESPONSES},
    )
    def get(self, request: Request, pk: int, database: str, table: str) -> Response:
        connection = selectors.clickhouse_connection_get(user=request.user, pk=pk)
        columns = selectors.clickhouse_column_list(connection=connection, database=database, table=table)
        return Response(ColumnOutput(columns, many=True).data)
