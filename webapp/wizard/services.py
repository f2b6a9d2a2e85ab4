"""Writes on wizard drafts: create or resume, save a step, move between steps, discard.

The draft is the wizard's memory: every submitted step is stored (the typed partial spec, `draft.spec`, as
JSON in `data["spec"]`, what a spec has no place for in `data[step]`, and what was typed into a step, not yet
valid, in `data["_raw"][step]`: kept as it is typed, on Back and on a failed Next), so a reload, Back or a
later visit shows it again. See `webapp.wizard.draft_spec`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, transaction

from webapp.connections.models import ClickHouseConnection, KafkaConnection
from webapp.wizard.draft_spec import SPEC_KEY, DraftSection
from webapp.wizard.models import WizardDraft
from webapp.wizard.steps import SLUGS, reached_after, step_index

RAW_KEY = "_raw"
# The ids of the connections this draft saved, per kind: entering such a one's name again corrects it.
SAVED_HERE_KEY = "_saved_connections"
# Never kept in a draft: secrets typed into a "new connection" form, and Django's own fields.
_RAW_SKIP = {"csrfmiddlewaretoken", "action"}
# The connections' secret fields (read from the spec's connection models), and anything else named like one.
_SECRET_SUFFIXES = (*KafkaConnection.SECRET_FIELDS, *ClickHouseConnection.SECRET_FIELDS, "password", "key_pem")


def draft_get_or_create(*, user: Any, pipeline: Any = None, initial_data: dict | None = None) -> WizardDraft:
    """The user's draft for a new pipeline (pipeline=None) or for editing `pipeline`; created if missing.

    A new edit draft starts from `initial_data` (`draft_spec.edit_draft_data` of the pipeline's spec) and
    may open every step at once.
    """
    draft = WizardDraft.objects.filter(user=user, pipeline=pipeline).first()
    if draft is not None:
        return draft
    data = dict(initial_data or {})
    reached = SLUGS[-1] if pipeline is not None else SLUGS[0]
    try:
        with transaction.atomic():
            draft = WizardDraft(user=user, pipeline=pipeline, data=data, step=SLUGS[0], reached=reached)
            draft.full_clean(validate_constraints=False)
            draft.save()
    except IntegrityError:  # two tabs opened the wizard at once: use the other one's draft
        draft = WizardDraft.objects.get(user=user, pipeline=pipeline)
    return draft


@transaction.atomic
def draft_save_step(
    *,
    draft: WizardDraft,
    step: str,
    values: dict[str, Any] | None = None,
    spec: DraftSection | None = None,
    advance: bool,
) -> WizardDraft:
    """Store a step's validated input: `spec` (the draft's partial spec with what the step changed) and
    `values` (what the spec has no place for) as the step's own section; with `advance`, move on to the next
    step (and unlock it).

    The row is locked and read again, and only this step's section, its typed input and the spec are written:
    the other sections keep what requests that ran beside this one stored (what was typed into another step)."""
    locked = WizardDraft.objects.select_for_update().filter(pk=draft.pk).first()
    data = dict(locked.data if locked is not None else draft.data)
    if values is not None:
        data[step] = values
    if spec is not None:
        data[SPEC_KEY] = spec.to_dict()
    raw = dict(data.get(RAW_KEY) or {})
    raw.pop(step, None)
    data[RAW_KEY] = raw
    draft.data = data
    index = step_index(step)
    if advance and index + 1 < len(SLUGS):
        draft.step = SLUGS[index + 1]
        opened = reached_after(step)  # past an optional next step too: it can be skipped
        if step_index(draft.reached) < step_index(opened):
            draft.reached = opened
    else:
        draft.step = step
    draft.save(update_fields=["data", "step", "reached", "updated_at"])
    return draft


@transaction.atomic
def draft_update_section(
    *,
    draft: WizardDraft,
    step: str,
    changes: dict[str, Any] | None = None,
    spec_edit: Callable[[DraftSection], None] | None = None,
) -> WizardDraft:
    """Merge `changes` into one step's stored values (e.g. a freshly fetched sample), and apply `spec_edit` to
    the draft's partial spec (e.g. set `source.format`), without moving.

    Called by requests that run for seconds beside the user's Next (a sample fetched from Kafka): the row is
    locked and read again, and only this section and what `spec_edit` changes are written. A request that
    wrote back the draft it loaded at its start would put back the fields a Next saved meanwhile."""
    locked = WizardDraft.objects.select_for_update().filter(pk=draft.pk).first()
    if locked is None:  # deployed or discarded by a request that ran meanwhile: nothing to update
        return draft
    data = dict(locked.data)
    if changes:
        section = dict(data.get(step) or {})
        section.update(changes)
        data[step] = section
    if spec_edit is not None:
        spec = locked.spec.model_copy(deep=True)
        spec_edit(spec)
        data[SPEC_KEY] = spec.to_dict()
    draft.data = data
    draft.save(update_fields=["data", "updated_at"])
    return draft


@transaction.atomic
def draft_keep_raw(*, draft: WizardDraft, step: str, post: Any, go_back: bool = True) -> WizardDraft:
    """Remember what was typed into `step` (not validated, secrets left out); with `go_back`, go one step back.

    Also called while the user types (several requests at once, beside a Next): the row is locked and read
    again, so a step saved in the meantime is not overwritten with what this request loaded before."""
    kept = {key: values for key, values in post.lists() if key not in _RAW_SKIP and not key.endswith(_SECRET_SUFFIXES)}
    locked = WizardDraft.objects.select_for_update().filter(pk=draft.pk).first()
    if locked is None:  # deployed or discarded by a request that ran meanwhile: nothing to keep
        return draft
    data = dict(locked.data)
    raw = dict(data.get(RAW_KEY) or {})
    raw[step] = kept
    data[RAW_KEY] = raw
    draft.data = data
    fields = ["data", "updated_at"]
    if go_back:
        draft.step = SLUGS[max(0, step_index(step) - 1)]
        fields.append("step")
    draft.save(update_fields=fields)
    return draft


@transaction.atomic
def draft_note_saved_connection(*, draft: WizardDraft, kind: str, pk: int) -> WizardDraft:
    """Remember that this draft saved connection `pk` of `kind` ("kafka" | "clickhouse")."""
    locked = WizardDraft.objects.select_for_update().get(pk=draft.pk)
    data = dict(locked.data)
    saved = dict(data.get(SAVED_HERE_KEY) or {})
    saved[kind] = [*saved.get(kind, []), pk]
    data[SAVED_HERE_KEY] = saved
    draft.data = data
    draft.save(update_fields=["data", "updated_at"])
    return draft


@transaction.atomic
def draft_keep_advice(*, draft: WizardDraft, advice: dict[str, Any] | None) -> WizardDraft:
    """Keep what the key advice last recommended (window, whether it is a lower bound, the state it implies, and
    the keys and time basis it measured) in the dedup step's section, for the review step. The row is locked and
    read again: the page saves what is typed at the same time."""
    locked = WizardDraft.objects.select_for_update().filter(pk=draft.pk).first()
    if locked is None:  # deployed or discarded meanwhile
        return draft
    data = dict(locked.data)
    data["dedup"] = {**(data.get("dedup") or {}), "advice": advice}
    draft.data = data
    draft.save(update_fields=["data", "updated_at"])
    return draft


def draft_goto(*, draft: WizardDraft, step: str) -> WizardDraft:
    """Make `step` the current one (only steps already reached)."""
    if step_index(step) <= step_index(draft.reached) and draft.step != step:
        draft.step = step
        draft.save(update_fields=["step", "updated_at"])
    return draft


def draft_discard(*, draft: WizardDraft) -> None:
    draft.delete()
