"""The wizard's draft of a pipeline spec: `DraftSpec`, the spec's own models with every field optional.

Each step writes the spec fields it shows (`spec.source.topics = [...]`, `spec.dedup = DedupSpec(...)`,
`spec.sink.columns = [...]`) and leaves every other field as it was. The draft's models are derived from the
spec's (`clearflow_spec.spec.PipelineSpec`), so they know the same names and types: a misspelt field or a value of
the wrong type is an error when it is written or read, never a silent `None`. What the steps write whole (a
field, the dedup settings, a computed field, a column) is the spec's own model, checked when it is set; the
sections a step fills piece by piece (`source`, `sink`) are partial. The whole spec is checked when the draft
is complete (`complete_spec`, then the pipelines service).

Editing a pipeline starts from its stored spec, so what the wizard does not show (`source.max_records_per_batch`,
`sink.dlq_table`, `sink.insert_dedup_window`, ...) is kept.

In `WizardDraft.data` the partial spec is JSON under `data["spec"]` (`DraftSpec.to_dict()`: only the fields a
step set). Beside it the draft keeps only what a spec has no place for: the connection ids (the pipelines service
merges the connections in), the sampled events and per-field notes, an existing table's columns, the ORDER BY as
field paths, the pipeline's name.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, create_model

from clearflow_spec.spec import PipelineSpec, version_for
from webapp.pipelines.spec_field import upgrade_spec

logger = logging.getLogger(__name__)

SPEC_KEY = "spec"

# Which wizard step fixes a problem at a given spec path (longest prefix wins).
_STEP_OF_PATH = (
    ("source.kafka", "kafka"),
    ("source.topics", "topics"),
    ("source.topic_pattern", "topics"),
    ("source.fields", "sample"),
    ("source", "sample"),
    ("dedup", "dedup"),
    ("join", "join"),
    ("filter", "transform"),
    ("transforms", "transform"),
    ("sink.columns", "mapping"),
    ("sink.order_by", "clickhouse"),
    ("sink", "clickhouse"),
    ("name", "review"),
)


def step_for_path(path: str) -> str:
    for prefix, step in _STEP_OF_PATH:
        if path == prefix or path.startswith((prefix + ".", prefix + "[")):
            return step
    return "review"


class DraftSection(BaseModel):
    """A section of the draft: the spec section's fields, each optional; only what was set is kept."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    def to_dict(self) -> dict[str, Any]:
        """The fields a step set (nested sections: those with something set), as JSON-ready values."""
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, DraftSection):
                nested = value.to_dict()
                if nested:
                    out[name] = nested
            elif name in self.model_fields_set:
                out[name] = _json(value)
        return out

    def unset(self, name: str) -> None:
        """Forget field `name`, as if no step had written it (e.g. the mapping, after another table was chosen)."""
        if name not in type(self).model_fields:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}")
        self.__dict__[name] = None
        self.model_fields_set.discard(name)

    def is_set(self, name: str) -> bool:
        """Whether a step wrote field `name` (`None` may be a value: `dedup` None is "off")."""
        if name not in type(self).model_fields:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}")
        return name in self.model_fields_set


def _json(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_json(item) for item in value]
    return value


@cache
def draft_model(model: type[BaseModel]) -> type[DraftSection]:
    """`model`'s fields, each optional: a required section becomes a draft section of its own (empty by default);
    any other field (a value, a list of the spec's models, an optional model) keeps its type and defaults to None."""
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            section = draft_model(annotation)
            fields[name] = (section, Field(default_factory=section, validation_alias=info.validation_alias))
        else:
            # A value's own check (a validator on its type, as `source.starting_offsets` has) applies in the draft.
            checks = [m for m in info.metadata if isinstance(m, BeforeValidator | AfterValidator)]
            kind = Annotated[(annotation, *checks)] if checks else annotation
            fields[name] = (kind | None, Field(default=None, validation_alias=info.validation_alias))
    return create_model(f"Draft{model.__name__}", __base__=DraftSection, **fields)


DraftSpec = draft_model(PipelineSpec)


def load_draft_spec(data: Mapping[str, Any] | None) -> DraftSection:
    """The draft's partial spec from its JSON. A value that no longer reads (written by an older version) is left
    out, and its step asks for it again."""
    raw = upgrade_spec(data) if isinstance(data, Mapping) else {}
    for _ in range(20):
        try:
            return DraftSpec.model_validate(raw)
        except ValidationError as exc:
            for error in exc.errors():
                logger.warning("draft spec: left out %s (%s)", ".".join(map(str, error["loc"])), error["msg"])
                _drop(raw, error["loc"])
    return DraftSpec()


def _drop(data: dict[str, Any], loc: tuple[Any, ...]) -> None:
    """Remove the value at `loc`, a pydantic error location (a bad list item takes its whole list)."""
    path = list(itertools.takewhile(lambda part: isinstance(part, str), loc))
    node: Any = data
    for part in path[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict) and path:
        node.pop(path[-1], None)


def complete_spec(spec: DraftSection, *, name: str, starting_offsets: str | None = None) -> dict[str, Any]:
    """The spec's JSON to check and save (without connection details, which the pipelines service merges in)."""
    complete = spec.model_copy(deep=True)
    if starting_offsets:
        complete.source.starting_offsets = starting_offsets
    data = complete.to_dict()
    return {**data, "version": version_for(data), "name": name}


def edit_draft_data(
    stored: Mapping[str, Any],
    *,
    kafka_connection_id: int,
    clickhouse_connection_id: int,
    name: str,
    accept_dead_letters: Sequence[str] = (),
    schema_registry_connection_id: int | None = None,
    topics_read: Sequence[str] = (),
) -> dict[str, Any]:
    """The first draft data for editing a pipeline: its stored spec (`PipelineVersion.stored_spec`, read as a
    draft, so that one today's rules refuse can be edited too) without the connection details, the fields
    whose dead letters were accepted (ticked again on the mapping step), and the topics it reads now (for a
    topic pattern: what the steps that read events sample until the topics step is saved again)."""
    partial = load_draft_spec(stored)
    database = partial.sink.clickhouse.database or "default"
    partial.unset("version")
    partial.unset("name")
    partial.source.kafka = type(partial.source.kafka)()
    partial.source.unset("schema_registry")  # from the pipeline's registry connection, as `kafka` is
    partial.sink.clickhouse = type(partial.sink.clickhouse)(database=database)
    field_of = {c.column: c.field for c in partial.sink.columns or []}
    return {
        SPEC_KEY: partial.to_dict(),
        "kafka": {"connection_id": kafka_connection_id},
        "topics": {"matched": list(topics_read)},
        "schema-registry": {"connection_id": schema_registry_connection_id},
        "clickhouse": {
            "connection_id": clickhouse_connection_id,
            "order_by": [field_of.get(column, column) for column in partial.sink.order_by or []],
        },
        "mapping": {"accept_dead_letters": sorted(accept_dead_letters)},
        "review": {"name": name},
    }
