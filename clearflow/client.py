"""`Client`: the SDK. Its methods are the `clearflow` command's: apply, diff, export, pipelines, status, deploy,
stop, delete, logs, dead letters. Pipelines are named, as in files; results are typed (`clearflow.models`);
failures raise `clearflow.errors` classes that carry the API's error paths."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from clearflow import documents as files
from clearflow import export, plan
from clearflow.api import DEFAULT_TIMEOUT, Api
from clearflow.config import load_settings
from clearflow.document_files import RawDocument, read_documents
from clearflow.errors import NotFoundError, PipelineFailedError, ServerError
from clearflow.models import (
    ApplyResult,
    Connection,
    DeadLetterPage,
    Me,
    Pipeline,
    PipelineStatus,
    Plan,
    ReplayResult,
    Workspace,
)

# The job publishes a metrics record per micro-batch that read something: none for a minute means nothing came in.
CURRENT_WITHIN_S = 60
WAIT_TIMEOUT_S = 300.0


class Client:
    """A ClearFlow server, reached with an API token: `Client()` reads CLEARFLOW_URL and CLEARFLOW_TOKEN, or what
    `clearflow login` stored; `Client(url, token)` takes them directly."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.env = os.environ if env is None else env
        self.api = Api(load_settings(url, token, env=self.env), timeout=timeout)

    @property
    def url(self) -> str:
        return self.api.url

    def close(self) -> None:
        self.api.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def me(self) -> Me:
        """Who the token belongs to, whether it is read-only, its workspace and the user's role there."""
        return Me.model_validate(self.api.get("/me/"))

    def workspaces(self) -> list[Workspace]:
        """The workspaces the token sees: its own one (a token acts in one workspace)."""
        return [Workspace.model_validate(item) for item in self.api.get("/workspaces/")]

    # -- pipelines as code ---------------------------------------------------------------------------------------

    def read(
        self,
        *paths: str | os.PathLike[str],
        documents: Sequence[Mapping[str, Any]] = (),
        stdin: TextIO | None = None,
    ) -> files.Documents:
        """The documents of files, directories, `-` (stdin) and/or given as dicts, checked (DocumentError)."""
        raws = read_documents([str(p) for p in paths], stdin=stdin) if paths else []
        raws += [RawDocument(f"document {i}", dict(d)) for i, d in enumerate(documents, 1)]
        if not raws:
            raise files.DocumentError("no documents given: name files or directories, or pass documents")
        return files.parse_documents(raws, env=self.env)

    def diff(
        self,
        *paths: str | os.PathLike[str],
        documents: Sequence[Mapping[str, Any]] = (),
        deploy: bool = False,
        checkpoint: str | None = None,
        stdin: TextIO | None = None,
    ) -> Plan:
        """What `apply` would do, document by document; nothing is written."""
        docs = self.read(*paths, documents=documents, stdin=stdin)
        return plan.make_plan(self.api, docs, deploy=deploy, checkpoint=checkpoint)[0]

    def apply(
        self,
        *paths: str | os.PathLike[str],
        documents: Sequence[Mapping[str, Any]] = (),
        deploy: bool = False,
        checkpoint: str | None = None,
        note: str = "clearflow apply",
        wait: bool = False,
        timeout: float = WAIT_TIMEOUT_S,
        stdin: TextIO | None = None,
    ) -> ApplyResult:
        """Create what is missing, make a new version of what differs, leave the rest. Every document is checked
        before anything is written (DocumentError: nothing applied). `deploy` also deploys the pipelines that do
        not run their current version; `wait` waits until they run. A running pipeline whose spec changes is
        redeployed by the server; `checkpoint` ("keep" or "fresh") says what to do when the new version cannot
        continue from its checkpoint."""
        if checkpoint is not None and checkpoint not in plan.CHECKPOINT_CHOICES:
            raise files.DocumentError(f"checkpoint must be one of {', '.join(plan.CHECKPOINT_CHOICES)}")
        docs = self.read(*paths, documents=documents, stdin=stdin)
        steps, state = plan.make_plan(self.api, docs, deploy=deploy, checkpoint=checkpoint)
        result = plan.apply_plan(self.api, docs, steps, state, deploy=deploy, checkpoint=checkpoint, note=note)
        if wait:
            waited = []
            for outcome in result.documents:
                if outcome.deployed:
                    status = self.wait(outcome.name, "running", timeout=timeout)
                    outcome = outcome.model_copy(update={"status": status.status})
                waited.append(outcome)
            result = ApplyResult(documents=waited)
        return result

    def export(self, name: str, *, connections: bool = True) -> list[dict[str, Any]]:
        """The pipeline's documents (its connections first, unless `connections=False`); no secrets."""
        pipeline = self._pipeline(name)
        kafka = self.api.get(f"/connections/kafka/{pipeline['kafka_connection']}/")
        clickhouse = self.api.get(f"/connections/clickhouse/{pipeline['clickhouse_connection']}/")
        registry = None
        if pipeline.get("schema_registry_connection") is not None:
            registry = self.api.get(f"/connections/schema-registry/{pipeline['schema_registry_connection']}/")
        return export.export_documents(
            pipeline, kafka=kafka, clickhouse=clickhouse, schema_registry=registry, connections=connections
        )

    def export_yaml(self, name: str, *, connections: bool = True) -> str:
        return export.to_yaml(self.export(name, connections=connections))

    # -- reads -------------------------------------------------------------------------------------------------

    def _pipeline(self, name: str) -> dict[str, Any]:
        found = self.api.get("/pipelines/", {"name": name})
        if not found:
            raise NotFoundError(f"no pipeline named {name!r} (see `clearflow get pipelines`)")
        return found[0]

    def pipeline(self, name: str) -> Pipeline:
        return Pipeline.model_validate(self._pipeline(name))

    def pipelines(self) -> list[Pipeline]:
        return [Pipeline.model_validate(p) for p in self.api.get("/pipelines/")]

    def connections(self) -> list[Connection]:
        out = []
        for kind in files.CONNECTION_KINDS.values():
            for saved in self.api.get(f"/connections/{kind.slug}/"):
                settings = {k: v for k, v in saved.items() if k in kind.model.model_fields}
                secrets = [secret for secret, flag in kind.secret_flags.items() if saved.get(flag)]
                connection = {"kind": kind.kind, "id": saved["id"], "name": saved["name"], "settings": settings}
                out.append(Connection.model_validate({**connection, "secrets_set": secrets}))
        return out

    def status(self, name: str) -> PipelineStatus:
        """The pipeline's status and its job's latest numbers: rows/s, lag, duplicates dropped, dead letters."""
        pipeline = self._pipeline(name)
        state = self.api.get(f"/pipelines/{pipeline['id']}/status/")
        numbers: dict[str, Any] = {}
        try:
            history = self.api.get(f"/pipelines/{pipeline['id']}/metrics/", {"limit": 1})
        except ServerError as exc:  # the metrics store did not answer: the status still shows
            numbers["metrics_error"] = exc.message
        else:
            totals = history["totals"]
            numbers.update({k: totals[k] for k in ("duplicates_dropped", "dead_letters", "rows_written", "input_rows")})
            if history["records"]:
                latest = history["records"][-1]
                age_s = time.time() - latest["t_ms"] / 1000 if latest.get("t_ms") else None
                fresh = age_s is not None and age_s <= CURRENT_WITHIN_S
                numbers["rows_per_second"] = float(latest["input_rows_per_second"]) if fresh else 0.0
                numbers["lag"] = latest.get("total_lag")
                if latest.get("t_ms"):
                    numbers["last_batch_at"] = datetime.fromtimestamp(latest["t_ms"] / 1000, UTC)
        return PipelineStatus.model_validate({**state, "name": pipeline["name"], **numbers})

    def logs(self, name: str, *, lines: int = 100) -> list[str]:
        """The last lines of the pipeline's job log (its latest run), secrets redacted by the server."""
        pipeline = self._pipeline(name)
        return self.api.get(f"/pipelines/{pipeline['id']}/log/", {"lines": min(max(lines, 1), 200)})["lines"]

    def follow_logs(self, name: str, *, lines: int = 100, interval: float = 1.0) -> Iterator[str]:
        """The last `lines` lines, then each new line as the job writes it (until the caller stops)."""
        pipeline = self._pipeline(name)
        path = f"/pipelines/{pipeline['id']}/log/"
        seen: list[str] = []
        first = True
        while True:
            current = self.api.get(path, {"lines": 200})["lines"]
            new = current[-lines:] if first else _new_lines(seen, current)
            yield from new
            seen, first = current, False
            time.sleep(interval)

    def dead_letters(self, name: str, *, page: int = 1, page_size: int = 50) -> DeadLetterPage:
        pipeline = self._pipeline(name)
        answer = self.api.get(f"/pipelines/{pipeline['id']}/dead-letters/", {"page": page, "page_size": page_size})
        return DeadLetterPage.model_validate(answer)

    # -- actions -----------------------------------------------------------------------------------------------

    def deploy(
        self, name: str, *, checkpoint: str | None = None, wait: bool = False, timeout: float = WAIT_TIMEOUT_S
    ) -> PipelineStatus:
        """Run the pipeline's current version (a running one is redeployed)."""
        pipeline = self._pipeline(name)
        body = {"checkpoint": checkpoint} if checkpoint else {}
        answer = self.api.post(f"/pipelines/{pipeline['id']}/deploy/", body)
        if wait:
            return self.wait(name, "running", timeout=timeout)
        return PipelineStatus.model_validate({**answer, "name": pipeline["name"]})

    def rollback(
        self,
        name: str,
        version: int,
        *,
        checkpoint: str | None = None,
        wait: bool = False,
        timeout: float = WAIT_TIMEOUT_S,
    ) -> PipelineStatus:
        """Deploy version `version` again: the server makes a new version equal to it and deploys that."""
        pipeline = self._pipeline(name)
        body: dict[str, Any] = {"version": version, **({"checkpoint": checkpoint} if checkpoint else {})}
        answer = self.api.post(f"/pipelines/{pipeline['id']}/rollback/", body)
        if wait:
            return self.wait(name, "running", timeout=timeout)
        return PipelineStatus.model_validate({**answer, "name": pipeline["name"]})

    def stop(self, name: str, *, wait: bool = False, timeout: float = WAIT_TIMEOUT_S) -> PipelineStatus:
        """Stop gracefully (the job finishes its micro-batch; forced after the server's stop timeout)."""
        pipeline = self._pipeline(name)
        answer = self.api.post(f"/pipelines/{pipeline['id']}/stop/")
        if wait:
            return self.wait(name, "stopped", timeout=timeout)
        return PipelineStatus.model_validate({**answer, "name": pipeline["name"]})

    def delete(self, name: str, *, remove_checkpoint: bool = False) -> None:
        """Delete the pipeline and its versions (a running job is stopped). Rows in ClickHouse stay."""
        pipeline = self._pipeline(name)
        self.api.delete(f"/pipelines/{pipeline['id']}/", {"remove_checkpoint": str(remove_checkpoint).lower()})

    def replay_dead_letters(self, name: str, *, limit: int | None = None) -> ReplayResult:
        """Send dead letters (oldest first) back to their topic; those acknowledged leave the dead-letter table."""
        pipeline = self._pipeline(name)
        body = {"limit": limit} if limit else {}
        return ReplayResult.model_validate(self.api.post(f"/pipelines/{pipeline['id']}/dead-letters/replay/", body))

    def wait(self, name: str, wanted: str, *, timeout: float = WAIT_TIMEOUT_S, interval: float = 1.0) -> PipelineStatus:
        """Poll until the pipeline's status is `wanted`; PipelineFailedError when it fails for good (no restart
        planned) or when `timeout` seconds pass."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.status(name)
            if status.status == wanted:
                return status
            if status.status == "failed" and status.restart_at is None:
                raise PipelineFailedError(f"pipeline {name!r} failed: {status.status_message}")
            if time.monotonic() > deadline:
                raise PipelineFailedError(
                    f"pipeline {name!r} is still {status.status} after {timeout:.0f} s (waiting for {wanted}): "
                    f"{status.status_message}"
                )
            time.sleep(interval)


def _new_lines(before: list[str], after: list[str]) -> list[str]:
    """The lines of the log tail `after` that follow the tail `before` (both the last lines of one log)."""
    for overlap in range(min(len(before), len(after)), 0, -1):
        if before[-overlap:] == after[:overlap]:
            return after[overlap:]
    return after


__all__ = ["Client"]
