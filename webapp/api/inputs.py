"""Request bodies: every API view reads its input through one Input serializer with `validated_input`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import QueryDict
from rest_framework import serializers


def _wrong_json_types(serializer: serializers.Serializer, data: Any) -> dict[str, list[str]]:
    """Fields whose JSON type is not the schema's: DRF would turn 0 into "0", "1" into 1 and 0 into False."""
    if not isinstance(data, Mapping) or isinstance(data, QueryDict):
        return {}  # a query string carries only text: there DRF's conversion is what the caller means
    errors: dict[str, list[str]] = {}
    for name, field in serializer.fields.items():
        value = data.get(name)
        if value is None or field.read_only:
            continue
        if isinstance(field, serializers.CharField) and not isinstance(value, str):
            errors[name] = ["Not a valid string."]
        elif isinstance(field, serializers.BooleanField) and not isinstance(value, bool):
            errors[name] = ["Must be true or false."]
        elif isinstance(field, serializers.IntegerField) and (isinstance(value, bool) or not isinstance(value, int)):
            errors[name] = ["A valid integer is required."]
        elif (
            isinstance(field, serializers.ListField)
            and isinstance(field.child, serializers.CharField)
            and isinstance(value, list)
            and any(not isinstance(item, str) for item in value)
        ):
            errors[name] = ["Every item must be a string."]
    return errors


def validated_input(serializer_class: type[serializers.Serializer], data: Any, *, partial: bool = False) -> dict:
    """The serializer's validated data as a dict; a DRF ValidationError (400, field paths) when invalid."""
    serializer = serializer_class(data=data, partial=partial)
    if errors := _wrong_json_types(serializer, data):
        raise serializers.ValidationError(errors)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class NameQuery(serializers.Serializer):
    """`?name=`: a list narrowed to the object of that name (names are unique per owner), for clients that know
    their objects by name (pipeline files, `clearflow`)."""

    name = serializers.CharField(
        max_length=100, required=False, allow_blank=True, help_text="Only the one of this name (unique per owner)."
    )


class ConnectionListQuery(NameQuery):
    """`?search=`: the connections whose name or address (bootstrap servers, host, URL) contains the words."""

    search = serializers.CharField(
        max_length=100,
        required=False,
        allow_blank=True,
        help_text="Only those whose name or address (bootstrap servers, host, URL) contains this, in any case.",
    )
