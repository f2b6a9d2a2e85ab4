"""Steps 4 and 7 against the stored sample: do the sampled events have the dedup keys and a readable event
time, and do their values fit the mapped columns? The counting is `webapp.pipelines.type_fit`'s, with the
engine's conversion rules; this module only reads the draft and the form and words the result.

Mapping step: each mapped row gets a `fit` (a `FieldFit`): "fits", "fits N of M sampled values" (a
warning) or "cannot fit", with the failing values. "Cannot fit" blocks Next unless the row's "accept dead
letters" box is ticked (stored in the draft's mapping section as `accept_dead_letters`, field paths).
Dedup step: the share of sampled events without a usable key / event time; blocking at 100%.
"""

from __future__ import annotations

from typing import Any

from clearflow_spec.spec import JOIN_SIDES
from webapp.pipelines import type_fit
from webapp.wizard.models import WizardDraft
from webapp.wizard.steps.common import draft_join, schema_fields

ACCEPT_SUFFIX = "-accept"  # the mapping row's checkbox: m<index>-accept


def sample_values(draft: WizardDraft) -> list[Any]:
    """The parsed JSON values of the events stored at the sample step."""
    return [e.get("value") for e in draft.section("sample").get("events", []) if e.get("is_json")]


def accepted_fields(draft: WizardDraft, post: Any = None, rows: list[Any] | None = None) -> set[str]:
    """Fields whose dead letters the user accepts: from the posted boxes, else from the draft."""
    if post is None:
        return set(draft.section("mapping").get("accept_dead_letters") or [])
    return {row.field for row in rows or [] if post.get(f"m{row.index}{ACCEPT_SUFFIX}") == "on"}


def check_mapping_fit(draft: WizardDraft, rows: list[Any], accepted: set[str]) -> list[str]:
    """Give each mapped sample field its `fit`; return the blocking problems (one per field that cannot
    fit and is not accepted). Rows with an error of their own, computed fields and Kafka metadata are left
    out (they are not in the sample)."""
    sampled = _sampled_fields(draft)
    problems = []
    for row in rows:
        row.fit = None
        values, path = sampled.get(row.field, ([], ""))
        if not (row.include and row.column) or row.error or not values:
            continue
        row.fit = type_fit.field_fit(
            values=values,
            field=path,
            field_type=row.field_type,
            column=row.column,
            column_type=row.type,
            accepted=row.field in accepted,
        )
        if row.fit.blocking:
            problems.append(
                f"'{row.field}' cannot fit {row.type}: none of its {row.fit.total} sampled values converts. "
                "Change the column type, or tick \u201caccept dead letters\u201d next to it."
            )
    return problems


def _sampled_fields(draft: WizardDraft) -> dict[str, tuple[list[Any], str]]:
    """Each name a column can be filled from that a sample holds: its sampled values and its path in them. With a
    join, `left.<path>` in the sample step's events and `right.<path>` in the join step's."""
    values = sample_values(draft)
    join = draft_join(draft)
    if join is None:
        return {f["path"]: (values, f["path"]) for f in schema_fields(draft)}
    right = [e.get("value") for e in draft.section("join").get("events", []) if e.get("is_json")]
    sampled = {f"{JOIN_SIDES[0]}.{f['path']}": (values, f["path"]) for f in schema_fields(draft)}
    sampled.update({f"{JOIN_SIDES[1]}.{f.path}": (right, f.path) for f in join.source.fields})
    return sampled


def mapping_fit_summary(rows: list[Any]) -> dict[str, Any]:
    """For the banner: the fields whose values would partly or wholly go to dead letters."""
    lossy = [r for r in rows if getattr(r, "fit", None) and r.fit.state in (type_fit.PARTIAL, type_fit.CANNOT_FIT)]
    return {"lossy_fields": lossy, "sample_size": len([r for r in rows if getattr(r, "fit", None)])}


def dedup_presence(draft: WizardDraft, *, keys: list[str], event_time_field: str | None) -> dict[str, Any]:
    """Per chosen key (and the event-time field): how many sampled events lack a usable value."""
    values = sample_values(draft)
    if not values:
        return {"keys": [], "event_time": None}
    types = {f["path"]: f.get("type", "string") for f in schema_fields(draft)}
    presences = [type_fit.key_presence(values=values, field=k, field_type=types.get(k, "string")) for k in keys]
    event_time = None
    if event_time_field:
        event_time = type_fit.key_presence(
            values=values, field=event_time_field, field_type="datetime", role="event_time"
        )
    return {"keys": presences, "event_time": event_time}


def dedup_blocking(form: Any, presence: dict[str, Any]) -> bool:
    """Put a blocking finding next to its field (keys / event time field); True when there was one."""
    blocked = False
    for key in presence["keys"]:
        if key.blocking:
            form.add_error("keys", key.short_message)
            blocked = True
    event_time = presence["event_time"]
    if event_time is not None and event_time.blocking:
        form.add_error("event_time_field", event_time.short_message)
        blocked = True
    return blocked


def dedup_presence_from_post(draft: WizardDraft, post: Any) -> dict[str, Any]:
    """The presence figures for what the dedup form holds right now (the htmx partial beside the keys)."""
    if post.get("enabled") == "off":
        return {"keys": [], "event_time": None}
    event_time = post.get("event_time_field") if post.get("time_basis") == "event_time" else None
    return dedup_presence(draft, keys=post.getlist("keys"), event_time_field=event_time or None)
