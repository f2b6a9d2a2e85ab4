"""What one user may hold and run: pipelines (`settings.PIPELINES_PER_USER`) and pipelines whose job should run
(`settings.RUNNING_PIPELINES_PER_USER`: deploying or running; each job takes a Spark driver of 0.6 to 0.9 GB).

Without them one account could create pipelines by the dozen a second and start a job for each, and take the
machine from everyone else. Over a cap, the service refuses with TooManyRequestsError (API 429, a JSON body in
words naming the setting). The caller holds the owner's row locked (`lock_owner`) inside its transaction, so two
concurrent requests of one user cannot both pass the count.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser

from webapp.core.exceptions import TooManyRequestsError
from webapp.pipelines.lifecycle import JOB_WANTED
from webapp.pipelines.models import Pipeline


def lock_owner(owner: AbstractBaseUser) -> None:
    """Lock the owner's row until the transaction ends: the counts below stay true until then."""
    get_user_model().objects.select_for_update().filter(pk=owner.pk).first()


def check_pipeline_quota(*, owner: AbstractBaseUser) -> None:
    """TooManyRequestsError when `owner` already has `settings.PIPELINES_PER_USER` pipelines."""
    lock_owner(owner)
    cap = settings.PIPELINES_PER_USER
    if Pipeline.objects.filter(owner=owner).count() >= cap:
        raise TooManyRequestsError(
            f"You have {cap} pipelines, the most one user may have (CLEARFLOW_PIPELINES_PER_USER): delete one you "
            "no longer need before creating another."
        )


def check_running_quota(*, pipeline: Pipeline) -> None:
    """TooManyRequestsError when starting `pipeline` would make its owner run more than
    `settings.RUNNING_PIPELINES_PER_USER` jobs (a pipeline already deploying or running is no new job)."""
    if pipeline.status in JOB_WANTED:
        return
    lock_owner(pipeline.owner)
    cap = settings.RUNNING_PIPELINES_PER_USER
    running = Pipeline.objects.filter(owner_id=pipeline.owner_id, status__in=JOB_WANTED).count()
    if running >= cap:
        raise TooManyRequestsError(
            f"You run {running} pipelines, the most one user may run at once (CLEARFLOW_RUNNING_PIPELINES_PER_USER): "
            "stop one before starting another."
        )
