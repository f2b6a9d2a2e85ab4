"""Drafts in progress move to the new format: the step values that are spec fields go into a partial spec in
the spec's own words (`data["spec"]`, see webapp/wizard/draft_spec.py); each step keeps only what a spec has no
place for. A frozen copy of the old format's rules, so later changes of the code do not change this step."""

from __future__ import annotations

from typing import Any

from django.db import migrations


def _partial_spec(data: dict[str, Any]) -> dict[str, Any]:
    sample = data.get("sample") or {}
    dedup = data.get("dedup") or {}
    transform = data.get("transform") or {}
    ch = data.get("clickhouse") or {}
    mapping = (data.get("mapping") or {}).get("columns")
    review = data.get("review") or {}
    spec: dict[str, Any] = {}
    source: dict[str, Any] = {}
    if "topics" in data:
        source["topics"] = list((data.get("topics") or {}).get("topics", []))
    if sample.get("fields"):
        source["fields"] = [{"path": f["path"], "type": f["type"]} for f in sample["fields"]]
    if review.get("starting_offsets"):
        source["starting_offsets"] = review["starting_offsets"]
    if source:
        spec["source"] = source
    if "dedup" in data:
        spec["dedup"] = None
        if dedup.get("enabled"):
            event_time = dedup.get("time_basis") == "event_time"
            spec["dedup"] = {
                "keys": list(dedup.get("keys", [])),
                "window": dedup.get("window") or "1h",
                "time": "event" if event_time else "ingestion",
                "event_time_field": dedup.get("event_time_field") if event_time else None,
                "state_store": dedup.get("state_store") or "auto",
            }
    if "transform" in data:
        spec["filter"] = (transform.get("filter") or "").strip() or None
        spec["transforms"] = [
            {"name": c["name"], "expression": c["expression"], "type": c["type"]} for c in transform.get("computed", [])
        ]
    if ch.get("table_mode"):
        new_table = ch.get("table_mode") != "existing"
        column_of = {m["field"]: m["column"] for m in mapping or []}
        sink: dict[str, Any] = {
            "clickhouse": {"database": ch.get("database") or "default"},
            "table": (ch.get("new_table") if new_table else ch.get("table")) or "",
            "create_table": new_table,
            "engine": ch.get("engine") or "MergeTree",
            "order_by": [column_of.get(p, p) for p in ch.get("order_by", [])] if new_table else [],
        }
        if mapping is not None:
            sink["columns"] = [{"field": m["field"], "column": m["column"], "type": m["type"]} for m in mapping]
        spec["sink"] = sink
    return spec


def forwards(apps, schema_editor) -> None:
    WizardDraft = apps.get_model("wizard", "WizardDraft")
    for draft in WizardDraft.objects.all().iterator():
        data = dict(draft.data or {})
        if "spec" in data:
            continue
        spec = _partial_spec(data)
        sample = dict(data.get("sample") or {})
        fields = sample.pop("fields", None) or []
        sample["notes"] = {
            f["path"]: {k: f[k] for k in ("nullable", "manual", "examples") if k in f} for f in fields if "path" in f
        }
        ch = data.get("clickhouse") or {}
        new = {"spec": spec, "sample": sample}
        for step in ("kafka", "review", "_raw"):
            if step in data:
                new[step] = data[step]
        if "review" in new:
            new["review"] = {"name": (data.get("review") or {}).get("name", "")}
        new["clickhouse"] = {
            k: ch[k] for k in ("connection_id", "table_mode", "order_by", "columns") if k in ch and ch[k] is not None
        }
        draft.data = new
        draft.save(update_fields=["data"])


class Migration(migrations.Migration):
    dependencies = [("wizard", "0001_initial")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
