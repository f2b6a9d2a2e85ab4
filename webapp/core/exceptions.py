"""Errors that services raise for the API and the wizard to show (HackSoft's `ApplicationError`).

`ApplicationError` is for a request that is well-formed but cannot be carried out (a broker that does not
answer, a pipeline that must be stopped first). Bad field values raise Django's `ValidationError`; a bad
pipeline spec raises `clearflow_spec.spec.SpecError`. The API's one exception handler maps all three to one
JSON shape (`webapp.api.exception_handlers`).
"""

from __future__ import annotations

from typing import Any


class ApplicationError(Exception):
    """A service could not do what was asked; `message` is written for the user, `extra` is JSON-able.

    `status_code` is what the API answers (400 unless a subclass says otherwise: 409 for a state conflict,
    502 for an external system that failed).
    """

    status_code = 400
    code = "application_error"

    def __init__(self, message: str, *, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra or {}


class ConflictError(ApplicationError):
    """The object is not in a state that allows the action (e.g. deleting a running pipeline)."""

    status_code = 409
    code = "conflict"


class NotFoundError(ApplicationError):
    """Something named in the request does not exist outside our database (a topic, a table)."""

    status_code = 404
    code = "not_found"


class ExternalServiceError(ApplicationError):
    """Kafka or ClickHouse refused or did not answer in time; the message says why, in plain words."""

    status_code = 502
    code = "external_service_error"


class TooManyRequestsError(ApplicationError):
    """The user did this too often; `extra["retry_after"]` says in how many seconds to try again."""

    status_code = 429
    code = "throttled"
