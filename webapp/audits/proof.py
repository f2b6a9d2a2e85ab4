"""The proof on the pipeline page: per hour, events read = rows written + duplicates dropped + dead letters
+ filtered out (+ late events the dedup window no longer covered), summed from the job's own metrics
history (Redis, `webapp.pipelines.metrics_history`); beside it, the audit's latest count in ClickHouse.

Pure sums here (`hourly_sums`), and one context function for the partial template (`pipeline_proof_context`):
the pipeline page includes the partial, so this module never touches the page's own view.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from clearflow_spec.spec import SpecError
from webapp.audits import selectors
from webapp.audits.services import pipeline_audit_target
from webapp.core.exceptions import ApplicationError
from webapp.pipelines import metrics_history
from webapp.pipelines.models import Pipeline

HOUR_MS = 3_600_000
HOURS_SHOWN = 24


@dataclass
class HourSums:
    hour: datetime  # the hour's start, UTC
    batches: int = 0
    input_rows: int = 0
    rows_written: int = 0
    duplicates_dropped: int = 0
    dead_letters: int = 0
    filtered_out: int = 0
    late_rows_dropped: int = 0

    @property
    def accounted(self) -> int:
        """Where the hour's events went, added up."""
        return (
            self.rows_written + self.duplicates_dropped + self.dead_letters + self.filtered_out + self.late_rows_dropped
        )

    @property
    def difference(self) -> int:
        """Events read that no count accounts for (negative: counted twice). 0 when the hour adds up."""
        return self.input_rows - self.accounted

    @property
    def adds_up(self) -> bool:
        return self.difference == 0


def hourly_sums(records: Iterable[dict[str, Any]], *, hours: int = HOURS_SHOWN) -> list[HourSums]:
    """The records (fields of `clearflow_spec.protocol.BatchMetrics`, with `t_ms`) summed per UTC hour, newest
    hour first, at most `hours` of them."""
    by_hour: dict[int, HourSums] = {}
    for record in records:
        at_ms = record.get("t_ms")
        if at_ms is None:
            continue
        bucket = int(at_ms) // HOUR_MS
        sums = by_hour.get(bucket)
        if sums is None:
            sums = by_hour[bucket] = HourSums(hour=datetime.fromtimestamp(bucket * HOUR_MS / 1000, tz=UTC))
        sums.batches += 1
        for name in (
            "input_rows",
            "rows_written",
            "duplicates_dropped",
            "dead_letters",
            "filtered_out",
            "late_rows_dropped",
        ):
            setattr(sums, name, getattr(sums, name) + int(record.get(name) or 0))
    return [by_hour[bucket] for bucket in sorted(by_hour, reverse=True)[:hours]]


def pipeline_proof_context(*, pipeline: Pipeline) -> dict[str, Any]:
    """What the proof partial shows: the hourly sums (or why they are missing) and the latest audit."""
    try:
        history = metrics_history.pipeline_metrics_history(pipeline=pipeline, limit=metrics_history.MAX_LIMIT)
        hours, metrics_error = hourly_sums(history.records), ""
    except ApplicationError as exc:  # Redis down: the audit half still shows
        hours, metrics_error = [], exc.message
    audited_table = selectors.audited_table_of_pipeline(pipeline=pipeline)
    latest = selectors.latest_results(audited_table=audited_table) if audited_table else []
    return {
        "pipeline": pipeline,
        # Before the first audit: what it will check, and when (the audit round runs every AUDIT_INTERVAL).
        "audit_target": None if audited_table else _audit_target(pipeline),
        "audit_interval_minutes": max(1, round(settings.AUDIT_INTERVAL_SECONDS / 60)),
        "hours": hours,
        "metrics_error": metrics_error,
        "all_add_up": all(h.adds_up for h in hours),
        "audited_table": audited_table,
        "audit_hour": next((r for r in latest if r.window_seconds == 3600), None),
        "audit_others": [r for r in latest if r.window_seconds != 3600],
    }


def _audit_target(pipeline: Pipeline) -> dict[str, Any] | None:
    """What the pipeline's audit will count (its table and key columns), None when there is nothing to audit."""
    version = pipeline.deployed_version or pipeline.current_version
    try:
        return pipeline_audit_target(version.spec) if version else None
    except SpecError:
        return None
