"""The connections' REST API, under /api/v1/connections/: CRUD and tests, and what a connection can list or sample."""

from django.urls import path

from webapp.connections import apis, key_advice_apis

urlpatterns = [
    path("kafka/", apis.KAFKA_APIS.list_create.as_view(), name="kafka-connections"),
    path("kafka/test/", apis.KAFKA_APIS.test_unsaved.as_view(), name="kafka-connection-test-unsaved"),
    path("kafka/diff/", apis.KAFKA_APIS.diff.as_view(), name="kafka-connection-diff"),
    path("kafka/<int:pk>/", apis.KAFKA_APIS.detail.as_view(), name="kafka-connection"),
    path("kafka/<int:pk>/test/", apis.KAFKA_APIS.test.as_view(), name="kafka-connection-test"),
    path("kafka/<int:pk>/default/", apis.KAFKA_APIS.default.as_view(), name="kafka-connection-default"),
    path("kafka/<int:pk>/topics/", apis.KafkaTopicListApi.as_view(), name="kafka-topics"),
    path("kafka/<int:pk>/sample/", apis.KafkaSampleApi.as_view(), name="kafka-sample"),
    path("kafka/<int:pk>/sample/<str:request_id>/", apis.KafkaSampleResultApi.as_view(), name="kafka-sample-result"),
    path("kafka/<int:pk>/infer-schema/", apis.KafkaInferSchemaApi.as_view(), name="kafka-infer-schema"),
    path(
        "kafka/<int:pk>/infer-schema/<str:request_id>/",
        apis.KafkaInferSchemaResultApi.as_view(),
        name="kafka-infer-schema-result",
    ),
    path(
        "kafka/<int:pk>/dedup-analysis/", key_advice_apis.KafkaDedupAnalysisApi.as_view(), name="kafka-dedup-analysis"
    ),
    path(
        "kafka/<int:pk>/dedup-analysis/<str:request_id>/",
        key_advice_apis.KafkaDedupAnalysisResultApi.as_view(),
        name="kafka-dedup-analysis-result",
    ),
    path("clickhouse/", apis.CLICKHOUSE_APIS.list_create.as_view(), name="clickhouse-connections"),
    path("clickhouse/test/", apis.CLICKHOUSE_APIS.test_unsaved.as_view(), name="clickhouse-connection-test-unsaved"),
    path("clickhouse/diff/", apis.CLICKHOUSE_APIS.diff.as_view(), name="clickhouse-connection-diff"),
    path("clickhouse/<int:pk>/", apis.CLICKHOUSE_APIS.detail.as_view(), name="clickhouse-connection"),
    path("clickhouse/<int:pk>/test/", apis.CLICKHOUSE_APIS.test.as_view(), name="clickhouse-connection-test"),
    path("clickhouse/<int:pk>/default/", apis.CLICKHOUSE_APIS.default.as_view(), name="clickhouse-connection-default"),
    path("clickhouse/<int:pk>/databases/", apis.ClickHouseDatabaseListApi.as_view(), name="clickhouse-databases"),
    path(
        "clickhouse/<int:pk>/databases/<str:database>/tables/",
        apis.ClickHouseTableListApi.as_view(),
        name="clickhouse-tables",
    ),
    path(
        "clickhouse/<int:pk>/databases/<str:database>/tables/<str:table>/columns/",
        apis.ClickHouseColumnListApi.as_view(),
        name="clickhouse-columns",
    ),
    path("schema-registry/", apis.SCHEMA_REGISTRY_APIS.list_create.as_view(), name="schema-registry-connections"),
    path(
        "schema-registry/test/",
        apis.SCHEMA_REGISTRY_APIS.test_unsaved.as_view(),
        name="schema-registry-connection-test-unsaved",
    ),
    path("schema-registry/diff/", apis.SCHEMA_REGISTRY_APIS.diff.as_view(), name="schema-registry-connection-diff"),
    path("schema-registry/<int:pk>/", apis.SCHEMA_REGISTRY_APIS.detail.as_view(), name="schema-registry-connection"),
    path(
        "schema-registry/<int:pk>/test/",
        apis.SCHEMA_REGISTRY_APIS.test.as_view(),
        name="schema-registry-connection-test",
    ),
    path(
        "schema-registry/<int:pk>/default/",
        apis.SCHEMA_REGISTRY_APIS.default.as_view(),
        name="schema-registry-connection-default",
    ),
]
