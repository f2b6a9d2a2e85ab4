"""Step 4: deduplication key(s), window and event time.

See the package docstring of `webapp.wizard.steps` for the show/submit contract."""

from __future__ import annotations

from typing import Any

from spark_jobs import spec as specmod
from webapp.wizard import forms
from webapp.wizard.services import draft_save_step
from webapp.wizard.steps.common import initial_from, schema_fields


def _dedup_form(draft, data=None, initial=None, window_chosen=True):
    fields = schema_fields(draft)
    paths = [f["path"] for f in fields if f.get("type") != "json"]
    time_paths = [f["path"] for f in fields if f.get("type") == "datetime"]
    form = forms.DedupForm(data, initial=initial, field_paths=paths, time_paths=time_paths)
    if window_chosen:  # the page preselects the advisor's window only when the user has not chosen one
        form.fields["window"].widget.attrs["data-user-chosen"] = "1"
        form.fields["state_store"].widget.attrs["data-user-chosen"] = "1"
    return form


def dedup_initial(section: dict[str, Any]) -> dict[str, Any]:
    if not section:
        return {}
    window = section.get("window", "1h")
    presets = {value for value, _ in forms.WINDOW_PRESETS}
    return {
        "enabled": "on" if section.get("enabled", True) else "off",
        "keys": section.get("keys", []),
        "window": window if window in presets else "custom",
        "custom_window": "" if window in presets else window,
        "time_basis": section.get("time_basis", "ingestion"),
        "event_time_field": section.get("event_time_field", ""),
        "state_store": section.get("state_store", "auto"),
    }


def dedup_show(request, draft, source):
    initial = initial_from(source, forms.DedupForm) if source else dedup_initial(draft.section("dedup"))
    chosen = bool(initial)
    if not initial:
        initial = {"enabled": "on", "window": "1h", "time_basis": "ingestion"}
    # The figures come from the dedup advisor, loaded by the page (webapp/wizard/dedup_views.py).
    return {"form": _dedup_form(draft, initial=initial, window_chosen=chosen)}


def dedup_submit(request, draft):
    form = _dedup_form(draft, data=request.POST)
    context = {"form": form}
    if not form.is_valid():
        return context
    data = form.cleaned_data
    if data["enabled"] == "off":
        values = {"enabled": False}
    else:
        window = data["custom_window"].strip() if data["window"] == "custom" else data["window"]
        try:
            specmod.parse_window(window)
        except ValueError as exc:
            form.add_error("custom_window" if data["window"] == "custom" else "window", str(exc))
            return context
        values = {
            "enabled": True,
            "keys": data["keys"],
            "window": window,
            "time_basis": data["time_basis"] or "ingestion",
            "event_time_field": data["event_time_field"] if data["time_basis"] == "event_time" else "",
            "state_store": data["state_store"] or "auto",
        }
    draft_save_step(draft=draft, step="dedup", values=values, advance=True)
    return None
