"""The series of `/metrics`, built at scrape time from PostgreSQL (pipelines) and Redis (the jobs' metrics).

Nothing is held between scrapes: each scrape builds a registry with this collector (webapp.monitoring.views),
reads the pipelines through their selector and their metrics the way the pipeline page does
(`metrics_history.metrics_snapshots`: the latest record and the running totals each Spark job publishes).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from clearflow_spec.protocol import CELERY_TASKS_KEY, HTTP_REQUESTS_KEY
from webapp.alerts.selectors import alert_firing_list
from webapp.audits.selectors import latest_pipeline_results
from webapp.monitoring import counters
from webapp.pipelines.metrics import MetricsUnavailableError
from webapp.pipelines.metrics_history import MetricsSnapshot, metrics_snapshots, metrics_store
from webapp.pipelines.models import Pipeline, PipelineStatus
from webapp.pipelines.selectors import pipeline_monitoring_list

PIPELINE_LABELS = ["pipeline_id", "pipeline", "owner"]
# (series name, field of the job's running totals, help)
TOTALS = (
    ("clearflow_pipeline_events_in", "input_rows", "Events read from Kafka."),
    ("clearflow_pipeline_duplicates_dropped", "duplicates_dropped", "Events dropped as duplicates."),
    ("clearflow_pipeline_rows_written", "rows_written", "Rows written to ClickHouse."),
    ("clearflow_pipeline_dead_letters", "dead_letters", "Events sent to the dead-letter topic."),
    ("clearflow_pipeline_filtered_out", "filtered_out", "Events dropped by the pipeline's filter."),
    ("clearflow_pipeline_batches", "batches", "Micro-batches that read events."),
)


def _labels(pipeline: Pipeline) -> list[str]:
    return [str(pipeline.pk), pipeline.name, pipeline.owner.get_username()]


class ClearFlowCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        pipelines = list(pipeline_monitoring_list())
        yield _status(pipelines)
        yield _alert_states(pipelines)
        try:
            snapshots = metrics_snapshots(pipelines)
            store_up = True
        except MetricsUnavailableError:
            snapshots, store_up = {}, False
        yield GaugeMetricFamily(
            "clearflow_metrics_store_up", "1 when the metrics store (Redis) answered this scrape.", value=int(store_up)
        )
        yield from _pipeline_series(pipelines, snapshots)
        yield from _audit_series(pipelines)
        if store_up:
            yield from _app_series()


def _alert_states(pipelines: list[Pipeline]) -> Metric:
    """1 per alert rule that is firing now (one query; rules not firing have no sample)."""
    firing = GaugeMetricFamily(
        "clearflow_alert_firing", "1 while the pipeline's alert rule is firing.", labels=[*PIPELINE_LABELS, "rule"]
    )
    by_pk = {pipeline.pk: pipeline for pipeline in pipelines}
    for pipeline_id, kind in alert_firing_list().values_list("pipeline_id", "kind"):
        if pipeline_id in by_pk:
            firing.add_metric([*_labels(by_pk[pipeline_id]), kind], 1)
    return firing


def _status(pipelines: list[Pipeline]) -> Metric:
    status = GaugeMetricFamily(
        "clearflow_pipeline_status",
        "1 for the pipeline's current status, 0 for the others.",
        labels=[*PIPELINE_LABELS, "status"],
    )
    for pipeline in pipelines:
        for value in PipelineStatus.values:
            status.add_metric([*_labels(pipeline), value], int(pipeline.status == value))
    return status


def _pipeline_series(pipelines: list[Pipeline], snapshots: dict[int, MetricsSnapshot]) -> Iterator[Metric]:
    totals = {name: CounterMetricFamily(name, text, labels=PIPELINE_LABELS) for name, _, text in TOTALS}
    lag = GaugeMetricFamily(
        "clearflow_pipeline_lag_records",
        "Records behind the end of the topics now (read from the brokers by the worker; before its first reading, "
        "at the latest batch).",
        labels=PIPELINE_LABELS,
    )
    behind = GaugeMetricFamily(
        "clearflow_pipeline_behind",
        "1 while the pipeline falls behind its topics (its lag does not shrink), 0 while it keeps up or catches up.",
        labels=PIPELINE_LABELS,
    )
    growth = GaugeMetricFamily(
        "clearflow_pipeline_lag_growth_records_per_second",
        "The lag's change per second over the last readings (negative: catching up).",
        labels=PIPELINE_LABELS,
    )
    arriving = GaugeMetricFamily(
        "clearflow_pipeline_arriving_events_per_second",
        "Events written to the pipeline's topics per second, from their end offsets.",
        labels=PIPELINE_LABELS,
    )
    duration = GaugeMetricFamily(
        "clearflow_pipeline_last_batch_duration_seconds", "How long the latest batch took.", labels=PIPELINE_LABELS
    )
    last_at = GaugeMetricFamily(
        "clearflow_pipeline_last_batch_timestamp_seconds", "When the latest batch started.", labels=PIPELINE_LABELS
    )
    for pipeline in pipelines:
        snapshot = snapshots.get(pipeline.pk)
        if snapshot is None:
            continue
        labels = _labels(pipeline)
        if snapshot.totals is not None:
            for name, field, _ in TOTALS:
                totals[name].add_metric(labels, snapshot.totals[field])
        latest: dict[str, Any] | None = snapshot.latest
        pace = snapshot.pace if snapshot.pace is not None and not snapshot.pace.get("stale") else None
        if pace is not None:
            lag.add_metric(labels, int(pace.get("lag") or 0))
            behind.add_metric(labels, int(pace.get("state") == "behind"))
            growth.add_metric(labels, float(pace.get("growing_per_second") or 0.0))
            arriving.add_metric(labels, float(pace.get("arriving_per_second") or 0.0))
        elif latest is not None:
            lag.add_metric(labels, int(latest.get("total_lag") or 0))
        if latest is not None:
            duration.add_metric(labels, int(latest.get("batch_duration_ms") or 0) / 1000)
            if latest.get("t_ms") is not None:
                last_at.add_metric(labels, latest["t_ms"] / 1000)
    yield from totals.values()
    yield from (lag, behind, growth, arriving, duration, last_at)


def _audit_series(pipelines: list[Pipeline]) -> Iterator[Metric]:
    """The latest 1-hour duplicate audit of each pipeline's table (webapp.audits), for those audited yet."""
    keys = GaugeMetricFamily(
        "clearflow_pipeline_audit_duplicate_keys",
        "Keys found more than once in the pipeline's table over the last hour, by the latest audit that ran.",
        labels=PIPELINE_LABELS,
    )
    ok = GaugeMetricFamily(
        "clearflow_pipeline_audit_ok", "1 when the latest audit ran, 0 when it failed.", labels=PIPELINE_LABELS
    )
    checked = GaugeMetricFamily(
        "clearflow_pipeline_audit_timestamp_seconds", "When the latest audit ran.", labels=PIPELINE_LABELS
    )
    results = latest_pipeline_results()
    for pipeline in pipelines:
        result = results.get(pipeline.pk)
        if result is None:
            continue
        labels = _labels(pipeline)
        ok.add_metric(labels, int(result.ok))
        checked.add_metric(labels, result.checked_at.timestamp())
        if result.duplicate_keys is not None:
            keys.add_metric(labels, result.duplicate_keys)
    yield from (keys, ok, checked)


def _app_series() -> Iterator[Metric]:
    requests = CounterMetricFamily(
        "clearflow_http_requests", "HTTP requests answered, by view and status code.", labels=["view", "status"]
    )
    tasks = CounterMetricFamily(
        "clearflow_celery_tasks", "Celery task outcomes (success, failure, retry).", labels=["task", "outcome"]
    )
    try:
        with metrics_store() as client:
            request_counts = counters.read_counts(client, HTTP_REQUESTS_KEY)
            task_counts = counters.read_counts(client, CELERY_TASKS_KEY)
    except MetricsUnavailableError:
        return
    for (view, status), count in sorted(request_counts.items()):
        requests.add_metric([view, status], count)
    for (task, outcome), count in sorted(task_counts.items()):
        tasks.add_metric([task, outcome], count)
    yield requests
    yield tasks
