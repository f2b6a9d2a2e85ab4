"""What one user, and one workspace, may hold and run: pipelines (`settings.PIPELINES_PER_USER`,
`settings.PIPELINES_PER_WORKSPACE`) and pipelines whose job should run (`settings.RUNNING_PIPELINES_PER_USER`,
`settings.RUNNING_PIPELINES_PER_WORKSPACE`: deploying or running; each job takes a Spark driver of 0.6 to 0.9 GB).

Without them one account could create pipelines by the dozen a second and start a job for each, and take the
machine from everyone else; the workspace's caps keep a team of many members from doing the same together. Over a
cap, the service refuses with TooManyRequestsError (API 429, a JSON body in words naming the setting). The caller
holds the owner's and the workspace's rows locked (`_lock`) inside its transaction, so two concurrent requests
cannot both pass the count.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser

from webapp.core.exceptions import TooManyRequestsError
from webapp.pipelines.lifecycle import JOB_WANTED
from webapp.pipelines.models import Pipeline
from webapp.workspaces.models import Workspace


def _lock(*, owner_id: int, workspace_id: int) -> None:
    """Lock the owner's and the workspace's rows until the transaction ends: the counts below stay true until then
    (always in this order, so two requests never wait on each other's lock)."""
    get_user_model().objects.select_for_update().filter(pk=owner_id).first()
    Workspace.objects.select_for_update().filter(pk=workspace_id).first()


def check_pipeline_quota(*, owner: AbstractBaseUser, workspace: Workspace) -> None:
    """TooManyRequestsError when `owner` already has `settings.PIPELINES_PER_USER` pipelines, or `workspace`
    `settings.PIPELINES_PER_WORKSPACE`."""
    _lock(owner_id=owner.pk, workspace_id=workspace.pk)
    cap = settings.PIPELINES_PER_USER
    if Pipeline.objects.filter(owner=owner).count() >= cap:
        raise TooManyRequestsError(
            f"You have {cap} pipelines, the most one user may have (CLEARFLOW_PIPELINES_PER_USER): delete one you "
            "no longer need before creating another."
        )
    cap = settings.PIPELINES_PER_WORKSPACE
    if Pipeline.objects.filter(workspace=workspace).count() >= cap:
        raise TooManyRequestsError(
            f"The workspace {workspace.name!r} has {cap} pipelines, the most one workspace may have "
            "(CLEARFLOW_PIPELINES_PER_WORKSPACE): delete one it no longer needs before creating another."
        )


def check_running_quota(*, pipeline: Pipeline) -> None:
    """TooManyRequestsError when starting `pipeline` would make its owner run more than
    `settings.RUNNING_PIPELINES_PER_USER` jobs, or its workspace more than `settings.RUNNING_PIPELINES_PER_WORKSPACE`
    (a pipeline already deploying or running is no new job)."""
    if pipeline.status in JOB_WANTED:
        return
    _lock(owner_id=pipeline.owner_id, workspace_id=pipeline.workspace_id)
    cap = settings.RUNNING_PIPELINES_PER_USER
    running = Pipeline.objects.filter(owner_id=pipeline.owner_id, status__in=JOB_WANTED).count()
    if running >= cap:
        raise TooManyRequestsError(
            f"You run {running} pipelines, the most one user may run at once (CLEARFLOW_RUNNING_PIPELINES_PER_USER): "
            "stop one before starting another."
        )
    cap = settings.RUNNING_PIPELINES_PER_WORKSPACE
    running = Pipeline.objects.filter(workspace_id=pipeline.workspace_id, status__in=JOB_WANTED).count()
    if running >= cap:
        raise TooManyRequestsError(
            f"The workspace runs {running} pipelines, the most one workspace may run at once "
            "(CLEARFLOW_RUNNING_PIPELINES_PER_WORKSPACE): stop one before starting another."
        )
