"""Step 4: deduplication key(s), window and event time.

See the package docstring of `webapp.wizard.steps` for the show/submit contract."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError as PydanticValidationError

from spark_jobs import spec as specmod
from webapp.wizard import forms
from webapp.wizard.models import WizardDraft
from webapp.wizard.services import draft_save_step
from webapp.wizard.steps.common import initial_from, schema_fields
from webapp.wizard.steps.fit import dedup_blocking, dedup_presence


def _dedup_form(draft, data=None, initial=None, window_chosen=True):
    fields = schema_fields(draft)
    paths = [f["path"] for f in fields if f.get("type") != "json"]
    time_paths = [f["path"] for f in fields if f.get("type") == "datetime"]
    form = forms.DedupForm(data, initial=initial, field_paths=paths, time_paths=time_paths)
    if window_chosen:  # the page preselects the advisor's window only when the user has not chosen one
        form.fields["window"].widget.attrs["data-user-chosen"] = "1"
        form.fields["state_store"].widget.attrs["data-user-chosen"] = "1"
    return form


def dedup_initial(draft: WizardDraft) -> dict[str, Any]:
    """The form's values for the spec's `dedup` (None: off); {} when the step was never saved."""
    if not draft.spec.is_set("dedup"):
        return {}
    dedup = draft.spec.dedup
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
        "state_store": dedup.state_store,
    }


def dedup_show(request, draft, source):
    initial = initial_from(source, forms.DedupForm) if source else dedup_initial(draft)
    chosen = bool(initial)
    if not initial:
        initial = {"enabled": "on", "window": "1h", "time_basis": "ingestion"}
    # The figures come from key advice, loaded by the page (webapp/wizard/key_advice_views.py).
    return {"form": _dedup_form(draft, initial=initial, window_chosen=chosen)}


def dedup_submit(request, draft):
    form = _dedup_form(draft, data=request.POST)
    context = {"form": form}
    if not form.is_valid():
        return context
    data = form.cleaned_data
    spec = draft.spec.model_copy(deep=True)
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
            "state_store": data["state_store"] or "auto",
        }
        try:
            spec.dedup = specmod.DedupSpec.model_validate({**(spec.dedup.model_dump() if spec.dedup else {}), **shown})
        except PydanticValidationError as exc:
            form.add_error(None, "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors()))
            return context
    draft_save_step(draft=draft, step="dedup", spec=spec, advance=True)
    return None
