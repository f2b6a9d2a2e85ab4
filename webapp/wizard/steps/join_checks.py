"""The join step's checks and preview, on the draft: the API's own checks, never written a second time.

- `clearflow_spec.spec.join_issues`: the join section's rules (key types differ -> `join.keys[i].right`, unknown or
  json keys, event-time fields), what the spec's validation runs on a whole spec;
- `webapp.pipelines.stored_specs.join_live_issues`: the right topic exists, the window fits each topic's
  `retention.ms` (`join.window`), what `check_live` runs;
- `webapp.pipelines.join_preview`: the right side has events in its sample (`join.source.topics`), and the
  joined rows of the two samples.

Each takes a `PipelineSpec`; at this step the draft has no sink yet, so they get `check_spec`: the draft's left
source and dedup with the join, built without validation (these checks read only `source`, `dedup` and `join`).
`place_issues` puts each finding's message next to the form field its path names.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from clearflow_spec import spec as specmod
from webapp.connections.kafka_client import SampledEvent
from webapp.pipelines import join_preview, stored_specs
from webapp.wizard.models import WizardDraft
from webapp.wizard.steps.common import schema_fields

JOIN_SECTION = "join"  # the draft's section for what a spec has no place for: the right sample, its notes


def check_spec(draft: WizardDraft, join: specmod.JoinSpec) -> specmod.PipelineSpec:
    """The draft's left side with `join`, as the checks read it (not validated: no sink yet)."""
    left = specmod.SourceSpec.model_construct(
        topics=draft.spec.source.topics or [],
        format=draft.spec.source.format or "json",
        fields=[specmod.FieldSpec(path=f["path"], type=f["type"]) for f in schema_fields(draft)],
    )
    dedup = draft.spec.dedup if draft.spec.is_set("dedup") else None
    return specmod.PipelineSpec.model_construct(version=2, name="unnamed", source=left, dedup=dedup, join=join)


def sampled_events(stored: list[dict[str, Any]]) -> list[SampledEvent]:
    """Events kept in the draft (`sample.event_to_json`) as the sampling service returned them."""
    events = []
    for e in stored:
        timestamp = datetime.fromisoformat(e["timestamp"]) if e.get("timestamp") else None
        events.append(
            SampledEvent(
                e.get("topic", ""),
                e.get("partition", 0),
                e.get("offset", 0),
                timestamp,
                e.get("key"),
                e.get("value"),
                bool(e.get("is_json")) and not e.get("decode_error"),
                e.get("size", 0),
            )
        )
    return events


def left_events(draft: WizardDraft) -> list[SampledEvent]:
    return sampled_events(draft.section("sample").get("events", []))


def right_events(draft: WizardDraft) -> list[SampledEvent]:
    return sampled_events(draft.section(JOIN_SECTION).get("events", []))


def join_issues(draft: WizardDraft, join: specmod.JoinSpec, *, kafka_connection: Any = None) -> list[specmod.SpecIssue]:
    """What the API refuses in this join: its rules, the right sample, and (given a connection) the cluster's
    topics and retention. Raises ApplicationError (KafkaClientError) when the cluster cannot be asked."""
    spec = check_spec(draft, join)
    issues = specmod.join_issues(spec) + join_preview.right_sample_issues(spec, right_events(draft))
    if kafka_connection is not None:
        issues += stored_specs.join_live_issues(spec, kafka_connection=kafka_connection)
    return issues


def preview_rows(draft: WizardDraft, join: specmod.JoinSpec) -> list[dict[str, Any]]:
    """The joined rows of the two stored samples (`join_preview`), at most `join_preview.PREVIEW_ROWS`."""
    return join_preview.join_preview(check_spec(draft, join), left_events(draft), right_events(draft))


def place_issues(
    issues: list[specmod.SpecIssue], *, form: Any, dedup_form: Any, keys: list[dict[str, Any]]
) -> list[str]:
    """Each finding's message next to the field its path names (the join form's, the right dedup form's, a key
    row's); returns those with no field of their own (for the top of the step)."""
    left_over = []
    for issue in issues:
        path = issue.path.removeprefix("spec.")
        message = issue.message[:1].upper() + issue.message[1:]
        if path.startswith("join.keys["):
            index, _, side = path.removeprefix("join.keys[").partition("].")
            if index.isdigit() and int(index) < len(keys) and side in ("left", "right"):
                keys[int(index)]["errors"].setdefault(side, message)
                continue
        elif path == "join.window":
            custom = form.cleaned_data.get("window") == "custom" if hasattr(form, "cleaned_data") else False
            form.add_error("custom_window" if custom else "window", message)
            continue
        elif path.startswith("join.source.topics"):
            form.add_error("right_topic", message)
            continue
        elif path in ("join.left_time_field", "join.right_time_field"):
            form.add_error(path.removeprefix("join."), message)
            continue
        elif path.startswith("join.dedup."):
            name = path.removeprefix("join.dedup.").split("[")[0]
            dedup_form.add_error(name if name in dedup_form.fields else None, message)
            continue
        left_over.append(message)
    return left_over
