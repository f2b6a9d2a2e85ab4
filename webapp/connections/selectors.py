"""Reads: the user's connections, and what their Kafka clusters and ClickHouse servers hold.

`*_get` raise `Http404` for objects that do not exist or belong to someone else (both look the same).
The Kafka and ClickHouse reads raise `KafkaClientError` / `ClickHouseClientError` (API 502) when the
server fails, and `KafkaTopicNotFoundError` / `ClickHouseNotFoundError` (API 404) for unknown names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from django.contrib.auth.base_user import AbstractBaseUser
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from webapp.connections import clickhouse_client, kafka_client, schema
from webapp.connections.models import ClickHouseConnection, KafkaConnection


def kafka_connection_list(*, user: AbstractBaseUser) -> QuerySet[KafkaConnection]:
    return KafkaConnection.objects.filter(owner=user).order_by("name", "id")


def kafka_connection_get(*, user: AbstractBaseUser, pk: Any) -> KafkaConnection:
    """The user's connection `pk`; Http404 if missing, someone else's, or `pk` is not a number."""
    return get_object_or_404(kafka_connection_list(user=user), pk=_int_pk(pk))


def clickhouse_connection_list(*, user: AbstractBaseUser) -> QuerySet[ClickHouseConnection]:
    return ClickHouseConnection.objects.filter(owner=user).order_by("name", "id")


def clickhouse_connection_get(*, user: AbstractBaseUser, pk: Any) -> ClickHouseConnection:
    return get_object_or_404(clickhouse_connection_list(user=user), pk=_int_pk(pk))


def _int_pk(pk: Any) -> int:
    from django.http import Http404

    try:
        return int(pk)
    except (TypeError, ValueError):
        raise Http404("No such object.") from None


# -- what a Kafka cluster holds -------------------------------------------------------------------------


def kafka_topic_list(*, connection: KafkaConnection) -> list[kafka_client.TopicInfo]:
    """Topics with partition and (estimated) message counts, sorted by name."""
    return kafka_client.list_topics(connection.client_settings())


def kafka_event_sample(
    *,
    connection: KafkaConnection,
    topics: Sequence[str],
    count: int = 20,
    position: Literal["newest", "oldest"] = "newest",
) -> list[kafka_client.SampledEvent]:
    """Up to `count` (1..500) newest or oldest events across `topics`, oldest first."""
    return kafka_client.sample_events(connection.client_settings(), topics=topics, count=count, position=position)


def schema_infer(*, values: Sequence[Any]) -> list[schema.InferredField]:
    """Fields (dotted paths, types, nullability, examples) inferred from sampled event values."""
    return schema.infer_schema(values)


# -- what a ClickHouse server holds ---------------------------------------------------------------------


def clickhouse_database_list(*, connection: ClickHouseConnection) -> list[str]:
    return clickhouse_client.list_databases(connection.client_settings())


def clickhouse_table_list(*, connection: ClickHouseConnection, database: str) -> list[clickhouse_client.TableInfo]:
    return clickhouse_client.list_tables(connection.client_settings(), database=database)


def clickhouse_column_list(
    *, connection: ClickHouseConnection, database: str, table: str
) -> list[clickhouse_client.ColumnInfo]:
    return clickhouse_client.list_columns(connection.client_settings(), database=database, table=table)
