"""Template filters for nested field types: the parts of a field's type as an indented tree."""

from __future__ import annotations

from typing import Any

from django import template

from clearflow_spec.field_types import FIELD_TYPES, field_type_shape
from clearflow_spec.nested_types import shape_tree

register = template.Library()


@register.filter
def type_tree(field_type: Any) -> list[dict[str, Any]]:
    """The parts below a nested type (an array's element `[]`, a map's values `{}`, a struct's members), each with
    its depth; empty for a scalar type or text that is not a type."""
    if not isinstance(field_type, str) or field_type in FIELD_TYPES:
        return []
    try:
        shape = field_type_shape(field_type)
    except ValueError:
        return []
    return [{"depth": depth, "name": name, "type": text} for depth, name, text in shape_tree(shape)]


@register.filter
def is_listed_type(field_type: Any) -> bool:
    """Whether the type is one of the scalar types the type list offers."""
    return field_type in FIELD_TYPES
