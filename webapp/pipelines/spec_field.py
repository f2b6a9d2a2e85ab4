"""`PipelineVersion.spec`: a `PipelineSpec` kept in a JSON column.

The column holds `PipelineSpec.to_dict()` (secrets masked: the connections keep the real ones). Reading loads
the JSON through `load_spec`: `upgrade_spec` first (what older versions stored, in today's words: the one place
for such upgrades), then `parse_spec`. The value is parsed when it is first read, not when the row is fetched, so
a row that today's rules refuse can still be listed and shown (`PipelineVersion.stored_spec`); reading its
`spec` raises `SpecError`, which says what to fix.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from django.db import models
from django.db.models.query_utils import DeferredAttribute

from clearflow_spec.spec import OLD_INSERT_DEDUP_WINDOW, PipelineSpec, parse_spec

# Kafka settings renamed within spec version 1 (old name -> name), read from stored specs and drafts.
_OLD_KAFKA_NAMES = {"username": "sasl_username", "password": "sasl_password"}


def upgrade_spec(data: Mapping[str, Any]) -> dict[str, Any]:
    """A stored spec (or a draft's partial spec) in today's words: the renames since it was written applied.
    Version 1 is the only version so far; a version 2 would be converted here too."""
    upgraded = copy.deepcopy(dict(data))
    source, sink = upgraded.get("source"), upgraded.get("sink")
    kafka = source.get("kafka") if isinstance(source, dict) else None
    if isinstance(kafka, dict):
        for old, new in _OLD_KAFKA_NAMES.items():
            if old in kafka and new not in kafka:
                kafka[new] = kafka.pop(old)
    if isinstance(sink, dict) and OLD_INSERT_DEDUP_WINDOW in sink and "insert_dedup_window" not in sink:
        sink["insert_dedup_window"] = sink.pop(OLD_INSERT_DEDUP_WINDOW)
    return upgraded


def load_spec(data: Mapping[str, Any]) -> PipelineSpec:
    """A stored spec, upgraded and parsed. SpecError when today's rules refuse it."""
    return parse_spec(upgrade_spec(data))


def stored_json(value: PipelineSpec | Mapping[str, Any]) -> dict[str, Any]:
    """What the column holds for `value`."""
    return value.to_dict() if isinstance(value, PipelineSpec) else dict(value)


class _SpecAttribute(DeferredAttribute):
    """Reads the column as a `PipelineSpec`, parsed on first read and kept on the instance. A data descriptor
    (it has `__set__`), so that reads come here even though the row's value sits in the instance's `__dict__`."""

    def __set__(self, instance: Any, value: Any) -> None:
        instance.__dict__[self.field.attname] = value

    def __get__(self, instance: Any, cls: Any = None) -> Any:
        value = super().__get__(instance, cls)
        if instance is None or value is None or isinstance(value, PipelineSpec):
            return value
        parsed = load_spec(value)
        instance.__dict__[self.field.attname] = parsed
        return parsed


class PipelineSpecField(models.JSONField):
    """A `PipelineSpec` stored as its JSON (`to_dict()`, secrets masked) and loaded through `load_spec`."""

    descriptor_class = _SpecAttribute

    def get_prep_value(self, value: Any) -> Any:
        return super().get_prep_value(value.to_dict() if isinstance(value, PipelineSpec) else value)

    def validate(self, value: Any, model_instance: Any) -> None:
        super().validate(value.to_dict() if isinstance(value, PipelineSpec) else value, model_instance)

    def value_from_object(self, obj: Any) -> Any:
        """The stored JSON (for forms, the admin and serializers), also for a row today's rules refuse."""
        value = obj.__dict__.get(self.attname)
        return None if value is None else stored_json(value)
