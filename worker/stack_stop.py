"""The local stack's stop (`localstack.stopping`): every job started under the run root stopped at once, and each run
recorded as stopped with the stack, so that its pipeline stays deployed and starts again from its checkpoint."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from webapp.pipelines.models import PipelineRun
from worker import jobs, reconciler, standby

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StackStop:
    jobs: int  # job processes stopped
    forced: int  # of which killed after the timeout
    recorded: bool  # their runs recorded (False: the database did not answer; the next start records them)


def stop_stack_jobs(*, timeout: float) -> StackStop:
    """The local stack stops (its worker and beat already have): stop every job started under its run root, all
    at once (SIGTERM, SIGKILL after `timeout`), and record each run as stopped with the stack. Their pipelines stay
    deployed: the next start runs them again from their checkpoints, and it is not counted as a failure."""
    run_root = Path(settings.CLEARFLOW_RUN_ROOT)
    handles = jobs.find_jobs(run_root)
    for handle in handles:
        jobs.mark_stopped_with_stack(handle.run_dir)  # first: a record written later finds it (also a later start)
    standbys = {handle.run_dir for handle in handles if standby.is_waiting(handle.run_dir)}  # no pipeline's
    results = jobs.stop_jobs(handles, timeout=timeout)
    results = [result for result in results if result.handle.run_dir not in standbys]
    recorded = True
    try:
        open_runs = PipelineRun.objects.filter(ended_at__isnull=True, host__in=["", jobs.this_host()])
        for pipeline_id, run_dir in open_runs.values_list("pipeline_id", "run_dir"):
            if run_dir and Path(run_dir).resolve().is_relative_to(run_root.resolve()):
                reconciler.reconcile(pipeline_id)  # the job is gone: records how it ended (stopped with the stack)
    except Exception:  # the database is down: the stack's next start records the runs (the marks stay)
        log.exception("could not record the runs stopped with the stack")
        recorded = False
    return StackStop(jobs=len(results), forced=sum(result.forced for result in results), recorded=recorded)
