"""Writes and state changes of pipelines (HackSoft services: keyword-only, typed, atomic).

The spec travels typed (`clearflow_spec.spec.PipelineSpec`): a client's JSON is parsed once where it comes in (a
`Mapping` given for `spec` is such JSON: `stored_specs.parse`), the version stores it (`PipelineVersion.spec`) and
the worker gets it back with the connections' secrets (`pipeline_job_spec`). The worker's writes of a pipeline's
runs, and the restart policy, are `webapp.pipelines.run_records`.

Raises:
- `django.core.exceptions.ValidationError` for bad field values (name taken, a connection of another
  workspace), keyed by field name;
- `clearflow_spec.spec.SpecError` for a bad spec, with `.errors` = [(path, message), ...];
- `webapp.core.exceptions.ConflictError` (API 409) when the pipeline's status does not allow the action.

Status changes are compare-and-set (`Pipeline.transition(action)`, allowed as `webapp.pipelines.lifecycle`'s
table says), so two requests (or a request and the worker) never both win. The worker hears about deploy/stop
through `webapp.core.queue`, on commit; other apps hear about a new pipeline through `webapp.pipelines.hooks`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.http import Http404
from django.utils import timezone

from clearflow_spec.spec import PipelineSpec, SpecError
from webapp.activity.services import activity_record, changed, snapshot
from webapp.connections.models import ClickHouseConnection, KafkaConnection, SchemaRegistryConnection
from webapp.core import queue
from webapp.core.exceptions import ConflictError
from webapp.pipelines import hooks, quotas, stored_specs
from webapp.pipelines.lifecycle import JOB_ACTIVE, JOB_WANTED, Action
from webapp.pipelines.models import Pipeline, PipelineRun, PipelineVersion
from webapp.pipelines.spec_field import stored_json
from webapp.workspaces.models import Workspace
from webapp.workspaces.services import workspace_for_new_objects

CHECKPOINT_CHOICES = ("keep", "fresh")


def _check_connections(
    *,
    workspace_id: int,
    kafka_connection: KafkaConnection,
    clickhouse_connection: ClickHouseConnection,
    schema_registry_connection: SchemaRegistryConnection | None = None,
) -> None:
    """A pipeline uses its own workspace's connections only."""
    errors = {}
    if kafka_connection.workspace_id != workspace_id:
        errors["kafka_connection"] = "No such Kafka connection in the pipeline's workspace."
    if clickhouse_connection.workspace_id != workspace_id:
        errors["clickhouse_connection"] = "No such ClickHouse connection in the pipeline's workspace."
    if schema_registry_connection is not None and schema_registry_connection.workspace_id != workspace_id:
        errors["schema_registry_connection"] = "No such schema registry connection in the pipeline's workspace."
    if errors:
        raise ValidationError(errors)


def _check_name(*, workspace_id: int, name: str, exclude_pk: int | None) -> None:
    if problem := stored_specs.name_error(name):
        raise ValidationError({"name": problem})
    others = Pipeline.objects.filter(workspace_id=workspace_id, name=name)
    if exclude_pk is not None:
        others = others.exclude(pk=exclude_pk)
    if others.exists():
        raise ValidationError({"name": f"The workspace already has a pipeline named {name!r}."})


def _snapshot(pipeline: Pipeline) -> dict[str, Any]:
    """What the activity log keeps of a pipeline before and after a change."""
    version = pipeline.current_version
    return {
        **snapshot(pipeline, ["name", "status", "kafka_connection", "clickhouse_connection"]),
        "schema_registry_connection": pipeline.schema_registry_connection_id,
        "current_version": version.number if version is not None else None,
    }


def pipeline_validate(
    *,
    spec: PipelineSpec | Mapping[str, Any],
    name: str | None = None,
    kafka_connection: KafkaConnection | None = None,
    clickhouse_connection: ClickHouseConnection | None = None,
    schema_registry_connection: SchemaRegistryConnection | None = None,
    check_live: bool = False,
) -> PipelineSpec:
    """Check a spec (a `PipelineSpec`, or a client's JSON, parsed here); return the typed `PipelineSpec` or raise
    `SpecError` with every problem.

    `source.kafka` and `sink.clickhouse` (except its `database`) are filled from the connections when
    given, and `source.schema_registry` from `schema_registry_connection`; `name` (when given) replaces the
    spec's name. With `check_live=True` (needs both connections)
    it also asks the systems: do the topics exist, does an existing target table have the mapped columns
    with compatible types, is every column that is not Nullable and has no default mapped. Those problems
    come in the same SpecError, with spec paths. Unreachable systems raise KafkaClientError /
    ClickHouseClientError instead.
    """
    connections = {
        "kafka_connection": kafka_connection,
        "clickhouse_connection": clickhouse_connection,
        "schema_registry_connection": schema_registry_connection,
    }
    if not isinstance(spec, PipelineSpec):
        parsed = stored_specs.parse(spec, name=name, **connections)
    elif kafka_connection is not None and clickhouse_connection is not None:
        parsed = stored_specs.with_connection_sections(spec, name=name, **connections)
    else:
        parsed = spec if name is None else spec.model_copy(update={"name": name})
    if check_live and kafka_connection is not None and clickhouse_connection is not None:
        stored_specs.check_live(parsed, **connections)
    return parsed


def _add_version(
    *,
    pipeline: Pipeline,
    spec: PipelineSpec,
    user: AbstractBaseUser | None,
    note: str,
    accept_dead_letters: Sequence[str] = (),
) -> PipelineVersion:
    last = pipeline.versions.aggregate(last=Max("number"))["last"] or 0
    version = PipelineVersion(
        pipeline=pipeline,
        number=last + 1,
        spec=spec,
        created_by=user,
        note=note,
        accept_dead_letters=sorted(set(accept_dead_letters)),
    )
    version.full_clean(exclude=["pipeline", "created_by"])
    version.save()
    return version


@transaction.atomic
def pipeline_create(
    *,
    owner: AbstractBaseUser,
    name: str,
    kafka_connection: KafkaConnection,
    clickhouse_connection: ClickHouseConnection,
    spec: PipelineSpec | Mapping[str, Any],
    schema_registry_connection: SchemaRegistryConnection | None = None,
    note: str = "",
    accept_dead_letters: Sequence[str] = (),
    workspace: Workspace | None = None,
) -> Pipeline:
    """A new pipeline in status "draft" with version 1 holding `spec` (validated; stored without secrets) and the
    fields whose dead letters the owner accepted (`accept_dead_letters`, kept with the version), in `workspace`
    (the owner's default one when None), with that workspace's connections."""
    workspace = workspace_for_new_objects(user=owner, workspace=workspace)
    connections = {
        "kafka_connection": kafka_connection,
        "clickhouse_connection": clickhouse_connection,
        "schema_registry_connection": schema_registry_connection,
    }
    _check_connections(workspace_id=workspace.pk, **connections)
    quotas.check_pipeline_quota(owner=owner, workspace=workspace)
    _check_name(workspace_id=workspace.pk, name=name, exclude_pk=None)
    validated = pipeline_validate(spec=spec, name=name, **connections)
    pipeline = Pipeline(owner=owner, workspace=workspace, name=name, **connections)
    pipeline.full_clean(exclude=["current_version", "deployed_version"], validate_constraints=False)
    try:
        with transaction.atomic():
            pipeline.save()
    except IntegrityError:  # a concurrent request took the name between the check and the insert
        raise ValidationError({"name": f"The workspace already has a pipeline named {name!r}."}) from None
    pipeline.current_version = _add_version(
        pipeline=pipeline, spec=validated, user=owner, note=note or "created", accept_dead_letters=accept_dead_letters
    )
    pipeline.save(update_fields=["current_version", "updated_at"])
    activity_record(actor=owner, action="pipeline.create", target=pipeline, after=_snapshot(pipeline))
    hooks.pipeline_created.send(sender=Pipeline, pipeline=pipeline)
    return pipeline


@transaction.atomic
def pipeline_update(
    *,
    pipeline: Pipeline,
    user: AbstractBaseUser,
    name: str | None = None,
    spec: PipelineSpec | Mapping[str, Any] | None = None,
    kafka_connection: KafkaConnection | None = None,
    clickhouse_connection: ClickHouseConnection | None = None,
    schema_registry_connection: SchemaRegistryConnection | None = None,
    note: str = "",
    checkpoint: str | None = None,
    accept_dead_letters: Sequence[str] | None = None,
) -> Pipeline:
    """Change what is given. A changed spec (or name, or connection) makes a new version; old ones stay.
    `accept_dead_letters` (None: as before) goes with the new version, or onto the current one when nothing
    else changed.

    A running (or deploying) pipeline is redeployed with the new version; when the change makes its checkpoint
    unusable, ConflictError asks for `checkpoint` ("keep" or "fresh", see `pipeline_deploy`) and nothing is saved.
    """
    locked = Pipeline.objects.select_for_update().filter(pk=pipeline.pk).first()
    if locked is None:  # deleted by a concurrent request
        raise Http404("No such pipeline.")
    pipeline = locked
    old_connections = (
        pipeline.kafka_connection_id,
        pipeline.clickhouse_connection_id,
        pipeline.schema_registry_connection_id,
    )
    new_name = pipeline.name if name is None else name
    new_kafka = kafka_connection or pipeline.kafka_connection
    new_clickhouse = clickhouse_connection or pipeline.clickhouse_connection
    base_spec = pipeline.spec if spec is None else spec
    new_registry = stored_specs.registry_after_update(
        current=pipeline.schema_registry_connection, given=schema_registry_connection, spec=base_spec
    )
    connections = {
        "kafka_connection": new_kafka,
        "clickhouse_connection": new_clickhouse,
        "schema_registry_connection": new_registry,
    }
    _check_connections(workspace_id=pipeline.workspace_id, **connections)
    if new_name != pipeline.name:
        _check_name(workspace_id=pipeline.workspace_id, name=new_name, exclude_pk=pipeline.pk)
    validated = pipeline_validate(spec=base_spec, name=new_name, **connections)
    before = _snapshot(pipeline)
    pipeline.name = new_name
    pipeline.kafka_connection = new_kafka
    pipeline.clickhouse_connection = new_clickhouse
    pipeline.schema_registry_connection = new_registry
    pipeline.full_clean(exclude=["current_version", "deployed_version"], validate_constraints=False)
    new_ids = (new_kafka.pk, new_clickhouse.pk, new_registry.pk if new_registry else None)
    changed_connections = new_ids != old_connections
    new_version = changed_connections or not _stores_as(validated, pipeline.current_version)
    current = pipeline.current_version
    accepted = (current.accept_dead_letters if current else []) if accept_dead_letters is None else accept_dead_letters
    if new_version:
        pipeline.current_version = _add_version(
            pipeline=pipeline, spec=validated, user=user, note=note or "edited", accept_dead_letters=accepted
        )
    elif current is not None and sorted(set(accepted)) != current.accept_dead_letters:
        current.accept_dead_letters = sorted(set(accepted))
        current.save(update_fields=["accept_dead_letters"])
    pipeline.save(
        update_fields=[
            "name",
            "kafka_connection",
            "clickhouse_connection",
            "schema_registry_connection",
            "current_version",
            "updated_at",
        ]
    )
    old, new = changed(before, _snapshot(pipeline))
    if new:
        action = "pipeline.new_version" if new_version else "pipeline.edit"
        activity_record(actor=user, action=action, target=pipeline, before=old, after=new)
    if new_version and pipeline.status in JOB_WANTED:
        pipeline = pipeline_deploy(pipeline=pipeline, user=user, checkpoint=checkpoint)
    return pipeline


def _stores_as(spec: PipelineSpec, version: PipelineVersion | None) -> bool:
    """Whether `version` already stores `spec` (secrets masked on both sides, as the column keeps them)."""
    if version is None:
        return False
    try:
        return stored_json(spec) == stored_json(version.spec)
    except SpecError:  # the stored one no longer reads: anything valid is a change
        return False


def pipeline_checkpoint_problems(*, pipeline: Pipeline) -> list[str]:
    """Why the current version could not continue from the checkpoint of the deployed one ([] if it can, or if
    there is no checkpoint yet because the pipeline never ran)."""
    deployed, current = pipeline.deployed_version, pipeline.current_version
    if deployed is None or current is None or deployed.pk == current.pk or not pipeline.runs.exists():
        return []
    try:
        deployed_spec = deployed.spec
    except SpecError as exc:
        return [f"the deployed version's spec no longer reads ({exc.errors[0]})"]
    return stored_specs.checkpoint_incompatibilities(deployed_spec, current.spec)


def _locked(pipeline: Pipeline) -> Pipeline:
    """The pipeline's row, locked until the transaction ends (the worker locks it too while it acts)."""
    if not list(Pipeline.objects.select_for_update().filter(pk=pipeline.pk).values_list("pk", flat=True)):
        raise Http404("No such pipeline.")
    pipeline.refresh_from_db()
    return pipeline


@transaction.atomic
def pipeline_deploy(*, pipeline: Pipeline, user: AbstractBaseUser, checkpoint: str | None = None) -> Pipeline:
    """Deploy the current version: status "deploy_requested" (Deploying), the worker told on commit.

    A running pipeline is redeployed (its job stopped, the new version started). When the new version cannot
    continue from the old checkpoint (e.g. other dedup keys), ConflictError lists why (`extra.checkpoint_problems`)
    unless `checkpoint` says what to do: "keep" the offsets and state anyway, or start "fresh" (the checkpoint is
    removed: the job starts from the spec's starting offsets). Re-validates the current spec first (SpecError).
    ConflictError while a stop is in progress.
    """
    pipeline = _locked(pipeline)
    if pipeline.current_version is None:
        raise ConflictError("The pipeline has no spec to deploy.")
    quotas.check_running_quota(pipeline=pipeline)
    if checkpoint is not None and checkpoint not in CHECKPOINT_CHOICES:
        raise ValidationError({"checkpoint": "Choose 'keep' or 'fresh'."})
    pipeline_validate(
        spec=pipeline.current_version.spec,
        kafka_connection=pipeline.kafka_connection,
        clickhouse_connection=pipeline.clickhouse_connection,
        schema_registry_connection=pipeline.schema_registry_connection,
    )
    problems = pipeline_checkpoint_problems(pipeline=pipeline)
    if problems and checkpoint is None and not pipeline.reset_checkpoint:
        raise ConflictError(
            "This version cannot continue from the pipeline's checkpoint: "
            + "; ".join(problems)
            + ". Choose to keep the offsets (checkpoint=keep, Spark may refuse the old state) or to start fresh "
            "(checkpoint=fresh: read again from the starting offsets; an event whose key the table received within "
            "the dedup window is not written again).",
            extra={"checkpoint_problems": problems, "checkpoint_choices": list(CHECKPOINT_CHOICES)},
        )
    version = pipeline.current_version
    fresh = checkpoint == "fresh"
    if not pipeline.transition(
        Action.DEPLOY,
        message=f"Deploy of version {version.number} requested by {user.get_username()}"
        + (", starting fresh (checkpoint removed)." if fresh else "."),
        deployed_version=version,
        deploy_requested_at=timezone.now(),
        restart_at=None,
        reset_checkpoint=fresh or pipeline.reset_checkpoint,
    ):
        raise ConflictError(f"A pipeline that is {pipeline.get_status_display().lower()} cannot be deployed now.")
    activity_record(
        actor=user, action="pipeline.deploy", target=pipeline, after={"version": version.number, "fresh": fresh}
    )
    transaction.on_commit(lambda: queue.pipeline_reconcile(pipeline_id=pipeline.pk))
    return pipeline


def _active_run(pipeline: Pipeline) -> PipelineRun | None:
    return PipelineRun.objects.filter(pipeline=pipeline, ended_at__isnull=True).first()


@transaction.atomic
def pipeline_stop(*, pipeline: Pipeline, user: AbstractBaseUser) -> Pipeline:
    """Stop: a deploy whose job has not started is withdrawn at once ("stopped"); a job that runs (or starts) gets
    "stop_requested" (Stopping): the worker stops it gracefully, forced after the stop timeout. A failed pipeline
    waiting for its automatic restart is stopped at once."""
    pipeline = _locked(pipeline)
    activity_record(actor=user, action="pipeline.stop", target=pipeline, before={"status": pipeline.status})
    by = f"by {user.get_username()}"
    has_job = _active_run(pipeline) is not None
    if not has_job and pipeline.transition(Action.WITHDRAW, message=f"Deploy withdrawn {by}.", restart_at=None):
        return pipeline
    if (
        not has_job
        and pipeline.restart_at is not None
        and pipeline.transition(Action.CANCEL_RESTART, message=f"Stopped {by} (restart cancelled).", restart_at=None)
    ):
        return pipeline
    if pipeline.transition(Action.STOP, message=f"Stop requested {by}."):
        transaction.on_commit(lambda: queue.pipeline_reconcile(pipeline_id=pipeline.pk))
        return pipeline
    raise ConflictError(f"A pipeline that is {pipeline.get_status_display().lower()} cannot be stopped.")


@transaction.atomic
def pipeline_resume(*, pipeline: Pipeline, user: AbstractBaseUser) -> Pipeline:
    """Start a stopped or failed pipeline again with the version it last ran, from its checkpoint."""
    pipeline = _locked(pipeline)
    version = pipeline.deployed_version
    if version is None:
        raise ConflictError("The pipeline was never deployed: deploy it instead.")
    quotas.check_running_quota(pipeline=pipeline)
    if not pipeline.transition(
        Action.RESUME,
        message=f"Resume of version {version.number} requested by {user.get_username()}.",
        deploy_requested_at=timezone.now(),
        restart_at=None,
    ):
        raise ConflictError(f"A pipeline that is {pipeline.get_status_display().lower()} cannot be resumed.")
    activity_record(actor=user, action="pipeline.resume", target=pipeline, after={"version": version.number})
    transaction.on_commit(lambda: queue.pipeline_reconcile(pipeline_id=pipeline.pk))
    return pipeline


@transaction.atomic
def pipeline_delete(*, pipeline: Pipeline, user: AbstractBaseUser, remove_checkpoint: bool = False) -> None:
    """Delete a pipeline with all its versions. A job that runs is stopped (by the worker, gracefully, forced
    after the stop timeout). The rows in ClickHouse stay; the checkpoint stays too unless `remove_checkpoint`."""
    locked = _locked(pipeline)
    run = _active_run(locked)
    job = None
    if run is not None:
        job = {"host": run.host, "pid": run.pid, "process_started": run.process_started, "run_dir": run.run_dir}
    job_name = locked.job_name
    activity_record(
        actor=user,
        action="pipeline.delete",
        target=locked,
        before=_snapshot(locked),
        after={"remove_checkpoint": remove_checkpoint},
    )
    # Versions point back at the pipeline and the pipeline at them: clear the pointers, then delete.
    Pipeline.objects.filter(pk=locked.pk).update(current_version=None, deployed_version=None)
    locked.delete()
    if job is not None or remove_checkpoint:
        transaction.on_commit(
            lambda: queue.pipeline_job_discard(job_name=job_name, job=job, remove_checkpoint=remove_checkpoint)
        )


@transaction.atomic
def pipeline_checkpoint_reset(*, pipeline: Pipeline, user: AbstractBaseUser) -> Pipeline:
    """Start over: remove the checkpoint of a pipeline that is not running (its next start reads again from the
    spec's starting offsets, with empty dedup state; the job keeps the keys the table received within the dedup
    window, spark_jobs.written_keys). Rows already in ClickHouse stay."""
    pipeline = _locked(pipeline)
    if pipeline.status in JOB_ACTIVE or _active_run(pipeline) is not None:
        raise ConflictError("Stop the pipeline before removing its checkpoint.")
    Pipeline.objects.filter(pk=pipeline.pk).update(reset_checkpoint=True, updated_at=timezone.now())
    pipeline.refresh_from_db()
    activity_record(actor=user, action="pipeline.checkpoint_reset", target=pipeline)
    transaction.on_commit(
        lambda: queue.pipeline_job_discard(job_name=pipeline.job_name, job=None, remove_checkpoint=True)
    )
    return pipeline


def pipeline_job_spec(*, pipeline: Pipeline, version: PipelineVersion | None = None) -> PipelineSpec:
    """The spec the Spark job runs: the version's spec named `Pipeline.job_name`, with the connections' addresses
    and secrets put in.

    For the worker only (it writes this to the job's spec file); never return it from the API or log it.
    """
    version = version or pipeline.deployed_version or pipeline.current_version
    if version is None:
        raise ConflictError("The pipeline has no spec.")
    return stored_specs.with_connections(
        version.spec,
        name=pipeline.job_name,
        kafka_connection=pipeline.kafka_connection,
        clickhouse_connection=pipeline.clickhouse_connection,
        schema_registry_connection=pipeline.schema_registry_connection,
    )
