"""The pages a person sees when a page is not there (404) or not theirs to use (403, a form refused by the CSRF
check): ClearFlow's header, what happened in words, and a way back. API paths answer in JSON instead
(`webapp.api.fallbacks`, which hands every other path to these)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import Resolver404
from django.utils.http import url_has_allowed_host_and_scheme

# What Django's get_object_or_404 says ("No WizardDraft matches the given query."): a class name, not words.
_QUERY_MESSAGE_END = "matches the given query."


def _message(exception: Exception | None) -> str:
    """The words the code raised the exception with ("No such pipeline."), or ""."""
    if exception is None or not exception.args:
        return ""
    message = exception.args[0]
    if not isinstance(message, str) or message.endswith(_QUERY_MESSAGE_END):
        return ""
    return message


def _back(request: HttpRequest) -> str:
    """The page the person came from on this site (the way back), or ""."""
    referer = request.META.get("HTTP_REFERER", "")
    if referer and url_has_allowed_host_and_scheme(
        referer, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return referer
    return ""


def _page(
    request: HttpRequest, status: int, heading: str, reason: str, explanation: str, detail: str = ""
) -> HttpResponse:
    context = {
        "status": status,
        "heading": heading,
        "reason": reason,
        "explanation": explanation,
        "detail": detail,
        "back": _back(request),
    }
    return render(request, "error_page.html", context, status=status)


def not_found_page(request: HttpRequest, exception: Exception | None) -> HttpResponse:
    if isinstance(exception, Resolver404):
        reason = f"There is no page at {request.path}."
    else:
        gone = f"Nothing of yours is at {request.path}: it was deleted, or it is another user's."
        reason = _message(exception) or gone
    return _page(
        request,
        404,
        "Not found",
        reason,
        "A link can outlive what it points to: a pipeline, connection or alert may have been deleted, and a "
        "wizard's draft ends once its pipeline is saved. Each user sees only their own.",
    )


def permission_denied_page(request: HttpRequest, exception: Exception | None) -> HttpResponse:
    return _page(
        request,
        403,
        "Not allowed",
        _message(exception) or "Your account may not open this page.",
        "Ask an administrator if you need it.",
    )


def csrf_failure_page(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A form sent without the page's valid security token: usually a page left open across a new login."""
    return _page(
        request,
        403,
        "The form was not sent",
        "It did not carry this session's security token. That happens when the page was opened before you "
        "logged in again, or when the browser blocks cookies.",
        "Nothing was changed. Go back, reload the page and send the form again.",
        detail=reason,
    )
