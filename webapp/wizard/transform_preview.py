"""The filter and the computed fields tried on the sampled events, before a job runs them: how many events the
filter keeps, and the values each computed field takes.

The job evaluates the expressions with Spark; here they are evaluated in Python by sqlglot's executor, which knows
most of the everyday functions (comparisons, arithmetic, `lower`, `upper`, `substring`, `length`, `concat`...).
An expression it cannot evaluate is said so, by name, and left to the job: the preview never guesses a value.
Field paths (`user.id`) are read from each event's JSON and given plain column names for the executor.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

SHOWN_ROWS = 5


@dataclass
class TransformPreview:
    events: int = 0  # sampled events the preview ran on
    kept: int | None = None  # kept by the filter (None: no filter, or not previewed)
    filter_unpreviewed: str = ""  # why the filter was not tried here
    names: list[str] = field(default_factory=list)  # the computed fields previewed
    rows: list[list[tuple[str, str]]] = field(default_factory=list)  # (name, value) on the first kept events
    unpreviewed: dict[str, str] = field(default_factory=dict)  # computed field -> why it was not tried here


def _leaves(value: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(value, dict):
        return {prefix: value} if prefix else {}
    out: dict[str, Any] = {prefix: value} if prefix else {}
    for key, inner in value.items():
        out.update(_leaves(inner, f"{prefix}.{key}" if prefix else str(key)))
    return out


def _why(expression: str) -> str:
    functions = sorted({name.lower() for name in re.findall(r"([A-Za-z_]\w*)\s*\(", expression)})
    named = ", ".join(f"{name}()" for name in functions)
    return f"not tried on the sample: {named or 'it'} is evaluated by the job only"


def _shown(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def preview(values: Sequence[Any], filter_expression: str, transforms: Sequence[tuple[str, str]]) -> TransformPreview:
    """Try `filter_expression` and `transforms` ((name, expression), each may use the ones before) on `values`
    (the sampled events' JSON). Expressions are expected to have passed `clearflow_spec.spec.expression_issues`."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.executor import execute

    events = [v for v in values if isinstance(v, dict)]
    result = TransformPreview(events=len(events))
    if not events:
        return result
    leaves = [_leaves(v) for v in events]
    paths = sorted({p for leaf in leaves for p in leaf}, key=len, reverse=True)
    column_of = {p.lower(): f"c{i}" for i, p in enumerate(paths)}
    table = [{column_of[p.lower()]: leaf.get(p) for p in paths} for leaf in leaves]
    computed: dict[str, exp.Expression] = {}

    def tree(expression: str) -> exp.Expression:
        parsed = sqlglot.parse_one(expression, read="spark")

        def rename(node: exp.Expression) -> exp.Expression:
            if isinstance(node, exp.Column):
                name = ".".join(part.name for part in node.parts).lower()
                if name in computed:
                    return exp.Paren(this=computed[name].copy())
                if name in column_of:
                    return exp.column(column_of[name])
            return node

        return parsed.transform(rename)

    def run(expression: exp.Expression) -> list[Any]:
        query = exp.select(expression.as_("v")).from_("t")
        return [row[0] for row in execute(query, tables={"t": table}).rows]

    kept_rows = list(range(len(table)))
    if filter_expression.strip():
        try:
            flags = run(tree(filter_expression))
        except Exception:  # the executor raises many kinds for what it does not know
            result.filter_unpreviewed = _why(filter_expression)
        else:
            kept_rows = [i for i, flag in enumerate(flags) if flag is True]
            result.kept = len(kept_rows)
    columns: list[list[Any]] = []
    for name, expression in transforms:
        try:
            parsed = tree(expression)
            values_of = run(parsed)
        except Exception:
            result.unpreviewed[name] = _why(expression)
            continue
        computed[name.lower()] = parsed
        result.names.append(name)
        columns.append(values_of)
    shown = kept_rows[:SHOWN_ROWS] if columns else []
    result.rows = [[(n, _shown(column[i])) for n, column in zip(result.names, columns, strict=True)] for i in shown]
    return result
