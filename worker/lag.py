"""Each deployed pipeline's lag behind its topics, read from the brokers on the worker's own schedule, and the
sizing loop that follows it.

Every few seconds (`Task.PIPELINES_LAG`, beat) for every deploying or running pipeline:
1. the topics' end offsets now, from the brokers (one ListOffsets request per broker, with an admin client kept
   per connection), minus what the pipeline has committed: the offset log of its checkpoint's last committed
   batch (`spark_jobs.checkpoint_offsets`), or for a remote checkpoint the last batch's metrics record, or before
   the first batch where it starts reading. Per partition, so a job that is slow or stuck, or still in its first
   batch on a backlog, shows its lag;
2. the reading goes to Redis (`protocol.lag_key`), with the pace judged over the last readings
   (`clearflow_spec.pace`: keeping up, catching up, behind, and why) in `protocol.pace_key`: the page, the API,
   `/metrics` and the alerts read them;
3. a running job whose pace calls for another sizing (`pace.resize_for`: a light job that events outgrew, a
   state that outgrew its memory, a busy job that has been quiet for long) is re-sized: it stops and starts
   again from its checkpoint (`run_records.pipeline_resize`), exactly once, nothing lost or doubled.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.utils import timezone

from clearflow_spec import pace
from clearflow_spec.protocol import (
    LAG_KEEP_SECONDS,
    LagReading,
    lag_key,
    latest_key,
    local_checkpoint_path,
    pace_key,
)
from clearflow_spec.sizing import state_estimate
from spark_jobs.checkpoint_offsets import committed_offsets, committed_offsets_on_s3
from spark_jobs.cpu_priority import leave_idle_class
from spark_jobs.object_store import is_object_store
from spark_jobs.s3_client import S3Error
from webapp.connections.topic_offsets import TopicOffsets, offsets_client, topic_offsets
from webapp.core.exceptions import ApplicationError
from webapp.pipelines import run_records
from webapp.pipelines.models import Pipeline, PipelineRun, PipelineStatus
from worker import jobs, redis_state
from worker.reconciler import checkpoint_location

log = logging.getLogger(__name__)
S = PipelineStatus

OFFSETS_TIMEOUT_SECONDS = 5.0
# An admin client is kept per Kafka connection (and made again when the connection is edited, or after an error).
_clients: dict[int, tuple[Any, Any]] = {}  # connection pk -> (its updated_at, admin client)


def read_all() -> int:
    """One round over every deploying or running pipeline; how many lag readings were stored."""
    stored = 0
    pipelines = Pipeline.objects.filter(status__in=(S.RUNNING, S.DEPLOY_REQUESTED)).select_related(
        "deployed_version", "kafka_connection"
    )
    for pipeline in pipelines:
        try:
            if follow(pipeline):
                stored += 1
        except Exception:  # one pipeline's broker must not stop the others' readings
            log.exception("pipeline %s: lag not read", pipeline.pk)
    return stored


def _admin(pipeline: Pipeline) -> Any:
    connection = pipeline.kafka_connection
    kept = _clients.get(connection.pk)
    if kept is not None and kept[0] == connection.updated_at:
        return kept[1]
    admin = offsets_client(connection.client_settings(), timeout=OFFSETS_TIMEOUT_SECONDS)
    _clients[connection.pk] = (connection.updated_at, admin)
    return admin


def _topics(pipeline: Pipeline) -> tuple[list[str], Callable[[str], bool] | None, str]:
    """The listed topics, what else the source's topic pattern takes from the cluster (None: nothing), and where
    the pipeline starts."""
    spec = pipeline.deployed_version.spec
    topics = list(spec.source.topics)
    if spec.join is not None:
        topics += [t for t in spec.join.source.topics if t not in topics]
    matching = spec.source.reads_topic if spec.source.topic_pattern is not None else None
    return topics, matching, spec.source.starting_offsets


def _position(pipeline: Pipeline, run: PipelineRun | None) -> tuple[dict[str, dict[str, int]] | None, str]:
    """What the pipeline has committed, and where that was read ("checkpoint", "batch"); None: nothing yet."""
    # No run yet (a deploy or resume waiting for its job): the checkpoint it will start from.
    checkpoint = (run.checkpoint if run else "") or checkpoint_location(pipeline.job_name)
    local = local_checkpoint_path(checkpoint)
    if local is not None:
        return committed_offsets(local), "checkpoint"
    if is_object_store(checkpoint):
        try:
            return committed_offsets_on_s3(checkpoint), "checkpoint"
        except S3Error as exc:  # every lag interval while S3 refuses: one line, no traceback
            log.warning(
                "pipeline %s: its checkpoint on S3 could not be read (%s); the lag is read from its batches",
                pipeline.pk,
                exc,
            )
    raw = redis_state.client().get(latest_key(pipeline.job_name))
    if raw:
        record = json.loads(raw)
        offsets = record.get("end_offsets") or None
        if offsets:
            return offsets, "batch"
    return None, "start"


def reading_from(
    offsets: TopicOffsets, committed: dict[str, dict[str, int]] | None, *, starting: str, at_ms: int, source: str
) -> LagReading:
    """The lag of each partition: its end minus the committed offset (never below its earliest offset: what
    retention removed cannot be read). A partition with nothing committed is read from where the pipeline starts:
    its earliest offset, or its end for a pipeline that starts at the latest."""
    lag: dict[str, dict[str, int]] = {}
    end_total = committed_total = 0
    for topic, parts in offsets.end.items():
        for partition, end in parts.items():
            earliest = offsets.earliest.get(topic, {}).get(partition, 0)
            done = (committed or {}).get(topic, {}).get(partition)
            if done is None:
                done = end if (committed is None and starting == "latest") else earliest
            done = min(end, max(done, earliest))
            lag.setdefault(topic, {})[partition] = end - done
            end_total += end
            committed_total += done
    return LagReading(
        t_ms=at_ms,
        total=sum(v for parts in lag.values() for v in parts.values()),
        lag=lag,
        end_total=end_total,
        committed_total=committed_total,
        position=source if committed is not None else "start",
    )


def _store(job: str, reading: LagReading) -> list[LagReading]:
    """Keep `reading`; the readings of the last LAG_KEEP_SECONDS, oldest first."""
    client = redis_state.client()
    key = lag_key(job)
    pipe = client.pipeline(transaction=False)
    pipe.zadd(key, {reading.to_json(): reading.t_ms})
    pipe.zremrangebyscore(key, "-inf", reading.t_ms - LAG_KEEP_SECONDS * 1000)
    pipe.expire(key, LAG_KEEP_SECONDS)
    pipe.zrangebyscore(key, reading.t_ms - pace.LIGHT_AGAIN_SECONDS * 1000, "+inf")
    *_, members = pipe.execute()
    return [r for r in (LagReading.from_json(m) for m in members) if r is not None]


def read_lag(pipeline: Pipeline, run: PipelineRun | None) -> LagReading:
    """The pipeline's lag now. Raises ApplicationError (the broker could not be asked)."""
    topics, matching, starting = _topics(pipeline)
    try:
        offsets = topic_offsets(_admin(pipeline), topics=topics, matching=matching, timeout=OFFSETS_TIMEOUT_SECONDS)
    except ApplicationError:
        _clients.pop(pipeline.kafka_connection_id, None)
        raise
    committed, source = _position(pipeline, run)
    return reading_from(offsets, committed, starting=starting, at_ms=int(time.time() * 1000), source=source)


def _latest_batch(job: str) -> dict[str, Any]:
    raw = redis_state.client().get(latest_key(job))
    try:
        record = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def _state_memory_needed_mb(pipeline: Pipeline, events_per_second: float) -> int | None:
    dedup = pipeline.deployed_version.spec.dedup
    if dedup is None or events_per_second <= 0:
        return None
    return state_estimate(events_per_second=events_per_second, window_seconds=dedup.window_seconds).rocksdb_memory_mb


def follow(pipeline: Pipeline) -> bool:
    """Read the pipeline's lag, judge its pace, and re-size its running job if the pace calls for it. Whether a
    reading was stored."""
    if pipeline.deployed_version is None or pipeline.kafka_connection is None:
        return False
    run = PipelineRun.objects.filter(pipeline=pipeline, ended_at__isnull=True).first()
    try:
        reading = read_lag(pipeline, run)
    except ApplicationError as exc:
        log.info("pipeline %s: lag not read: %s", pipeline.pk, exc)
        return False
    readings = _store(pipeline.job_name, reading)
    judged = pace.judge(readings)
    cause = None
    sizing = run.sizing if run is not None else {}
    needed_mb = _state_memory_needed_mb(pipeline, judged.arriving_per_second)
    last_batch = redis_state.last_batch_at(pipeline.job_name)
    if judged.state == "behind":
        batch = _latest_batch(pipeline.job_name)
        cause = pace.behind_cause(
            judged,
            sizing=sizing,
            seconds_since_last_batch=(timezone.now() - last_batch).total_seconds() if last_batch else None,
            batch_ms=int(batch.get("batch_duration_ms") or 0) or None,
            insert_ms=int(batch.get("insert_ms_max") or 0) or None,
            load_average=os.getloadavg()[0],
            cores=os.cpu_count() or 1,
            state_memory_needed_mb=needed_mb,
        )
    said = {"cause": cause.code, "cause_words": cause.words} if cause else {"cause": "", "cause_words": ""}
    redis_state.client().set(pace_key(pipeline.job_name), json.dumps({**judged.to_dict(), **said}), ex=LAG_KEEP_SECONDS)
    if run is None or run.running_at is None or run.resize or pipeline.status != S.RUNNING:
        return True
    if judged.state in ("behind", "catching_up") and sizing.get("light") and run.host in ("", jobs.this_host()):
        # Never starved: the idle CPU class is for light pipelines that keep up.
        moved = leave_idle_class(run.pid) if run.pid else 0
        if moved:
            log.info("pipeline %s: %s; %d threads left the idle CPU class", pipeline.pk, judged.summary(), moved)
    quiet = [r for r in readings if reading.t_ms - r.t_ms <= pace.LIGHT_AGAIN_SECONDS * 1000]
    resize = pace.resize_for(
        judged,
        sizing=sizing,
        running_seconds=(timezone.now() - run.running_at).total_seconds(),
        first_batch_done=last_batch is not None and last_batch >= run.running_at,
        settle_seconds=settings.PIPELINE_RESIZE_SETTLE_SECONDS,
        quiet_max_per_second=pace.max_arriving_per_second(quiet),
        quiet_seconds=(reading.t_ms - quiet[0].t_ms) / 1000 if quiet else 0.0,
        state_memory_needed_mb=needed_mb,
    )
    if resize is not None and run_records.pipeline_resize(
        pipeline=pipeline, run=run, events_per_second=resize.events_per_second, reason=resize.reason
    ):
        log.info("pipeline %s: re-sizing: %s", pipeline.pk, resize.reason)
    return True
