import json

from django import template

register = template.Library()


@register.filter
def pretty_json(value):
    """A JSON value, indented for reading (escaped by the template like any text)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
