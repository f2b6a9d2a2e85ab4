"""Request bodies: every API view reads its input through one Input serializer with `validated_input`."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


def validated_input(serializer_class: type[serializers.Serializer], data: Any, *, partial: bool = False) -> dict:
    """The serializer's validated data as a dict; a DRF ValidationError (400, field paths) when invalid."""
    serializer = serializer_class(data=data, partial=partial)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)
