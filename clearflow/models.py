"""Typed results of the SDK's methods (pydantic models, frozen; fields the API adds later are ignored)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ConnectionKindName = Literal["kafka-connection", "clickhouse-connection", "schema-registry-connection"]
DocumentKind = Literal["kafka-connection", "clickhouse-connection", "schema-registry-connection", "pipeline"]


class _Result(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class Pipeline(_Result):
    id: int
    name: str
    status: str  # draft, deploy_requested (Deploying), running, stop_requested (Stopping), stopped, failed
    status_message: str = ""
    kafka_connection: int
    clickhouse_connection: int
    schema_registry_connection: int | None = None  # Avro in the Confluent wire format
    current_version: int | None = None
    deployed_version: int | None = None
    restart_at: datetime | None = None
    spec: dict[str, Any] | None = None  # the current version's spec as stored (connections filled in, secrets masked)
    created_at: datetime | None = None
    updated_at: datetime | None = None


class Connection(_Result):
    kind: ConnectionKindName
    id: int
    name: str
    settings: dict[str, Any]  # every setting but the secrets
    secrets_set: list[str] = Field(default_factory=list)  # the secrets that have a value (never the values)

    @property
    def address(self) -> str:
        if self.kind == "kafka-connection":
            return str(self.settings.get("bootstrap_servers", ""))
        if self.kind == "schema-registry-connection":
            return str(self.settings.get("url", ""))
        scheme = "https" if self.settings.get("secure") else "http"
        return f"{scheme}://{self.settings.get('host')}:{self.settings.get('port')}/{self.settings.get('database')}"


class PipelineStatus(_Result):
    """A pipeline's state and what its job did lately (the status page's numbers)."""

    id: int
    name: str
    status: str
    status_message: str = ""
    current_version: int | None = None
    deployed_version: int | None = None
    restart_at: datetime | None = None
    rows_per_second: float | None = None  # events in per second in the latest batch; None: no batch in the last minute
    lag: int | None = None  # records behind the topics' latest offsets, after the latest batch
    duplicates_dropped: int = 0  # since the job's first batch
    dead_letters: int = 0
    rows_written: int = 0
    input_rows: int = 0
    last_batch_at: datetime | None = None
    metrics_error: str | None = None  # why the numbers are missing (the metrics store did not answer)


class DeadLetter(_Result):
    inserted_at: datetime
    reason: str
    topic: str
    partition: int
    offset: int
    kafka_timestamp: datetime | None = None
    batch_id: int
    raw: str


class DeadLetterPage(_Result):
    table: str
    table_exists: bool
    count: int
    page: int
    page_size: int
    pages: int
    results: list[DeadLetter]


class ReplayResult(_Result):
    replayed: int
    failed: int
    remaining: int
    error: str | None = None


class TokenInfo(_Result):
    id: int
    name: str
    read_only: bool = False
    expiry: datetime | None = None


class Me(_Result):
    username: str
    token: TokenInfo | None = None
    workspace: int | None = None  # where the token acts (a token belongs to one workspace)
    role: str | None = None  # the user's role there: viewer, editor or admin


class Workspace(_Result):
    id: int
    name: str
    role: str | None = None


class Change(_Result):
    path: str  # "spec.dedup.window", "kafka_connection", "host"
    current: Any = None
    proposed: Any = None
    secret: bool = False  # a secret that changes: no values, ever


class Action(StrEnum):
    CREATE = "create"
    UPDATE = "update"
    UNCHANGED = "unchanged"


class DocumentPlan(_Result):
    """What applying one document would do."""

    kind: DocumentKind
    name: str
    where: str  # file and document
    action: Action
    id: int | None = None  # of the saved object, when it exists
    changes: list[Change] = Field(default_factory=list)
    current_version: int | None = None  # pipelines: the version a change would follow
    redeploys: bool = False  # pipelines: it runs, so saving the change redeploys it
    checkpoint_problems: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)  # e.g. a secret kept because its variable is not set


class Plan(_Result):
    documents: list[DocumentPlan]

    @property
    def changed(self) -> bool:
        return any(d.action != Action.UNCHANGED for d in self.documents)

    def count(self, action: Action) -> int:
        return sum(1 for d in self.documents if d.action == action)


class DocumentOutcome(_Result):
    """What applying one document did."""

    kind: DocumentKind
    name: str
    where: str
    action: Action  # created, updated or left unchanged
    id: int
    version: int | None = None  # pipelines: the current version afterwards
    status: str | None = None  # pipelines: the status afterwards
    deployed: bool = False  # pipelines: a deploy (or redeploy) was requested
    notes: list[str] = Field(default_factory=list)


class ApplyResult(_Result):
    documents: list[DocumentOutcome]

    @property
    def changed(self) -> bool:
        return any(d.action != Action.UNCHANGED or d.deployed for d in self.documents)

    def count(self, action: Action) -> int:
        return sum(1 for d in self.documents if d.action == action)
