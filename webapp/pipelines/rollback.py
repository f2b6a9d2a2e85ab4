"""Rollback: deploy an earlier version again ("Deploy version N"), as a new version equal to it.

The new version goes through `services.pipeline_update` and `services.pipeline_deploy`, so a change the checkpoint
cannot take is refused as an edit is (ConflictError with `extra.checkpoint_problems`, nothing saved) unless
`checkpoint` says "keep" or "fresh".
"""

from __future__ import annotations

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from clearflow_spec.spec import SpecError
from webapp.pipelines import services
from webapp.pipelines.lifecycle import JOB_WANTED
from webapp.pipelines.models import Pipeline


@transaction.atomic
def pipeline_rollback(
    *, pipeline: Pipeline, user: AbstractBaseUser, version: int, checkpoint: str | None = None
) -> Pipeline:
    """Make a new version with version `version`'s spec and deployed dead-letter choices, and deploy it. When the
    current version already holds that spec, no version is added and the current one is deployed (unless it
    already runs). ValidationError (key `version`) for a version the pipeline does not have."""
    target = pipeline.versions.filter(number=version).first()
    if target is None:
        numbers = list(pipeline.versions.order_by("number").values_list("number", flat=True))
        known = f"its versions are {numbers[0]} to {numbers[-1]}" if numbers else "it has no versions"
        raise ValidationError({"version": f"Pipeline {pipeline.name!r} has no version {version}; {known}."})
    try:
        spec = target.spec
    except SpecError as exc:
        raise ValidationError({"version": f"Version {version}'s spec no longer reads: {exc.errors[0]}."}) from None
    pipeline = services.pipeline_update(
        pipeline=pipeline,
        user=user,
        spec=spec,
        note=f"rollback to version {version}",
        checkpoint=checkpoint,
        accept_dead_letters=target.accept_dead_letters,
    )
    if pipeline.status not in JOB_WANTED or pipeline.deployed_version_id != pipeline.current_version_id:
        pipeline = services.pipeline_deploy(pipeline=pipeline, user=user, checkpoint=checkpoint)
    return pipeline
