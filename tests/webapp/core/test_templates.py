"""Template source checks that rendering alone would not flag."""

from __future__ import annotations

from pathlib import Path

import pytest

import webapp

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`

TEMPLATES = sorted(Path(webapp.__file__).parent.rglob("templates/**/*.html"))


def test_templates_are_found():
    assert len(TEMPLATES) > 20


def test_no_comment_spans_lines():
    """Django's `{# #}` ends at the line's end: a two-line one is printed on the page as text."""
    unclosed = [
        f"{path.relative_to(Path(webapp.__file__).parent)}:{number}"
        for path in TEMPLATES
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "{#" in line and "#}" not in line.split("{#", 1)[1]
    ]
    assert unclosed == [], "use {% comment %} for comments over several lines"
