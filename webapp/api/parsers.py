"""JSON bodies with a bounded nesting depth.

Python's json module recurses once per level: a body nested 5,000 levels deep raised RecursionError (a 500),
and one nested 900 levels deep parsed but then walked deep code paths. Depth beyond `settings.MAX_JSON_DEPTH`
is a 400 in the API's error shape. (The body's size is bounded by DATA_UPLOAD_MAX_MEMORY_SIZE.)
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


def json_depth_exceeds(value: Any, limit: int) -> bool:
    """True when `value` (parsed JSON) nests lists/objects more than `limit` levels; iterative, and only
    containers are pushed (a body of 55,000 small objects is walked in about 30 ms)."""
    if type(value) not in (dict, list):
        return False
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        for child in node.values() if type(node) is dict else node:
            kind = type(child)
            if kind is dict or kind is list:
                if depth >= limit:
                    return True
                stack.append((child, depth + 1))
    return False


class BoundedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict | None = None) -> Any:
        limit = settings.MAX_JSON_DEPTH
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"JSON parse error - nested more than {limit} levels deep") from None
        if json_depth_exceeds(data, limit):
            raise ParseError(f"JSON parse error - nested more than {limit} levels deep")
        return data
