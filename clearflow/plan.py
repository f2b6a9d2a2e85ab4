"""Applying pipeline files: first compare every document with the server (nothing written), then write.

Planning reads the server's connections and pipelines, checks each pipeline's spec with the server's model (the
same paths and messages as the API), and asks the server what saving each document would change (its diff
operations, which run every check a save runs, and compare secrets without ever returning them). Any problem in
any document stops here: nothing has been written. Then the writes follow, connections before the pipelines
that use them; a document that would not change is not sent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from clearflow.api import Api
from clearflow.documents import (
    CLICKHOUSE,
    CONNECTION_KINDS,
    KAFKA,
    PIPELINE,
    SCHEMA_REGISTRY,
    ConnectionDocument,
    ConnectionKind,
    Documents,
    PipelineDocument,
    connection_spec_from_api,
)
from clearflow.errors import ApplyInterruptedError, ClearFlowError, DocumentError, ErrorItem, RefusedError
from clearflow.models import Action, ApplyResult, Change, DocumentOutcome, DocumentPlan, Plan
from clearflow.spec_check import spec_issues
from clearflow_spec.connections import (
    ClickHouseConnectionSpec,
    KafkaConnectionSpec,
    SchemaRegistryConnectionSpec,
    connection_dict,
    spec_with_connections,
)

ACTIVE = ("running", "deploy_requested")  # a saved change redeploys a pipeline in these statuses
# What a pipeline's spec is checked with when a connection it names is nowhere (so every problem shows at once).
_STAND_INS = {
    KAFKA.kind: KafkaConnectionSpec(bootstrap_servers="connection.missing:9092"),
    CLICKHOUSE.kind: ClickHouseConnectionSpec(host="connection.missing"),
    SCHEMA_REGISTRY.kind: SchemaRegistryConnectionSpec(url="http://connection.missing"),
}
CHECKPOINT_CHOICES = ("keep", "fresh")


@dataclass(frozen=True)
class ServerState:
    connections: dict[tuple[str, str], dict[str, Any]]  # (kind, name) -> the API's connection
    pipelines: dict[str, dict[str, Any]]  # name -> the API's pipeline

    def connection_name(self, kind: ConnectionKind, pk: int | None) -> str | None:
        """The name of the saved connection `pk` (None for none: a pipeline without a schema registry)."""
        if pk is None:
            return None
        return next((c["name"] for (k, _), c in self.connections.items() if k == kind.kind and c["id"] == pk), "?")


def read_state(api: Api) -> ServerState:
    connections = {
        (kind.kind, c["name"]): c for kind in CONNECTION_KINDS.values() for c in api.get(f"/connections/{kind.slug}/")
    }
    return ServerState(connections, {p["name"]: p for p in api.get("/pipelines/")})


class _Problems:
    """Problems found while planning, and the refusals of the server's checks, each under its document."""

    def __init__(self) -> None:
        self.items: list[ErrorItem] = []

    def ask(self, where: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except RefusedError as exc:
            self.items += [ErrorItem(e.path, e.message, where) for e in exc.errors] or [
                ErrorItem("", exc.message, where)
            ]
            return None


def _connection_plan(api: Api, doc: ConnectionDocument, state: ServerState, problems: _Problems) -> DocumentPlan:
    saved = state.connections.get((doc.kind.kind, doc.name))
    unset = [secret for secret, value in doc.secrets.items() if value is None]
    if saved is None and unset:
        problems.items += [
            ErrorItem(secret, "its environment variable is not set, and a new connection needs the value", doc.where)
            for secret in unset
        ]
        diff = None
    else:
        diff = problems.ask(doc.where, lambda: api.post(f"/connections/{doc.kind.slug}/diff/", doc.body()))
    changes = [Change(**c) for c in diff["changes"]] if diff else []
    action = Action.CREATE if saved is None else Action.UPDATE if changes else Action.UNCHANGED
    notes = list(doc.notes)
    given = [secret for secret, value in doc.secrets.items() if value]
    if diff and given and saved is not None and not diff.get("secrets_compared", True):
        notes.append(f"{', '.join(given)}: not compared (a read-only token never compares secrets)")
    return DocumentPlan(
        kind=doc.kind.kind,
        name=doc.name,
        where=doc.where,
        action=action,
        id=saved["id"] if saved else None,
        changes=changes,
        notes=notes,
    )


def _connection_for(
    pipeline: PipelineDocument, kind: ConnectionKind, documents: Documents, state: ServerState
) -> tuple[Any, dict[str, Any] | None] | None:
    """(the spec model, the saved connection or None when the files create it), or None when it is nowhere."""
    name = pipeline.connection_name(kind)
    saved = state.connections.get((kind.kind, name))
    in_files = documents.connection(kind, name)
    if in_files is not None:
        return in_files.spec(), saved
    if saved is not None:
        return connection_spec_from_api(kind, saved), saved
    return None


def _pipeline_plan(
    api: Api, doc: PipelineDocument, documents: Documents, state: ServerState, problems: _Problems
) -> DocumentPlan | None:
    kinds = doc.connection_kinds()
    resolved = {}
    for kind in kinds:
        found = _connection_for(doc, kind, documents, state)
        if found is None:
            problems.items.append(
                ErrorItem(
                    kind.pipeline_field,
                    f"no {kind.label} connection named {doc.connection_name(kind)!r}: define it in these files "
                    f"(kind: {kind.kind}) or create it first",
                    doc.where,
                )
            )
        resolved[kind.kind] = found
    # The spec is checked even when a connection is missing (with a stand-in), so that every problem shows at once.
    models = {kind.kind: (resolved[kind.kind] or (_STAND_INS[kind.kind], None))[0] for kind in kinds}
    saved_connections = {kind.kind: (resolved[kind.kind] or (None, None))[1] for kind in kinds}
    issues = spec_issues(
        doc,
        kafka=models[KAFKA.kind],
        clickhouse=models[CLICKHOUSE.kind],
        schema_registry=models.get(SCHEMA_REGISTRY.kind),
    )
    problems.items += issues
    if issues or any(found is None for found in resolved.values()):
        return None

    saved = state.pipelines.get(doc.name)
    if saved is not None and all(c is not None for c in saved_connections.values()):
        ids = {kind.pipeline_field: saved_connections[kind.kind]["id"] for kind in kinds}
        diff = problems.ask(doc.where, lambda: api.post(f"/pipelines/{saved['id']}/diff/", {"spec": doc.spec, **ids}))
        if diff is None:
            return None
        changes = [Change(**c) for c in diff["changes"]]
        return DocumentPlan(
            kind=PIPELINE,
            name=doc.name,
            where=doc.where,
            action=Action.UPDATE if diff["changed"] else Action.UNCHANGED,
            id=saved["id"],
            changes=changes,
            current_version=diff["current_version"],
            redeploys=diff["redeploys"],
            checkpoint_problems=diff["checkpoint_problems"],
        )

    # A new pipeline, or one moving to a connection these files create: the server checks it as it would save it.
    body: dict[str, Any] = {"name": doc.name, "spec": doc.spec}
    sections: dict[str, Any] = {}
    for kind in kinds:
        saved_connection = saved_connections[kind.kind]
        if saved_connection is not None:
            body[kind.pipeline_field] = saved_connection["id"]
        else:
            sections[kind.spec_section] = connection_dict(models[kind.kind], reveal_secrets=False)
    body["spec"] = spec_with_connections(doc.spec, **sections)
    if problems.ask(doc.where, lambda: api.post("/pipelines/validate/", body)) is None:
        return None
    if saved is None:
        return DocumentPlan(kind=PIPELINE, name=doc.name, where=doc.where, action=Action.CREATE)
    changes = [
        Change(path=kind.pipeline_field, current=current, proposed=doc.connection_name(kind))
        for kind in CONNECTION_KINDS.values()
        if (current := state.connection_name(kind, saved.get(kind.pipeline_field))) != doc.connection_name(kind)
    ]
    return DocumentPlan(
        kind=PIPELINE,
        name=doc.name,
        where=doc.where,
        action=Action.UPDATE,
        id=saved["id"],
        changes=changes,
        current_version=saved.get("current_version"),
        redeploys=saved["status"] in ACTIVE,
        notes=["the spec is compared with the saved one once the new connection exists"],
    )


def make_plan(
    api: Api, documents: Documents, *, deploy: bool = False, checkpoint: str | None = None
) -> tuple[Plan, ServerState]:
    """What applying the documents would do; DocumentError listing every problem (nothing is written)."""
    state = read_state(api)
    problems = _Problems()
    plans = [_connection_plan(api, doc, state, problems) for doc in documents.connections]
    for doc in documents.pipelines:
        plan = _pipeline_plan(api, doc, documents, state, problems)
        if plan is None:
            continue
        plans.append(plan)
        saved = state.pipelines.get(doc.name)
        starts = plan.redeploys or (deploy and saved is not None)
        if plan.checkpoint_problems and starts and checkpoint is None:
            problems.items.append(
                ErrorItem(
                    "spec",
                    "this version cannot continue from the pipeline's checkpoint: "
                    + "; ".join(plan.checkpoint_problems)
                    + ". Apply with --checkpoint keep (keep the offsets and dedup state; Spark may refuse the old "
                    "state) or --checkpoint fresh (read again from the starting offsets; rows in ClickHouse stay).",
                    doc.where,
                )
            )
    if problems.items:
        count = len(problems.items)
        raise DocumentError(
            f"{count} problem{'s' if count != 1 else ''} in the files; nothing was applied.", errors=problems.items
        )
    return Plan(documents=plans), state


def _needs_deploy(pipeline: dict[str, Any]) -> bool:
    return pipeline["status"] not in ACTIVE or pipeline["deployed_version"] != pipeline["current_version"]


def apply_plan(
    api: Api,
    documents: Documents,
    plan: Plan,
    state: ServerState,
    *,
    deploy: bool = False,
    checkpoint: str | None = None,
    note: str = "clearflow apply",
) -> ApplyResult:
    """Write what the plan says, connections first. ApplyInterruptedError (with what was done) if the server fails
    between two writes; the error itself if the first write fails (then nothing was applied)."""
    by_key = {(p.kind, p.name): p for p in plan.documents}
    ids = {key: c["id"] for key, c in state.connections.items()}
    outcomes: list[DocumentOutcome] = []
    extra = {"checkpoint": checkpoint} if checkpoint else {}
    try:
        for doc in documents.connections:
            step = by_key[(doc.kind.kind, doc.name)]
            if step.action == Action.CREATE:
                ids[(doc.kind.kind, doc.name)] = api.post(f"/connections/{doc.kind.slug}/", doc.body())["id"]
            elif step.action == Action.UPDATE:
                api.patch(f"/connections/{doc.kind.slug}/{step.id}/", doc.body())
            outcomes.append(
                DocumentOutcome(
                    kind=step.kind,
                    name=step.name,
                    where=step.where,
                    action=step.action,
                    id=ids[(doc.kind.kind, doc.name)],
                    notes=step.notes,
                )
            )
        for pipeline_doc in documents.pipelines:
            step = by_key[(PIPELINE, pipeline_doc.name)]
            connections = {
                kind.pipeline_field: ids[(kind.kind, pipeline_doc.connection_name(kind))]
                for kind in pipeline_doc.connection_kinds()
            }
            if step.action == Action.CREATE:
                body = {"name": pipeline_doc.name, "spec": pipeline_doc.spec, "note": note, **connections}
                saved = api.post("/pipelines/", body)
            elif step.action == Action.UPDATE:
                body = {"spec": pipeline_doc.spec, "note": note, **connections, **extra}
                saved = api.patch(f"/pipelines/{step.id}/", body)
            else:
                saved = state.pipelines[pipeline_doc.name]
            deployed = step.action == Action.UPDATE and step.redeploys
            if deploy and not deployed and _needs_deploy(saved):
                saved = {**saved, **api.post(f"/pipelines/{saved['id']}/deploy/", extra)}
                deployed = True
            outcomes.append(
                DocumentOutcome(
                    kind=PIPELINE,
                    name=pipeline_doc.name,
                    where=step.where,
                    action=step.action,
                    id=saved["id"],
                    version=saved.get("current_version"),
                    status=saved.get("status"),
                    deployed=deployed,
                    notes=step.notes,
                )
            )
    except ClearFlowError as exc:
        if outcomes and any(o.action != Action.UNCHANGED or o.deployed for o in outcomes):
            raise ApplyInterruptedError(exc, outcomes) from exc
        raise
    return ApplyResult(documents=outcomes)
