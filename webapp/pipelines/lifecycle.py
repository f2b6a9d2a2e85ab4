"""A pipeline's lifecycle: its statuses, the actions that move it, and one table of status x action -> status.

`Pipeline.transition(action)` refuses every change this table does not list (compare-and-set on the row), the
services name the action a person asked for, and the worker's reconciler names what it saw happen to the job.
The statuses the reconciler watches, and those in which a job should run, are read from the same table.
docs/dev/lifecycle.md draws it (a test keeps the drawing equal to the table).

The stored values of "Deploying" and "Stopping" stay `deploy_requested` and `stop_requested`: API clients and
existing rows use them.
"""

from __future__ import annotations

from enum import StrEnum

from django.db import models


class PipelineStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    DEPLOY_REQUESTED = "deploy_requested", "Deploying"
    RUNNING = "running", "Running"
    STOP_REQUESTED = "stop_requested", "Stopping"
    STOPPED = "stopped", "Stopped"
    FAILED = "failed", "Failed"


class Action(StrEnum):
    # Asked by a person (the pages, the API, the admin), through `webapp.pipelines.services`.
    DEPLOY = "deploy"  # run the current version (a running pipeline is redeployed)
    RESUME = "resume"  # run the version it last ran again, from its checkpoint
    STOP = "stop"  # stop the job gracefully (forced after the stop timeout)
    WITHDRAW = "withdraw"  # stop a deploy whose job has not started yet
    CANCEL_RESTART = "cancel_restart"  # stop a failed pipeline that waits for its automatic restart
    # Seen by the worker (`worker.reconciler`), which reports them through the same services.
    JOB_STARTED = "job_started"  # the job's streaming query started
    JOB_STOPPED = "job_stopped"  # the job ended after a stop
    JOB_FAILED = "job_failed"  # the job died, was lost, stalled or could not start
    RESTART = "restart"  # an automatic restart after a failure is due
    # The worker sizes a running job again for the rate it sees (`worker.lag`): it stops and starts from its
    # checkpoint with the new sizing, as a redeploy of the same version.
    RESIZE = "resize"
    # The job was stopped with the platform around it (the local stack stopping), neither by a person nor by a
    # failure: the pipeline stays deployed, and its job starts again from its checkpoint at the next start.
    JOB_INTERRUPTED = "job_interrupted"


S = PipelineStatus
A = Action

# (status, action) -> the status after it. Any pair not listed is refused.
TRANSITIONS: dict[tuple[PipelineStatus, Action], PipelineStatus] = {
    (S.DRAFT, A.DEPLOY): S.DEPLOY_REQUESTED,
    (S.DEPLOY_REQUESTED, A.DEPLOY): S.DEPLOY_REQUESTED,
    (S.RUNNING, A.DEPLOY): S.DEPLOY_REQUESTED,
    (S.STOPPED, A.DEPLOY): S.DEPLOY_REQUESTED,
    (S.FAILED, A.DEPLOY): S.DEPLOY_REQUESTED,
    (S.STOPPED, A.RESUME): S.DEPLOY_REQUESTED,
    (S.FAILED, A.RESUME): S.DEPLOY_REQUESTED,
    (S.DEPLOY_REQUESTED, A.STOP): S.STOP_REQUESTED,
    (S.RUNNING, A.STOP): S.STOP_REQUESTED,
    (S.DEPLOY_REQUESTED, A.WITHDRAW): S.STOPPED,
    (S.FAILED, A.CANCEL_RESTART): S.STOPPED,
    (S.DEPLOY_REQUESTED, A.JOB_STARTED): S.RUNNING,
    (S.STOP_REQUESTED, A.JOB_STOPPED): S.STOPPED,
    (S.DEPLOY_REQUESTED, A.JOB_FAILED): S.FAILED,
    (S.RUNNING, A.JOB_FAILED): S.FAILED,
    (S.FAILED, A.RESTART): S.DEPLOY_REQUESTED,
    (S.RUNNING, A.RESIZE): S.DEPLOY_REQUESTED,
    (S.RUNNING, A.JOB_INTERRUPTED): S.DEPLOY_REQUESTED,
    (S.DEPLOY_REQUESTED, A.JOB_INTERRUPTED): S.DEPLOY_REQUESTED,
}


def next_status(status: str, action: Action) -> PipelineStatus | None:
    """The status `action` leads to from `status`; None when the table does not allow it."""
    try:
        return TRANSITIONS.get((PipelineStatus(status), action))
    except ValueError:  # a status this version does not know
        return None


def allowed_from(*actions: Action) -> frozenset[PipelineStatus]:
    """The statuses in which at least one of `actions` is allowed."""
    return frozenset(status for status, action in TRANSITIONS if action in actions)


# A job may exist (starting, running or stopping): the worker has something to watch, and the checkpoint is in use.
JOB_ACTIVE = allowed_from(A.JOB_STARTED, A.JOB_STOPPED, A.JOB_FAILED)
# A job should run: a failure counts (and is restarted), a new version is redeployed.
JOB_WANTED = allowed_from(A.JOB_FAILED)


def diagram() -> str:
    """The table as a Mermaid state diagram (docs/dev/lifecycle.md shows it; a test keeps the two equal)."""
    lines = ["stateDiagram-v2", *(f"    {status.value}: {status.label}" for status in S)]
    lines.append(f"    [*] --> {S.DRAFT.value}")
    edges: dict[tuple[str, str], list[str]] = {}
    for (status, action), target in TRANSITIONS.items():
        edges.setdefault((status.value, target.value), []).append(action.value)
    for (status, target), actions in edges.items():
        lines.append(f"    {status} --> {target}: {', '.join(actions)}")
    return "\n".join(lines) + "\n"
