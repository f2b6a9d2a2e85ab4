"""ClickHouse access for the wizard and the API: test a connection, list databases, tables and columns.

One choke point (`_query`) for every statement: values travel as server-side parameters
(`{name:String}`), never formatted into the SQL text, and errors become one plain-words
`ClickHouseClientError`. Identifiers that must appear in SQL go through `clearflow_spec.clickhouse_types.quote_ident`.
Clients are created per call and closed before returning; none at import time. Every function takes the spec's
connection model (`ClickHouseConnectionSpec`); `clickhouse_connect_kwargs` turns it into the client's
arguments, as in the job's writer, so "Test connection" and the job reach the server the same way.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from clearflow_spec.clickhouse_types import ClickHouseType, quote_ident
from clearflow_spec.client_config import clickhouse_connect_kwargs, write_ca_file
from clearflow_spec.connections import ClickHouseConnectionSpec
from webapp.core.exceptions import ExternalServiceError, NotFoundError

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 5.0
SYSTEM_DATABASES = frozenset({"system", "INFORMATION_SCHEMA", "information_schema"})


class ClickHouseClientError(ExternalServiceError):
    code = "clickhouse_error"
    # True when trying again later may succeed (network, overload): what a Celery task retries on.
    transient: bool = False
    # ClickHouse's own error code when the server answered with one (159: the query hit max_execution_time).
    server_code: int | None = None


QUERY_TIME_LIMIT_CODE = 159  # TIMEOUT_EXCEEDED: the server stopped the query at its max_execution_time


def _client_error(exc: Exception, settings: ClickHouseConnectionSpec, timeout: float) -> ClickHouseClientError:
    from spark_jobs.sink import error_code, is_transient  # the engine's rules; no Spark import

    error = ClickHouseClientError(_plain_words(exc, settings, timeout))
    error.transient = is_transient(exc)
    error.server_code = error_code(exc)
    return error


class ClickHouseNotFoundError(NotFoundError):
    """The database or table asked for does not exist."""


@dataclass(frozen=True)
class ClickHouseServerInfo:
    version: str
    database_count: int


@dataclass(frozen=True)
class TableInfo:
    name: str
    engine: str
    total_rows: int | None


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type: str
    nullable: bool
    default_kind: str  # "", "DEFAULT", "MATERIALIZED", "ALIAS", "EPHEMERAL"
    default_expression: str
    in_sorting_key: bool
    comment: str

    @property
    def required(self) -> bool:
        """True when an insert must give a value: not Nullable and no default of any kind."""
        return not self.nullable and not self.default_kind


_CLICKHOUSE_ERROR_RE = re.compile(r"Code: \d+\. DB::Exception: [^\n]*")
_SERVER_RESPONSE_RE = re.compile(r",? *server response: .*?(?=\(for url |$)", re.DOTALL)


def _plain_words(exc: Exception, settings: ClickHouseConnectionSpec, timeout: float) -> str:
    # The server's reply body is kept apart: only ClickHouse's own error text from it is used or repeated.
    full = str(exc)
    clickhouse_error = _CLICKHOUSE_ERROR_RE.search(full)
    text = _SERVER_RESPONSE_RE.sub("", full)
    lowered = (text + " " + (clickhouse_error.group(0) if clickhouse_error else "")).lower()
    where = f"{settings.host}:{settings.port}"
    if "authentication" in lowered or "password" in lowered or "code: 516" in lowered:
        return f"ClickHouse at {where} rejected the user name or password."
    if "connection refused" in lowered:
        return f"Nothing accepts connections at {where} (connection refused)."
    if "name or service not known" in lowered or "nodename nor servname" in lowered or "resolve" in lowered:
        return f"The host name {settings.host} could not be resolved."
    if clickhouse_error and "code: 159." in lowered:  # the server's own time limit, not the client's
        return f"ClickHouse at {where} stopped the query at its time limit: {clickhouse_error.group(0)[:300]}"
    if "timed out" in lowered or "timeout" in lowered:
        return f"ClickHouse at {where} did not answer within {timeout:g} seconds."
    if "ssl" in lowered or "certificate" in lowered:
        return f"The HTTPS connection to {where} failed: {text.splitlines()[0][:300]}"
    if "unknown_database" in lowered or "code: 81" in lowered:
        return "The database does not exist."
    if "unknown_table" in lowered or "code: 60" in lowered:
        return "The table does not exist."
    # Only ClickHouse's own error (its code, name and message) is repeated. Whatever else a server answers
    # stays out of the message: echoing it would let a user read replies of any internal service.
    if clickhouse_error:
        return f"ClickHouse at {where} answered with an error: {clickhouse_error.group(0)[:300]}"
    return f"The server at {where} did not answer like a ClickHouse server."


@contextlib.contextmanager
def _client(settings: ClickHouseConnectionSpec, *, timeout: float) -> Iterator[Any]:
    import clickhouse_connect
    from clickhouse_connect.driver.exceptions import ClickHouseError

    ca_file: str | None = None
    try:
        if settings.ssl_ca_pem:
            ca_file = write_ca_file(settings.ssl_ca_pem)
        try:
            client = clickhouse_connect.get_client(
                **clickhouse_connect_kwargs(settings, ca_cert=ca_file),
                connect_timeout=timeout,
                send_receive_timeout=timeout,
                query_retries=0,
                autogenerate_session_id=False,
            )
        except (ClickHouseError, OSError, ValueError) as exc:
            raise _client_error(exc, settings, timeout) from None
        try:
            yield client
        finally:
            client.close()
    finally:
        if ca_file:
            with contextlib.suppress(OSError):
                os.unlink(ca_file)


def _query(
    client: Any,
    sql: str,
    parameters: dict[str, Any],
    settings: ClickHouseConnectionSpec,
    timeout: float,
    column_formats: dict[str, str] | None = None,
    query_settings: dict[str, Any] | None = None,
) -> Any:
    from clickhouse_connect.driver.exceptions import ClickHouseError

    try:
        return client.query(
            sql,
            parameters=parameters,
            settings={"log_comment": "clearflow-webapp", **(query_settings or {})},
            column_formats=column_formats,
        )
    except (ClickHouseError, OSError, ValueError) as exc:
        raise _client_error(exc, settings, timeout) from None


def check_connection(settings: ClickHouseConnectionSpec, *, timeout: float = DEFAULT_TIMEOUT) -> ClickHouseServerInfo:
    with _client(settings, timeout=timeout) as client:
        result = _query(client, "SELECT version(), (SELECT count() FROM system.databases)", {}, settings, timeout)
        version, databases = result.result_rows[0]
        return ClickHouseServerInfo(version=str(version), database_count=int(databases))


def list_databases(settings: ClickHouseConnectionSpec, *, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
    """User databases, sorted; ClickHouse's own (`system`, `information_schema`) left out."""
    with _client(settings, timeout=timeout) as client:
        result = _query(client, "SELECT name FROM system.databases ORDER BY name", {}, settings, timeout)
        return [row[0] for row in result.result_rows if row[0] not in SYSTEM_DATABASES]


def list_tables(
    settings: ClickHouseConnectionSpec, *, database: str, timeout: float = DEFAULT_TIMEOUT
) -> list[TableInfo]:
    with _client(settings, timeout=timeout) as client:
        exists = _query(
            client, "SELECT count() FROM system.databases WHERE name = {db:String}", {"db": database}, settings, timeout
        )
        if not exists.result_rows[0][0]:
            raise ClickHouseNotFoundError(f"The database {database!r} does not exist.")
        result = _query(
            client,
            "SELECT name, engine, total_rows FROM system.tables"
            " WHERE database = {db:String} AND NOT is_temporary ORDER BY name",
            {"db": database},
            settings,
            timeout,
        )
        return [
            TableInfo(name=name, engine=engine, total_rows=None if rows is None else int(rows))
            for name, engine, rows in result.result_rows
        ]


def list_columns(
    settings: ClickHouseConnectionSpec, *, database: str, table: str, timeout: float = DEFAULT_TIMEOUT
) -> list[ColumnInfo]:
    with _client(settings, timeout=timeout) as client:
        exists = _query(
            client,
            "SELECT count() FROM system.tables WHERE database = {db:String} AND name = {t:String}",
            {"db": database, "t": table},
            settings,
            timeout,
        )
        if not exists.result_rows[0][0]:
            raise ClickHouseNotFoundError(f"The table {database}.{table} does not exist.")
        result = _query(
            client,
            "SELECT name, type, default_kind, default_expression, is_in_sorting_key, comment"
            " FROM system.columns WHERE database = {db:String} AND table = {t:String} ORDER BY position",
            {"db": database, "t": table},
            settings,
            timeout,
        )
        return [
            ColumnInfo(
                name=name,
                type=ctype,
                nullable=ctype.startswith("Nullable("),
                default_kind=default_kind,
                default_expression=default_expression,
                in_sorting_key=bool(in_sorting_key),
                comment=comment,
            )
            for name, ctype, default_kind, default_expression, in_sorting_key, comment in result.result_rows
        ]


def made_by_clearflow(
    settings: ClickHouseConnectionSpec, *, database: str, table: str, timeout: float = DEFAULT_TIMEOUT
) -> bool:
    """Whether the pipeline engine created the table: its tables carry the `_cf_ingested_at` minmax index
    (`spark_jobs.sink.create_table_sql`), which a table made by hand has no reason to have."""
    from spark_jobs.sink import INGESTED_AT_INDEX

    with _client(settings, timeout=timeout) as client:
        result = _query(
            client,
            "SELECT count() FROM system.data_skipping_indices"
            " WHERE database = {db:String} AND table = {t:String} AND name = {i:String}",
            {"db": database, "t": table, "i": INGESTED_AT_INDEX},
            settings,
            timeout,
        )
        return bool(result.result_rows[0][0])


def add_column(
    settings: ClickHouseConnectionSpec,
    *,
    database: str,
    table: str,
    column: str,
    column_type: ClickHouseType,
    timeout: float = DEFAULT_TIMEOUT,
) -> None:
    """`ALTER TABLE … ADD COLUMN IF NOT EXISTS` (identifiers quoted, the type parsed): rows already there read the
    type's default (NULL for Nullable); a column of that name already there is left as it is."""
    from clickhouse_connect.driver.exceptions import ClickHouseError

    sql = (
        f"ALTER TABLE {quote_ident(database)}.{quote_ident(table)} "
        f"ADD COLUMN IF NOT EXISTS {quote_ident(column)} {column_type.sql()}"
    )
    with _client(settings, timeout=timeout) as client:
        try:
            client.command(sql, settings={"log_comment": "clearflow-webapp"})
        except (ClickHouseError, OSError, ValueError) as exc:
            raise _client_error(exc, settings, timeout) from None


class ClickHouseSession:
    """Statements on one open client, through the same choke point (`_query`): parameters, never string-built
    values; identifiers from `quote_ident`. Used by the pipelines' dead-letter pages."""

    def __init__(self, client: Any, settings: ClickHouseConnectionSpec, timeout: float) -> None:
        self._client = client
        self._settings = settings
        self._timeout = timeout

    def rows(
        self,
        sql: str,
        parameters: dict[str, Any],
        *,
        bytes_columns: tuple[str, ...] = (),
        query_settings: dict[str, Any] | None = None,
    ) -> list[tuple]:
        """The result's rows; `bytes_columns` are returned as raw bytes instead of decoded text; `query_settings`
        are ClickHouse settings for this statement (e.g. `max_execution_time`, `readonly`)."""
        formats = dict.fromkeys(bytes_columns, "bytes")
        return _query(self._client, sql, parameters, self._settings, self._timeout, formats, query_settings).result_rows

    def command(self, sql: str, parameters: dict[str, Any], *, query_settings: dict[str, Any] | None = None) -> None:
        from clickhouse_connect.driver.exceptions import ClickHouseError

        try:
            self._client.command(
                sql, parameters=parameters, settings={"log_comment": "clearflow-webapp", **(query_settings or {})}
            )
        except (ClickHouseError, OSError, ValueError) as exc:
            raise _client_error(exc, self._settings, self._timeout) from None

    def insert(self, *, database: str, table: str, columns: list[str], rows: list[list[Any]]) -> None:
        """Rows into `database.table` (the client quotes the names)."""
        from clickhouse_connect.driver.exceptions import ClickHouseError

        try:
            self._client.insert(table, rows, column_names=columns, database=database)
        except (ClickHouseError, OSError, ValueError) as exc:
            raise _client_error(exc, self._settings, self._timeout) from None

    def stream_rows(
        self, sql: str, parameters: dict[str, Any], *, bytes_columns: tuple[str, ...] = ()
    ) -> Iterator[tuple]:
        """The result's rows block by block, without holding the whole result in memory."""
        from clickhouse_connect.driver.exceptions import ClickHouseError

        formats = dict.fromkeys(bytes_columns, "bytes")
        try:
            with self._client.query_row_block_stream(
                sql, parameters=parameters, settings={"log_comment": "clearflow-webapp"}, column_formats=formats
            ) as stream:
                for block in stream:
                    yield from block
        except (ClickHouseError, OSError, ValueError) as exc:
            raise _client_error(exc, self._settings, self._timeout) from None

    def table_exists(self, *, database: str, table: str) -> bool:
        rows = self.rows(
            "SELECT count() FROM system.tables WHERE database = {db:String} AND name = {t:String}",
            {"db": database, "t": table},
        )
        return bool(rows[0][0])


@contextlib.contextmanager
def session(settings: ClickHouseConnectionSpec, *, timeout: float = DEFAULT_TIMEOUT) -> Iterator[ClickHouseSession]:
    """An open client for several statements; closed when the block ends."""
    with _client(settings, timeout=timeout) as client:
        yield ClickHouseSession(client, settings, timeout)
