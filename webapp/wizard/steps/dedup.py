"""Step 4: deduplication key(s), window and event time.

The key advice (`webapp.wizard.key_advice_views`) measures the topic on the page, keeps what it recommends in the
draft (`draft_keep_advice`) and preselects its window, unless the user picked one: the page posts whether they
did (`window_chosen`, set by frontend/js/key_advice.js when the select is changed), and that is saved with the
step, so that a later visit preselects only what the user did not pick. The review step puts the advice beside
the choice (`window_advice`).

See the package docstring of `webapp.wizard.steps` for the show/submit contract."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError as PydanticValidationError

from clearflow_spec import spec as specmod
from clearflow_spec.sizing import StateEstimate, human_bytes, parse_memory, state_estimate
from webapp.pipelines import state_size
from webapp.wizard import forms
from webapp.wizard.models import WizardDraft
from webapp.wizard.services import draft_save_step
from webapp.wizard.steps.common import draft_topics, initial_from, schema_fields
from webapp.wizard.steps.fit import dedup_blocking, dedup_presence

CHOSEN_FIELDS = ("window",)  # what the advice preselects unless the user picked it
ADVICE_FIELD = "advice"  # in the step's section: what the key advice last recommended, and for which keys
# The review step warns when the chosen window and the advised one are this many times apart (either way).
WARN_RATIO = 10


def _dedup_form(draft, data=None, initial=None, chosen: dict[str, bool] | None = None):
    fields = schema_fields(draft)
    paths = [f["path"] for f in fields if f.get("type") != "json"]
    time_paths = [f["path"] for f in fields if f.get("type") == "datetime"]
    form = forms.DedupForm(data, initial=initial, field_paths=paths, time_paths=time_paths)
    for name, picked in (chosen or {}).items():
        if picked:  # the page preselects the advice's value only where the user has not picked one
            form.fields[name].widget.attrs["data-user-chosen"] = "1"
    return form


def chosen_fields(draft: WizardDraft, source: Any = None) -> dict[str, bool]:
    """Whether the user picked the window themselves: as posted or typed (`source`), else as
    saved with the step; a pipeline being edited (its dedup set, nothing saved by this step yet) chose its own."""
    if source:
        return {name: source.get(f"{name}_chosen") == "1" for name in CHOSEN_FIELDS}
    section = draft.section("dedup")
    if any(f"{name}_chosen" in section for name in CHOSEN_FIELDS):
        return {name: bool(section.get(f"{name}_chosen")) for name in CHOSEN_FIELDS}
    edited = draft.spec.is_set("dedup") and draft.spec.dedup is not None
    return dict.fromkeys(CHOSEN_FIELDS, edited)


def dedup_initial(draft: WizardDraft) -> dict[str, Any]:
    """The form's values for the spec's `dedup` (None: off); {} when the step was never saved."""
    if not draft.spec.is_set("dedup"):
        return {}
    return dedup_initial_of(draft.spec.dedup)


def dedup_initial_of(dedup: specmod.DedupSpec | None) -> dict[str, Any]:
    """A DedupForm's values for a spec's dedup section (None: off); the join step's right side uses it too."""
    if dedup is None:
        return {"enabled": "off"}
    presets = {value for value, _ in forms.WINDOW_PRESETS}
    return {
        "enabled": "on",
        "keys": dedup.keys,
        "window": dedup.window if dedup.window in presets else "custom",
        "custom_window": "" if dedup.window in presets else dedup.window,
        "time_basis": "event_time" if dedup.time == "event" else "ingestion",
        "event_time_field": dedup.event_time_field or "",
    }


def dedup_show(request, draft, source):
    initial = initial_from(source, forms.DedupForm) if source else dedup_initial(draft)
    chosen = chosen_fields(draft, source)
    if not initial:
        initial = {"enabled": "on", "window": "1h", "time_basis": "ingestion"}
    # The figures come from key advice, loaded by the page (webapp/wizard/key_advice_views.py).
    return {"form": _dedup_form(draft, initial=initial, chosen=chosen), "chosen": chosen}


def dedup_submit(request, draft):
    chosen = chosen_fields(draft, request.POST)
    form = _dedup_form(draft, data=request.POST, chosen=chosen)
    context = {"form": form, "chosen": chosen}
    if not form.is_valid():
        return context
    data = form.cleaned_data
    spec = draft.spec.model_copy(deep=True)
    values: dict[str, Any] = {f"{name}_chosen": picked for name, picked in chosen.items()}
    values[ADVICE_FIELD] = draft.section("dedup").get(ADVICE_FIELD)  # kept by the key advice as it measured
    if data["enabled"] == "off":
        spec.dedup = None
    else:
        window = data["custom_window"].strip() if data["window"] == "custom" else data["window"]
        try:
            specmod.parse_window(window)
        except ValueError as exc:
            form.add_error("custom_window" if data["window"] == "custom" else "window", str(exc))
            return context
        event_time = data["time_basis"] == "event_time"
        event_time_field = data["event_time_field"] if event_time else ""
        if dedup_blocking(form, dedup_presence(draft, keys=data["keys"], event_time_field=event_time_field)):
            return context
        # Over what was there, so that a dedup setting this step does not show stays as it was.
        shown = {
            "keys": data["keys"],
            "window": window,
            "time": "event" if event_time else "ingestion",
            "event_time_field": data["event_time_field"] if event_time else None,
        }
        try:
            spec.dedup = specmod.DedupSpec.model_validate({**(spec.dedup.model_dump() if spec.dedup else {}), **shown})
        except PydanticValidationError as exc:
            form.add_error(None, "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors()))
            return context
    draft_save_step(draft=draft, step="dedup", values=values, spec=spec, advance=True)
    return None


def _measured_advice(draft: WizardDraft) -> dict[str, Any] | None:
    """The key advice kept in the draft, when it was measured for the chosen keys and time basis."""
    dedup = draft.spec.dedup if draft.spec.is_set("dedup") else None
    advice = draft.section("dedup").get(ADVICE_FIELD)
    if dedup is None or not isinstance(advice, dict):
        return None
    same_measure = (
        advice.get("keys") == dedup.keys
        and advice.get("time") == dedup.time
        and (advice.get("event_time_field") or None) == (dedup.event_time_field if dedup.time == "event" else None)
    )
    return advice if same_measure else None


def _live_estimate(draft: WizardDraft, dedup: Any, kafka_connection: Any, *, live: bool) -> StateEstimate | None:
    """The estimate at the topics' rate of the last minutes (`live`, as the job's sizing asks it) when it is the
    higher, with the share of new keys the key advice measured; else at the advice's rate. The advice's rate is
    its sample's average over the time the sample spans (hours or days for a quiet topic), which may be far
    below what the topic carries now."""
    topics = draft_topics(draft)
    advice = _measured_advice(draft)
    live_rate = state_size.recent_rate(topics=topics, kafka_connection=kafka_connection) if live else None
    advised = advice.get("events_per_second") if advice else None
    if live_rate is not None and (advised is None or live_rate >= float(advised)):
        share = float(advice.get("unique_share") or 1.0) if advised is not None else 1.0
        return state_estimate(
            events_per_second=live_rate, window_seconds=dedup.window_seconds, unique_share=share, rate_source="topic"
        )
    return state_size.estimate_for(dedup=dedup, topics=topics, advice=advice, ask_topic=False)


def expected_state(draft: WizardDraft, kafka_connection: Any, *, live: bool) -> dict[str, Any] | None:
    """The chosen window's expected dedup state for the review step (`webapp.pipelines.state_size`): at the
    topics' recent rate (`live`) or the rate the key advice measured, the higher; with what this machine cannot
    hold, in words. None without deduplication; `estimate` None when no rate is known."""
    dedup = draft.spec.dedup if draft.spec.is_set("dedup") else None
    if dedup is None:
        return None
    estimate = _live_estimate(draft, dedup, kafka_connection, live=live)
    if estimate is None:
        return {"window": dedup.window, "estimate": None}
    check = state_size.check(estimate)
    return {
        "window": dedup.window,
        "estimate": estimate,
        # One unit system with the warnings (sizing.human_bytes, powers of 1024): "19.2 GB", not "19,610.6 MB".
        "disk": human_bytes(estimate.disk_bytes),
        "job_memory": human_bytes(estimate.job_memory_bytes),
        "heap": human_bytes(parse_memory(estimate.driver_memory)),
        "rocksdb_memory": human_bytes(estimate.rocksdb_memory_bytes),
        "unique_pct": 100 * estimate.unique_share,
        "share_measured": _measured_advice(draft) is not None,
        "trigger": state_size.planned_trigger(estimate.events_per_second),
        "warnings": check.warnings,
    }


def window_advice(draft: WizardDraft) -> dict[str, Any] | None:
    """The chosen window beside the advised one, for the review step; None without deduplication. `advice` is None
    when none was measured for the chosen keys and time basis. `factor` says how many times apart they are,
    `warn` whether that is more than WARN_RATIO, and `state_bytes` the chosen window's expected dedup state."""
    dedup = draft.spec.dedup if draft.spec.is_set("dedup") else None
    if dedup is None:
        return None
    chosen_seconds = specmod.parse_window(dedup.window)
    advice = _measured_advice(draft)
    result: dict[str, Any] = {"window": dedup.window, "seconds": chosen_seconds, "advice": None}
    if advice is None:
        return result
    advised_seconds = specmod.parse_window(advice["window"])
    ratio = chosen_seconds / advised_seconds
    longer = ratio >= 1
    factor = ratio if longer else 1 / ratio
    advised_state = advice.get("state_bytes")
    result.update(
        advice=advice,
        advised_seconds=advised_seconds,
        # The state holds the keys seen within the window: it grows with the window at the measured key rate.
        state_bytes=None if advised_state is None else int(advised_state * ratio),
        factor=round(factor, 1) if factor < 10 else round(factor),
        longer=longer,
        same=chosen_seconds == advised_seconds,
        # Longer than an "at least" advice is not an overshoot it can vouch for: only a shorter one is warned.
        warn=factor > WARN_RATIO and (not longer or not advice.get("lower_bound")),
    )
    return result
