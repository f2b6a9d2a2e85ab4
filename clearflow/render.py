"""The `clearflow` command's text output: tables, plans, apply results, status blocks and errors."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from clearflow.errors import ClearFlowError
from clearflow.models import (
    Action,
    ApplyResult,
    Change,
    Connection,
    DeadLetterPage,
    Pipeline,
    PipelineStatus,
    Plan,
    ReplayResult,
)

# The API's stored status values, in the words the pages use.
STATUS_WORDS = {"deploy_requested": "deploying", "stop_requested": "stopping"}


def status_word(status: str) -> str:
    return STATUS_WORDS.get(status, status)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers], *([("" if v is None else str(v)) for v in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells)


def number(value: float | int | None, *, decimals: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{decimals}f}"


def _value(value: Any) -> str:
    return "(not set)" if value is None else json.dumps(value, ensure_ascii=False)


def change_line(change: Change) -> str:
    if change.secret:
        return f"{change.path}: (secret changes)"
    return f"{change.path}: {_value(change.current)} -> {_value(change.proposed)}"


def _summary(counts: dict[str, int]) -> str:
    parts = [f"{n} {word}" for word, n in counts.items() if n]
    return ", ".join(parts) if parts else "nothing"


def plan_text(plan: Plan) -> str:
    lines = []
    for step in plan.documents:
        head = f"{step.kind} {step.name!r}: "
        if step.action == Action.CREATE:
            head += "will be created"
        elif step.action == Action.UNCHANGED:
            head += "unchanged"
        elif step.kind == "pipeline":
            head += f"will change (version {step.current_version} -> {(step.current_version or 0) + 1})"
            if step.redeploys:
                head += "; it runs, so it will be redeployed"
        else:
            head += "will change"
        lines.append(head)
        lines += [f"    {change_line(c)}" for c in step.changes]
        lines += [f"    note: {n}" for n in step.notes]
        lines += [f"    checkpoint: {p}" for p in step.checkpoint_problems]
    counts = {
        "to create": plan.count(Action.CREATE),
        "to change": plan.count(Action.UPDATE),
        "unchanged": plan.count(Action.UNCHANGED),
    }
    lines.append(f"Plan: {_summary(counts)}.")
    return "\n".join(lines)


def apply_text(result: ApplyResult) -> str:
    lines = []
    for outcome in result.documents:
        word = {Action.CREATE: "created", Action.UPDATE: "updated", Action.UNCHANGED: "unchanged"}[outcome.action]
        line = f"{outcome.kind} {outcome.name!r}: {word}"
        if outcome.version is not None and outcome.action != Action.UNCHANGED:
            line += f" (version {outcome.version})"
        if outcome.deployed:
            line += f", version {outcome.version} deployed ({status_word(outcome.status or '')})"
        lines.append(line)
        lines += [f"    note: {n}" for n in outcome.notes]
    counts = {
        "created": result.count(Action.CREATE),
        "updated": result.count(Action.UPDATE),
        "unchanged": result.count(Action.UNCHANGED),
        "deployed": sum(1 for o in result.documents if o.deployed),
    }
    lines.append(f"Applied: {_summary(counts)}.")
    return "\n".join(lines)


def pipelines_text(pipelines: Sequence[Pipeline], connection_names: dict[tuple[str, int], str]) -> str:
    if not pipelines:
        return "No pipelines."
    rows = [
        (
            p.name,
            status_word(p.status),
            p.current_version,
            p.deployed_version or "-",
            connection_names.get(("kafka-connection", p.kafka_connection), p.kafka_connection),
            connection_names.get(("clickhouse-connection", p.clickhouse_connection), p.clickhouse_connection),
        )
        for p in pipelines
    ]
    return table(("NAME", "STATUS", "VERSION", "DEPLOYED", "KAFKA", "CLICKHOUSE"), rows)


def connections_text(connections: Sequence[Connection]) -> str:
    if not connections:
        return "No connections."
    rows = [(c.kind, c.name, c.address, ", ".join(c.secrets_set) or "-") for c in connections]
    return table(("KIND", "NAME", "ADDRESS", "SECRETS SET"), rows)


def _ago(at: datetime, now: datetime) -> str:
    seconds = max(0, int((now - at).total_seconds()))
    if seconds < 120:
        return f"{seconds} s ago"
    if seconds < 7200:
        return f"{seconds // 60} min ago"
    return f"{seconds // 3600} h ago"


def status_lines(status: PipelineStatus, *, now: datetime | None = None) -> list[str]:
    now = now or datetime.now(UTC)
    versions = f"version {status.current_version}"
    if status.deployed_version is not None and status.deployed_version != status.current_version:
        versions += f", deployed {status.deployed_version}"
    lines = [f"{status.name}  {status_word(status.status)}  ({versions})"]
    if status.status_message:
        lines.append(f"  {status.status_message}")
    if status.metrics_error:
        lines.append(f"  metrics: {status.metrics_error}")
        return lines
    rate = "-" if status.rows_per_second is None else number(status.rows_per_second, decimals=1)
    lines += [
        f"  rows/s          {rate}",
        f"  lag             {number(status.lag)}",
        f"  duplicates      {number(status.duplicates_dropped)} dropped",
        f"  dead letters    {number(status.dead_letters)}",
        f"  rows written    {number(status.rows_written)}",
    ]
    if status.last_batch_at is not None:
        at = status.last_batch_at
        lines.append(f"  last batch      {at:%Y-%m-%d %H:%M:%S} UTC ({_ago(at, now)})")
    else:
        lines.append("  last batch      none yet")
    return lines


def dead_letters_text(page: DeadLetterPage) -> str:
    if not page.table_exists:
        return f"No dead letters: {page.table} does not exist yet (the job creates it on its first run)."
    head = f"{page.count:,} dead letter{'s' if page.count != 1 else ''} in {page.table}"
    if page.pages > 1:
        head += f" (page {page.page} of {page.pages})"
    if not page.results:
        return head + "."
    rows = [
        (
            f"{d.inserted_at:%Y-%m-%d %H:%M:%S}",
            f"{d.topic}[{d.partition}]@{d.offset}",
            _shorten(d.reason, 60),
            _shorten(d.raw, 40),
        )
        for d in page.results
    ]
    return head + ":\n" + table(("TIME (UTC)", "TOPIC[PARTITION]@OFFSET", "REASON", "EVENT"), rows)


def replay_text(result: ReplayResult) -> str:
    text = f"Replayed {result.replayed:,} dead letters to their topics; "
    text += f"{result.failed:,} failed, {result.remaining:,} left."
    if result.error:
        text += f"\n{result.error}"
    return text


def _shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def error_text(exc: ClearFlowError) -> str:
    """`error: message`, then each problem under its file and document."""
    lines = [f"error: {exc.message}"]
    groups: dict[str, list[str]] = {}
    for item in exc.errors:
        groups.setdefault(item.where, []).append(str(item))
    for where, items in groups.items():
        indent = "  "
        if where:
            lines.append(f"  {where}:")
            indent = "    "
        lines += [indent + item for item in items]
    problems = exc.extra.get("checkpoint_problems") if exc.extra else None
    if problems:
        lines += ["  " + p for p in problems]
    return "\n".join(lines)
