"""Writes and state changes of pipelines (HackSoft services: keyword-only, typed, atomic).

Raises:
- `django.core.exceptions.ValidationError` for bad field values (name taken, a connection that is not
  the owner's), keyed by field name;
- `spark_jobs.spec.SpecError` for a bad spec, with `.errors` = [(path, message), ...];
- `webapp.core.exceptions.ConflictError` (API 409) when the pipeline's status does not allow the action.

Status changes are compare-and-set (`Pipeline.transition`), so two requests (or a request and the worker)
never both win. The worker hears about deploy/stop through `webapp.pipelines.dispatch`, on commit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.http import Http404
from django.utils import timezone

from webapp.connections.models import ClickHouseConnection, KafkaConnection
from webapp.core.exceptions import ConflictError
from webapp.pipelines import dispatch, specs
from webapp.pipelines.models import Pipeline, PipelineStatus, PipelineVersion

S = PipelineStatus
DEPLOYABLE = (S.DRAFT, S.DEPLOY_REQUESTED, S.RUNNING, S.STOPPED, S.FAILED)
RESUMABLE = (S.STOPPED, S.FAILED)
DELETABLE = (S.DRAFT, S.STOPPED, S.FAILED)


def _check_connections(
    *, owner: AbstractBaseUser, kafka_connection: KafkaConnection, clickhouse_connection: ClickHouseConnection
) -> None:
    errors = {}
    if kafka_connection.owner_id != owner.pk:
        errors["kafka_connection"] = "No such Kafka connection."
    if clickhouse_connection.owner_id != owner.pk:
        errors["clickhouse_connection"] = "No such ClickHouse connection."
    if errors:
        raise ValidationError(errors)


def _check_name(*, owner: AbstractBaseUser, name: str, exclude_pk: int | None) -> None:
    if problem := specs.name_error(name):
        raise ValidationError({"name": problem})
    others = Pipeline.objects.filter(owner=owner, name=name)
    if exclude_pk is not None:
        others = others.exclude(pk=exclude_pk)
    if others.exists():
        raise ValidationError({"name": f"You already have a pipeline named {name!r}."})


def pipeline_validate(
    *,
    spec: Mapping[str, Any],
    name: str | None = None,
    kafka_connection: KafkaConnection | None = None,
    clickhouse_connection: ClickHouseConnection | None = None,
    check_live: bool = False,
) -> specs.PipelineSpec:
    """Parse and check a spec; return the typed `PipelineSpec` or raise `SpecError` with every problem.

    `source.kafka` and `sink.clickhouse` (except its `database`) are filled from the connections when
    given; `name` (when given) replaces the spec's name. With `check_live=True` (needs both connections)
    it also asks the systems: do the topics exist, does an existing target table have the mapped columns
    with compatible types, is every column that is not Nullable and has no default mapped. Those problems
    come in the same SpecError, with spec paths. Unreachable systems raise KafkaClientError /
    ClickHouseClientError instead.
    """
    parsed = specs.parse(
        spec, name=name, kafka_connection=kafka_connection, clickhouse_connection=clickhouse_connection
    )
    if check_live and kafka_connection is not None and clickhouse_connection is not None:
        specs.check_live(parsed, kafka_connection=kafka_connection, clickhouse_connection=clickhouse_connection)
    return parsed


def _add_version(
    *, pipeline: Pipeline, spec: dict[str, Any], user: AbstractBaseUser | None, note: str
) -> PipelineVersion:
    last = pipeline.versions.aggregate(last=Max("number"))["last"] or 0
    version = PipelineVersion(pipeline=pipeline, number=last + 1, spec=spec, created_by=user, note=note)
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
    spec: Mapping[str, Any],
    note: str = "",
) -> Pipeline:
    """A new pipeline in status "draft" with version 1 holding `spec` (validated; stored without secrets)."""
    _check_connections(owner=owner, kafka_connection=kafka_connection, clickhouse_connection=clickhouse_connection)
    _check_name(owner=owner, name=name, exclude_pk=None)
    stored = specs.to_stored(
        pipeline_validate(
            spec=spec, name=name, kafka_connection=kafka_connection, clickhouse_connection=clickhouse_connection
        )
    )
    pipeline = Pipeline(
        owner=owner, name=name, kafka_connection=kafka_connection, clickhouse_connection=clickhouse_connection
    )
    pipeline.full_clean(exclude=["current_version", "deployed_version"], validate_constraints=False)
    try:
        with transaction.atomic():
            pipeline.save()
    except IntegrityError:  # a concurrent request took the name between the check and the insert
        raise ValidationError({"name": f"You already have a pipeline named {name!r}."}) from None
    pipeline.current_version = _add_version(pipeline=pipeline, spec=stored, user=owner, note=note or "created")
    pipeline.save(update_fields=["current_version", "updated_at"])
    return pipeline


@transaction.atomic
def pipeline_update(
    *,
    pipeline: Pipeline,
    user: AbstractBaseUser,
    name: str | None = None,
    spec: Mapping[str, Any] | None = None,
    kafka_connection: KafkaConnection | None = None,
    clickhouse_connection: ClickHouseConnection | None = None,
    note: str = "",
) -> Pipeline:
    """Change what is given. A changed spec (or name, or connection) makes a new version; old ones stay.

    A running pipeline keeps running its deployed version until it is deployed again.
    """
    locked = Pipeline.objects.select_for_update().filter(pk=pipeline.pk).first()
    if locked is None:  # deleted by a concurrent request
        raise Http404("No such pipeline.")
    pipeline = locked
    old_connections = (pipeline.kafka_connection_id, pipeline.clickhouse_connection_id)
    new_name = pipeline.name if name is None else name
    new_kafka = kafka_connection or pipeline.kafka_connection
    new_clickhouse = clickhouse_connection or pipeline.clickhouse_connection
    _check_connections(owner=pipeline.owner, kafka_connection=new_kafka, clickhouse_connection=new_clickhouse)
    if new_name != pipeline.name:
        _check_name(owner=pipeline.owner, name=new_name, exclude_pk=pipeline.pk)
    base_spec = pipeline.spec if spec is None else spec
    stored = specs.to_stored(
        pipeline_validate(
            spec=base_spec, name=new_name, kafka_connection=new_kafka, clickhouse_connection=new_clickhouse
        )
    )
    pipeline.name = new_name
    pipeline.kafka_connection = new_kafka
    pipeline.clickhouse_connection = new_clickhouse
    pipeline.full_clean(exclude=["current_version", "deployed_version"], validate_constraints=False)
    changed_connections = (new_kafka.pk, new_clickhouse.pk) != old_connections
    if stored != pipeline.spec or changed_connections:
        pipeline.current_version = _add_version(pipeline=pipeline, spec=stored, user=user, note=note or "edited")
    pipeline.save(update_fields=["name", "kafka_connection", "clickhouse_connection", "current_version", "updated_at"])
    return pipeline


@transaction.atomic
def pipeline_deploy(*, pipeline: Pipeline, user: AbstractBaseUser) -> Pipeline:
    """Request a deploy of the current version: status "deploy_requested", the worker told on commit.

    Re-validates the current spec first (SpecError). ConflictError while a stop is in progress.
    """
    if pipeline.current_version is None:
        raise ConflictError("The pipeline has no spec to deploy.")
    pipeline_validate(
        spec=pipeline.current_version.spec,
        kafka_connection=pipeline.kafka_connection,
        clickhouse_connection=pipeline.clickhouse_connection,
    )
    version = pipeline.current_version
    if not pipeline.transition(
        from_statuses=DEPLOYABLE,
        to_status=S.DEPLOY_REQUESTED,
        message=f"Deploy of version {version.number} requested by {user.get_username()}.",
        deployed_version=version,
        deploy_requested_at=timezone.now(),
    ):
        raise ConflictError(f"A pipeline that is {pipeline.get_status_display().lower()} cannot be deployed now.")
    transaction.on_commit(lambda: dispatch.deploy_requested(pipeline_id=pipeline.pk, version_id=version.pk))
    return pipeline


@transaction.atomic
def pipeline_stop(*, pipeline: Pipeline, user: AbstractBaseUser) -> Pipeline:
    """Stop: a requested deploy is withdrawn at once ("stopped"); a running job gets "stop_requested"."""
    by = f"by {user.get_username()}"
    if pipeline.transition(from_statuses=[S.DEPLOY_REQUESTED], to_status=S.STOPPED, message=f"Deploy withdrawn {by}."):
        return pipeline
    if pipeline.transition(from_statuses=[S.RUNNING], to_status=S.STOP_REQUESTED, message=f"Stop requested {by}."):
        transaction.on_commit(lambda: dispatch.stop_requested(pipeline_id=pipeline.pk))
        return pipeline
    raise ConflictError(f"A pipeline that is {pipeline.get_status_display().lower()} cannot be stopped.")


@transaction.atomic
def pipeline_resume(*, pipeline: Pipeline, user: AbstractBaseUser) -> Pipeline:
    """Start a stopped or failed pipeline again with the version it last ran (deploy_requested)."""
    version = pipeline.deployed_version
    if version is None:
        raise ConflictError("The pipeline was never deployed: deploy it instead.")
    if not pipeline.transition(
        from_statuses=RESUMABLE,
        to_status=S.DEPLOY_REQUESTED,
        message=f"Resume of version {version.number} requested by {user.get_username()}.",
        deploy_requested_at=timezone.now(),
    ):
        raise ConflictError(f"A pipeline that is {pipeline.get_status_display().lower()} cannot be resumed.")
    transaction.on_commit(lambda: dispatch.deploy_requested(pipeline_id=pipeline.pk, version_id=version.pk))
    return pipeline


@transaction.atomic
def pipeline_delete(*, pipeline: Pipeline, user: AbstractBaseUser) -> None:
    """Delete a pipeline that is not running (draft, stopped, failed), with all its versions."""
    locked = Pipeline.objects.select_for_update().filter(pk=pipeline.pk, status__in=DELETABLE).first()
    if locked is None:
        pipeline.refresh_from_db()
        raise ConflictError(
            f"A pipeline that is {pipeline.get_status_display().lower()} cannot be deleted: stop it first."
        )
    # Versions point back at the pipeline and the pipeline at them: clear the pointers, then delete.
    Pipeline.objects.filter(pk=locked.pk).update(current_version=None, deployed_version=None)
    locked.delete()


def pipeline_job_spec(*, pipeline: Pipeline, version: PipelineVersion | None = None) -> dict[str, Any]:
    """The spec the Spark job runs: the stored spec with the connections' addresses and secrets put in.

    For the worker only (it writes this to the job's spec file); never return it from the API or log it.
    """
    version = version or pipeline.deployed_version or pipeline.current_version
    if version is None:
        raise ConflictError("The pipeline has no spec.")
    job_spec = specs.with_connections(
        version.spec, kafka_connection=pipeline.kafka_connection, clickhouse_connection=pipeline.clickhouse_connection
    )
    return {**job_spec, "name": pipeline.job_name}
