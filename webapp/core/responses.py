"""Responses more than one app's pages send."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse


def json_attachment(data: Any, filename: str) -> HttpResponse:
    """`data` as an indented JSON file download named `filename` (characters other than letters, digits and
    `-_.` become `_`)."""
    response = HttpResponse(json.dumps(data, indent=2) + "\n", content_type="application/json")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in filename)
    response["Content-Disposition"] = f'attachment; filename="{safe}"'
    return response
