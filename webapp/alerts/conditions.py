"""What each rule kind watches, read through the pipelines' and the audits' selectors (no writes here).

`conditions_for(rules, now)` answers, for every rule, whether its condition holds now (`Condition.active`), or
`None` when it cannot tell (Redis did not answer, no audit result yet): then the rule's state stays as it is, so a
Redis outage neither fires nor resolves anything.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from clearflow_spec.protocol import history_key
from webapp.alerts.models import AlertRule, RuleKind
from webapp.audits.selectors import latest_pipeline_results
from webapp.pipelines.metrics import MetricsUnavailableError
from webapp.pipelines.metrics_history import MetricsSnapshot, metrics_snapshots, metrics_store
from webapp.pipelines.models import Pipeline, PipelineStatus

logger = logging.getLogger(__name__)

# A latest batch older than this means the job read nothing since (it publishes nothing for empty triggers), so
# its lag then was not the lag now: the job is idle, i.e. caught up.
LAG_STALE_AFTER_S = 60


@dataclass(frozen=True)
class RuleParams:
    threshold_label: str | None  # what `threshold` means for this kind (None: not used)
    minutes_label: str | None  # what `minutes` means (None: not used)
    threshold: float = 0
    minutes: int = 0
    renotify_minutes: int = 60


# The defaults every new pipeline gets (docs/alerts.md), and what the pages call each parameter.
RULE_PARAMS: dict[str, RuleParams] = {
    RuleKind.PIPELINE_FAILED: RuleParams(None, None),
    RuleKind.DUPLICATES: RuleParams("Duplicate keys more than", None, threshold=0),
    RuleKind.DEAD_LETTER_RATE: RuleParams("Dead letters, % of events read, over", "Measured over minutes",
                                          threshold=1.0, minutes=15),
    RuleKind.CONSUMER_LAG: RuleParams("Records behind more than", "For at least minutes",
                                      threshold=100_000, minutes=10),
    RuleKind.NO_EVENTS: RuleParams(None, "No events read for minutes", minutes=30),
    RuleKind.BEHIND: RuleParams(None, "Lag growing for at least minutes", minutes=5),
}  # fmt: skip


@dataclass(frozen=True)
class Condition:
    active: bool | None  # None: unknown now, leave the state alone
    value: float | None = None
    summary: str = ""


UNKNOWN = Condition(active=None)


def hold_seconds(rule: AlertRule) -> float:
    """How long the condition must hold before the rule fires (consumer lag and falling behind have one)."""
    return rule.minutes * 60.0 if rule.kind in (RuleKind.CONSUMER_LAG, RuleKind.BEHIND) else 0.0


@dataclass(frozen=True)
class Readings:
    """What one evaluation pass read, for every rule at once (a few round trips, not a few per rule)."""

    snapshots: dict[int, MetricsSnapshot] | None  # pipeline id -> latest batch and totals; None: Redis down
    dead_letters: dict[int, tuple[int, int]] | None  # rule id -> (events, dead letters) in its window
    audits: dict[int, Any]  # pipeline id -> the audit's latest 1-hour result


def conditions_for(rules: Iterable[AlertRule], *, now: datetime) -> dict[int, Condition]:
    rules = list(rules)
    readings = _read(rules, now=now)
    out: dict[int, Condition] = {}
    for rule in rules:
        try:
            out[rule.pk] = _condition(rule, now=now, readings=readings)
        except Exception:  # one broken rule must not stop the others' evaluation
            logger.exception("alert rule %s (%s) could not be evaluated", rule.pk, rule.kind)
            out[rule.pk] = UNKNOWN
    return out


def _read(rules: list[AlertRule], *, now: datetime) -> Readings:
    running = [r for r in rules if r.pipeline.status == PipelineStatus.RUNNING]
    watched = (RuleKind.CONSUMER_LAG, RuleKind.NO_EVENTS, RuleKind.BEHIND)
    pipelines = {r.pipeline.pk: r.pipeline for r in running if r.kind in watched}
    try:
        snapshots: dict[int, MetricsSnapshot] | None = metrics_snapshots(pipelines.values())
    except MetricsUnavailableError:
        snapshots = None
    try:
        dead_letters = _dead_letter_sums([r for r in running if r.kind == RuleKind.DEAD_LETTER_RATE], now=now)
    except MetricsUnavailableError:
        dead_letters = None
    audits = latest_pipeline_results() if any(r.kind == RuleKind.DUPLICATES for r in rules) else {}
    return Readings(snapshots=snapshots, dead_letters=dead_letters, audits=audits)


def _dead_letter_sums(rules: list[AlertRule], *, now: datetime) -> dict[int, tuple[int, int]]:
    """Events read and dead letters over each rule's window, from the job's per-batch series (one pipeline of
    ZRANGEBYSCORE for all rules). MetricsUnavailableError."""
    if not rules:
        return {}
    with metrics_store() as client:
        pipe = client.pipeline(transaction=False)
        for rule in rules:
            since_ms = int((now - timedelta(minutes=max(1, rule.minutes))).timestamp() * 1000)
            pipe.zrangebyscore(history_key(rule.pipeline.job_name), since_ms, "+inf")
        answers = pipe.execute()
    sums: dict[int, tuple[int, int]] = {}
    for rule, members in zip(rules, answers, strict=True):
        events = dead = 0
        for member in members:
            try:
                record = json.loads(member)
            except ValueError:
                continue
            if isinstance(record, dict):
                events += int(record.get("input_rows") or 0)
                dead += int(record.get("dead_letters") or 0)
        sums[rule.pk] = (events, dead)
    return sums


def _condition(rule: AlertRule, *, now: datetime, readings: Readings) -> Condition:
    pipeline = rule.pipeline
    if rule.kind == RuleKind.PIPELINE_FAILED:
        return _failed(pipeline)
    if rule.kind == RuleKind.DUPLICATES:
        return _duplicates(rule, readings.audits.get(pipeline.pk))
    # The metric rules watch a running job; a pipeline that was stopped on purpose has nothing to alert on. While it
    # is deploying (a redeploy, a re-size, a restart with the stack) they keep their state: a re-size of a pipeline
    # that falls behind does not resolve its alert for the seconds its job restarts.
    if pipeline.status == PipelineStatus.DEPLOY_REQUESTED:
        return UNKNOWN
    if pipeline.status != PipelineStatus.RUNNING:
        return Condition(active=False)
    if rule.kind == RuleKind.DEAD_LETTER_RATE:
        if readings.dead_letters is None:
            return UNKNOWN
        return _dead_letter_rate(rule, *readings.dead_letters.get(rule.pk, (0, 0)))
    if readings.snapshots is None:
        return UNKNOWN
    snapshot = readings.snapshots.get(pipeline.pk)
    if rule.kind == RuleKind.CONSUMER_LAG:
        return _lag(rule, snapshot, now=now)
    if rule.kind == RuleKind.NO_EVENTS:
        return _no_events(rule, snapshot, now=now)
    if rule.kind == RuleKind.BEHIND:
        return _behind(snapshot)
    return UNKNOWN


def _failed(pipeline: Pipeline) -> Condition:
    if pipeline.status != PipelineStatus.FAILED:
        return Condition(active=False)
    restart = " An automatic restart is planned." if pipeline.restart_at else ""
    # The status message starts "Failed: " after a job's failure; said once is enough.
    reason = pipeline.status_message.removeprefix("Failed: ") or "no reason recorded"
    return Condition(active=True, value=1, summary=f"The pipeline failed: {reason}{restart}")


def _duplicates(rule: AlertRule, result: Any) -> Condition:
    # `result` is the audit's latest 1-hour check (webapp.audits: latest_result_for_pipeline, for all at once).
    if result is None or result.error or result.duplicate_keys is None:
        return UNKNOWN  # no check yet, or the check failed (the audit shows why): neither fire nor resolve
    keys = int(result.duplicate_keys)
    if keys <= rule.threshold:
        return Condition(active=False, value=keys)
    window = _duration(int(result.window_seconds))
    return Condition(
        active=True,
        value=keys,
        summary=(
            f"The audit found {keys} duplicate key(s) ({int(result.duplicate_rows)} rows) in the last {window} "
            f"of the pipeline's table (checked {result.checked_at:%Y-%m-%d %H:%M:%S} UTC)."
        ),
    )


def _dead_letter_rate(rule: AlertRule, events: int, dead: int) -> Condition:
    window_minutes = max(1, rule.minutes)
    if events == 0:
        return Condition(active=False, value=0)
    rate = 100.0 * dead / events
    if rate <= rule.threshold:
        return Condition(active=False, value=round(rate, 3))
    return Condition(
        active=True,
        value=round(rate, 3),
        summary=(
            f"{dead} of {events} events ({rate:.2f}%) went to the dead-letter table in the last {window_minutes} "
            f"minutes (threshold {rule.threshold:g}%)."
        ),
    )


def _current_pace(snapshot: MetricsSnapshot | None) -> dict[str, Any] | None:
    pace = snapshot.pace if snapshot else None
    return pace if pace is not None and not pace.get("stale") else None


def _behind(snapshot: MetricsSnapshot | None) -> Condition:
    """The lag read from the brokers does not shrink (`clearflow_spec.pace`); unknown while it is not read."""
    pace = _current_pace(snapshot)
    if pace is None or pace.get("state") == "unknown":
        return UNKNOWN
    if pace.get("state") != "behind":
        return Condition(active=False, value=int(pace.get("lag") or 0))
    words = f" {pace['cause_words']}" if pace.get("cause_words") else ""
    return Condition(active=True, value=int(pace.get("lag") or 0), summary=f"{pace.get('summary', '')}{words}")


def _lag(rule: AlertRule, snapshot: MetricsSnapshot | None, *, now: datetime) -> Condition:
    pace = _current_pace(snapshot)
    if pace is not None:  # the lag behind the topics now, read from the brokers whatever the job does
        lag = int(pace.get("lag") or 0)
        if lag <= rule.threshold:
            return Condition(active=False, value=lag)
        return Condition(
            active=True,
            value=lag,
            summary=(
                f"The pipeline is {lag} records behind its topics (threshold {rule.threshold:g}) "
                f"for at least {rule.minutes} minutes. {pace.get('summary', '')}"
            ),
        )
    latest = snapshot.latest if snapshot else None
    if latest is None or latest.get("t_ms") is None:
        return Condition(active=False, value=0)
    if now.timestamp() * 1000 - latest["t_ms"] > LAG_STALE_AFTER_S * 1000:
        return Condition(active=False, value=0)
    lag = int(latest.get("total_lag") or 0)
    if lag <= rule.threshold:
        return Condition(active=False, value=lag)
    return Condition(
        active=True,
        value=lag,
        summary=(
            f"The pipeline is {lag} records behind its topics (threshold {rule.threshold:g}) "
            f"for at least {rule.minutes} minutes."
        ),
    )


def _no_events(rule: AlertRule, snapshot: MetricsSnapshot | None, *, now: datetime) -> Condition:
    quiet = timedelta(minutes=max(1, rule.minutes))
    pipeline = rule.pipeline
    if now - pipeline.status_changed_at < quiet:  # running for less than the rule's minutes
        return Condition(active=False)
    latest = snapshot.latest if snapshot else None
    last_ms = latest.get("t_ms") if latest else None
    if last_ms is not None and now.timestamp() * 1000 - last_ms < quiet.total_seconds() * 1000:
        return Condition(active=False)
    idle_minutes = (now.timestamp() * 1000 - last_ms) / 60_000 if last_ms is not None else None
    since = f"for {idle_minutes:.0f} minutes" if idle_minutes is not None else "since it started"
    return Condition(
        active=True,
        value=round(idle_minutes, 1) if idle_minutes is not None else None,
        summary=f"The pipeline has read no events {since} (threshold {rule.minutes} minutes).",
    )


def _duration(seconds: int) -> str:
    if seconds and seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    if seconds and seconds % 60 == 0:
        return f"{seconds // 60} min"
    return f"{seconds} s"
