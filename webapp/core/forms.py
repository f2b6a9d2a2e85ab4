"""Form helpers the pages of more than one app use."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError


def add_validation_errors(form: Any, error: ValidationError) -> None:
    """Put a service's ValidationError next to the form's fields (unknown keys become form errors)."""
    if hasattr(error, "error_dict"):
        for name, messages in error.message_dict.items():
            form.add_error(name if name in form.fields else None, messages)
    else:
        form.add_error(None, error.messages)
