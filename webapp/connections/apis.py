"""REST API for connections and what they hold (one view per action; the view validates, calls one
service or selector, serializes the result). Secrets are write-only: outputs say only whether one is set, and a
diff says only whether one would change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from clearflow_spec.field_types import FIELD_TYPES
from webapp.api.errors import ERROR_RESPONSES
from webapp.api.inputs import ConnectionListQuery, validated_input
from webapp.api.permissions import token_is_read_only
from webapp.connections import heavy_request_apis, heavy_requests, kinds, selectors, services
from webapp.connections.api_serializers import (
    ClickHouseConnectionInput,
    ClickHouseConnectionOutput,
    ClickHouseServerInfoOutput,
    ColumnOutput,
    ConnectionDiffOutput,
    DatabaseOutput,
    InferSchemaOutput,
    KafkaClusterInfoOutput,
    KafkaConnectionInput,
    KafkaConnectionOutput,
    SampledEventOutput,
    SampleInput,
    SchemaRegistryConnectionInput,
    SchemaRegistryConnectionOutput,
    SchemaRegistryInfoOutput,
    TableOutput,
    TopicOutput,
)
from webapp.connections.kinds import ConnectionKind
from webapp.connections.models import ClickHouseConnection, HeavyRequest, KafkaConnection
from webapp.connections.services import secrets_changed
from webapp.workspaces import policy
from webapp.workspaces.services import workspace_for_new_objects

KAFKA_TAG = ["Kafka connections"]
CLICKHOUSE_TAG = ["ClickHouse connections"]
SCHEMA_REGISTRY_TAG = ["Schema registry connections"]


# -- connections: the same views for every kind -----------------------------------------------------------


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
_SCHEMA_REGISTRY = _ApiKind(
    **vars(kinds.SCHEMA_REGISTRY),
    input=SchemaRegistryConnectionInput,
    output=SchemaRegistryConnectionOutput,
    test_output=SchemaRegistryInfoOutput,
)


class _ConnectionListCreateApi(APIView):
    kind: _ApiKind
    workspace_actions = {"POST": "connection.create"}  # webapp.workspaces.permissions

    def get(self, request: Request) -> Response:
        query = validated_input(ConnectionListQuery, request.query_params)
        connections = self.kind.list(
            user=request.user, name=query.get("name"), workspace=request.workspace, search=query.get("search")
        )
        return Response(self.kind.output(connections, many=True).data)

    def post(self, request: Request) -> Response:
        data = validated_input(self.kind.input, request.data)
        connection = self.kind.create(owner=request.user, data=data, workspace=request.workspace)
        return Response(self.kind.output(connection).data, status=status.HTTP_201_CREATED)


class _ConnectionDetailApi(APIView):
    kind: _ApiKind
    workspace_actions = {"PATCH": "connection.edit", "DELETE": "connection.delete"}

    @property
    def workspace_model(self) -> type:
        return self.kind.model

    def get(self, request: Request, pk: int) -> Response:
        connection = self.kind.get(user=request.user, pk=pk)
        return Response(self.kind.output(connection).data)

    def patch(self, request: Request, pk: int) -> Response:
        connection = self.kind.get(user=request.user, pk=pk)
        data = validated_input(self.kind.input, request.data, partial=True)
        if secrets_changed(connection, data):
            policy.require(request.user, "connection.secret", connection.workspace_id)
        connection = self.kind.update(connection=connection, data=data, actor=request.user)
        return Response(self.kind.output(connection).data)

    def delete(self, request: Request, pk: int) -> Response:
        connection = self.kind.get(user=request.user, pk=pk)
        self.kind.delete(connection=connection, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class _ConnectionDiffApi(APIView):
    kind: _ApiKind
    reads_only = True  # a read-only API token may call it (webapp.api.permissions.TokenMayWrite)

    def post(self, request: Request) -> Response:
        data = validated_input(self.kind.input, request.data)
        workspace = request.workspace or workspace_for_new_objects(user=request.user)
        compare_secrets = not token_is_read_only(request)
        diff = selectors.connection_changes(
            model=self.kind.model, owner=request.user, workspace=workspace, data=data, compare_secrets=compare_secrets
        )
        connection = diff.connection
        output = {
            "exists": connection is not None,
            "id": getattr(connection, "pk", None),
            "changes": diff.changes,
            "secrets_compared": compare_secrets,
        }
        return Response(ConnectionDiffOutput(output).data)


class _ConnectionTestApi(APIView):
    kind: _ApiKind
    workspace_actions = {"POST": policy.READ}  # testing a saved connection changes nothing

    @property
    def workspace_model(self) -> type:
        return self.kind.model

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


class _ConnectionDefaultApi(APIView):
    kind: _ApiKind
    workspace_actions = {"POST": "connection.edit"}

    @property
    def workspace_model(self) -> type:
        return self.kind.model

    def post(self, request: Request, pk: int) -> Response:
        connection = self.kind.get(user=request.user, pk=pk)
        connection = services.connection_make_default(connection=connection, actor=request.user)
        return Response(self.kind.output(connection).data)


class ConnectionApis(NamedTuple):
    """The six views of one kind of connection (`api_urls` routes them)."""

    list_create: type[APIView]
    diff: type[APIView]
    detail: type[APIView]
    test: type[APIView]
    test_unsaved: type[APIView]
    default: type[APIView]


def _connection_apis(
    kind: _ApiKind,
    *,
    tag: list[str],
    write_only_noun: str,
    create_description: str | None = None,
    test_description: str | None = None,
) -> ConnectionApis:
    """The same views for every kind, each with its OpenAPI description (operation ids `<kind>_connections_…`).
    `write_only_noun`: what a connection of this kind keeps secret ("secret", "password")."""
    prefix = f"{kind.slug.replace('-', '_')}_connections"
    documented = {**ERROR_RESPONSES}

    def view(base: type[APIView], suffix: str, **schemas: Any) -> type[APIView]:
        name = f"{kind.model.__name__}{suffix}Api"
        attrs = {"kind": kind, "__module__": __name__, "__qualname__": name}
        return extend_schema_view(**schemas)(type(name, (base,), attrs))

    return ConnectionApis(
        list_create=view(
            _ConnectionListCreateApi,
            "ListCreate",
            get=extend_schema(
                tags=tag,
                operation_id=f"{prefix}_list",
                parameters=[ConnectionListQuery],
                responses={200: kind.output(many=True), **documented},
            ),
            post=extend_schema(
                tags=tag,
                operation_id=f"{prefix}_create",
                description=create_description,
                request=kind.input,
                responses={201: kind.output, **documented},
            ),
        ),
        diff=view(
            _ConnectionDiffApi,
            "Diff",
            post=extend_schema(
                tags=tag,
                operation_id=f"{prefix}_diff",
                request=kind.input,
                description="What saving these settings under their `name` would do, without saving anything: "
                "create a connection, or change these fields of yours (checked as when saving: 400 by field). "
                f"A {write_only_noun} left out is kept; a secret's values are never returned.",
                responses={200: ConnectionDiffOutput, **documented},
            ),
        ),
        detail=view(
            _ConnectionDetailApi,
            "Detail",
            get=extend_schema(tags=tag, operation_id=f"{prefix}_retrieve", responses={200: kind.output, **documented}),
            patch=extend_schema(
                tags=tag,
                operation_id=f"{prefix}_update",
                description=f"Change the given fields. A {write_only_noun} is changed only when sent; an empty string "
                "clears it.",
                request=kind.input(partial=True),
                responses={200: kind.output, **documented},
            ),
            delete=extend_schema(tags=tag, operation_id=f"{prefix}_delete", responses={204: None, **documented}),
        ),
        test=view(
            _ConnectionTestApi,
            "Test",
            post=extend_schema(
                tags=tag,
                operation_id=f"{prefix}_test",
                request=None,
                description=test_description,
                responses={200: kind.test_output, **documented},
            ),
        ),
        test_unsaved=view(
            _ConnectionTestUnsavedApi,
            "TestUnsaved",
            post=extend_schema(
                tags=tag,
                operation_id=f"{prefix}_test_unsaved",
                request=kind.input,
                description="Test connection settings without saving them.",
                responses={200: kind.test_output, **documented},
            ),
        ),
        default=view(
            _ConnectionDefaultApi,
            "Default",
            post=extend_schema(
                tags=tag,
                operation_id=f"{prefix}_make_default",
                request=None,
                description="Make this connection its workspace's default of its kind: the wizard preselects it and "
                "offers it first. The one that was the default no longer is (`is_default`).",
                responses={200: kind.output, **documented},
            ),
        ),
    )


# -- Kafka ----------------------------------------------------------------------------------------------


KAFKA_APIS = _connection_apis(
    _KAFKA,
    tag=KAFKA_TAG,
    write_only_noun="secret",
    test_description="Ask the cluster for its brokers and topics (a few seconds at most). 502 with the reason.",
)


class KafkaTopicListApi(APIView):
    workspace_model = KafkaConnection

    @extend_schema(
        tags=KAFKA_TAG, operation_id="kafka_topics_list", responses={200: TopicOutput(many=True), **ERROR_RESPONSES}
    )
    def get(self, request: Request, pk: int) -> Response:
        connection = selectors.kafka_connection_get(user=request.user, pk=pk)
        topics = selectors.kafka_topic_list(connection=connection)
        return Response(TopicOutput(topics, many=True).data)


class KafkaSampleApi(APIView):
    workspace_model = KafkaConnection
    workspace_actions = {"POST": policy.READ}  # reads events, changes nothing

    @extend_schema(
        tags=KAFKA_TAG,
        operation_id="kafka_events_sample",
        request=SampleInput,
        description="Ask for up to `count` newest or oldest events of the topics, oldest first: the worker reads "
        "them, and the answer is `202` with the `url` to GET for them (`kafka_events_sample_result`). Nothing is "
        "committed. At most `CLEARFLOW_HEAVY_REQUESTS_PER_USER` samples run at once per user (and "
        "`CLEARFLOW_HEAVY_REQUESTS_PER_WORKSPACE` per workspace): one more is a 429 in words.",
        responses=heavy_request_apis.START_RESPONSES,
    )
    def post(self, request: Request, pk: int) -> Response:
        return _start_sample_request(request, pk, HeavyRequest.Kind.SAMPLE, "api:kafka-sample-result")


class KafkaSampleResultApi(APIView):
    workspace_model = KafkaConnection

    @extend_schema(
        tags=KAFKA_TAG,
        operation_id="kafka_events_sample_result",
        description="The sample asked for with `POST .../sample/`: `202` while the worker reads the events (ask "
        "again after `Retry-After` seconds), then the events, or the error the sample met (e.g. 404 for a topic "
        "that does not exist, 502 for a broker that does not answer). Kept for 10 minutes after it ends.",
        responses=heavy_request_apis.accepted_responses(SampledEventOutput(many=True), "The events"),
    )
    def get(self, request: Request, pk: int, request_id: str) -> Response:
        selectors.kafka_connection_get(user=request.user, pk=pk)
        heavy = heavy_requests.heavy_request_get(user=request.user, pk=request_id, kind=HeavyRequest.Kind.SAMPLE)
        return heavy_request_apis.answer(request, heavy, "api:kafka-sample-result", SampledEventOutput, part="events")


class KafkaInferSchemaApi(APIView):
    workspace_model = KafkaConnection
    workspace_actions = {"POST": policy.READ}  # reads events, changes nothing

    @extend_schema(
        tags=KAFKA_TAG,
        operation_id="kafka_schema_infer",
        request=SampleInput,
        description=f"Sample the topics and infer fields: dotted paths; {', '.join(FIELD_TYPES)}; a list is "
        "an array<T> (objects in it struct<...>). With a schema "
        "registry connection the values are decoded from Avro and the fields come from the schema (the newest version "
        "the sample used), the sample filling in examples. The worker reads the events: the answer is `202` with the "
        "`url` to GET for the fields (`kafka_schema_infer_result`), capped with the samples.",
        responses=heavy_request_apis.START_RESPONSES,
    )
    def post(self, request: Request, pk: int) -> Response:
        return _start_sample_request(request, pk, HeavyRequest.Kind.INFER_SCHEMA, "api:kafka-infer-schema-result")


class KafkaInferSchemaResultApi(APIView):
    workspace_model = KafkaConnection

    @extend_schema(
        tags=KAFKA_TAG,
        operation_id="kafka_schema_infer_result",
        description="The fields asked for with `POST .../infer-schema/`: `202` while the worker reads the events "
        "(ask again after `Retry-After` seconds), then the fields, or the error the sample met. Kept for 10 minutes "
        "after it ends.",
        responses=heavy_request_apis.accepted_responses(InferSchemaOutput, "The fields"),
    )
    def get(self, request: Request, pk: int, request_id: str) -> Response:
        selectors.kafka_connection_get(user=request.user, pk=pk)
        heavy = heavy_requests.heavy_request_get(user=request.user, pk=request_id, kind=HeavyRequest.Kind.INFER_SCHEMA)
        return heavy_request_apis.answer(request, heavy, "api:kafka-infer-schema-result", InferSchemaOutput)


def _start_sample_request(request: Request, pk: int, kind: str, result_url: str) -> Response:
    """A sample's request of `kind` (the events, or the fields inferred from them) for the worker: 202 with the
    URL `result_url` names."""
    connection = selectors.kafka_connection_get(user=request.user, pk=pk)
    data = _with_registry(request, validated_input(SampleInput, request.data))
    registry = data.pop("schema_registry_connection", None)
    params = {**data, "schema_registry_connection": registry.pk if registry is not None else None}
    heavy = heavy_requests.heavy_request_start(kind=kind, user=request.user, connection=connection, params=params)
    return heavy_request_apis.accepted(request, heavy, result_url)


def _with_registry(request: Request, data: dict) -> dict:
    """`data` with the schema registry connection's id replaced by the user's connection (404 if not theirs)."""
    if data.get("schema_registry_connection") is not None:
        data["schema_registry_connection"] = selectors.schema_registry_connection_get(
            user=request.user, pk=data["schema_registry_connection"]
        )
    return data


# -- ClickHouse -----------------------------------------------------------------------------------------


CLICKHOUSE_APIS = _connection_apis(_CLICKHOUSE, tag=CLICKHOUSE_TAG, write_only_noun="password")


class ClickHouseDatabaseListApi(APIView):
    workspace_model = ClickHouseConnection

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
    workspace_model = ClickHouseConnection

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
    workspace_model = ClickHouseConnection

    @extend_schema(
        tags=CLICKHOUSE_TAG,
        operation_id="clickhouse_columns_list",
        responses={200: ColumnOutput(many=True), **ERROR_RESPONSES},
    )
    def get(self, request: Request, pk: int, database: str, table: str) -> Response:
        connection = selectors.clickhouse_connection_get(user=request.user, pk=pk)
        columns = selectors.clickhouse_column_list(connection=connection, database=database, table=table)
        return Response(ColumnOutput(columns, many=True).data)


# -- Schema registry ------------------------------------------------------------------------------------


SCHEMA_REGISTRY_APIS = _connection_apis(
    _SCHEMA_REGISTRY,
    tag=SCHEMA_REGISTRY_TAG,
    write_only_noun="password",
    create_description="A Confluent-compatible schema registry: its API's URL (for Apicurio, ending in "
    "/apis/ccompat/v7), basic auth, TLS (verify, a private CA in PEM).",
    test_description="Ask the registry for its subjects (a few seconds at most). 502 with the reason.",
)
