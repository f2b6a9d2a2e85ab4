"""The REST API over HTTP: one session, the token in a header, every failure turned into a `clearflow.errors` class.

The API answers errors in one JSON shape, `{"code", "message", "errors": [{"path", "message"}]}`; its paths
(`spec.sink.columns[2].type`) are kept as they are, so a refused spec reads the same here as in the API.

What reads many events (a sample, inferred fields, a spec's live check) is done by the server's worker: the API
answers `202 Accepted` with the URL of the answer (`Location`), and `Api` asks it, every `Retry-After` seconds,
until the answer (or its error) is there, so that callers see the answer as if it had come at once.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

import requests

from clearflow._version import __version__
from clearflow.config import API_PREFIX, Settings
from clearflow.errors import (
    ClearFlowError,
    ErrorItem,
    NotAuthenticatedError,
    NotFoundError,
    PermissionDeniedError,
    RefusedError,
    ServerError,
    ServerUnreachableError,
)

DEFAULT_TIMEOUT = 30.0  # seconds, for one HTTP request
# How long an accepted request's answer is waited for: the server's worker may first finish other requests.
ACCEPTED_WAIT_SECONDS = 300.0


class Api:
    """`get`, `post`, `patch`, `delete` on paths under /api/v1 (e.g. "/pipelines/"), returning the parsed JSON."""

    def __init__(self, settings: Settings, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.settings = settings
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers.update(
            {
                "Authorization": f"Token {settings.token}",
                "Accept": "application/json",
                "User-Agent": f"clearflow/{__version__}",
            }
        )

    @property
    def url(self) -> str:
        return self.settings.url

    def close(self) -> None:
        self.session.close()

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        return self._request("GET", path, params=params)

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return self._request("POST", path, json=body if body is not None else {})

    def patch(self, path: str, body: dict[str, Any]) -> Any:
        return self._request("PATCH", path, json=body)

    def delete(self, path: str, params: dict[str, Any] | None = None) -> Any:
        return self._request("DELETE", path, params=params)

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._send(method, f"{self.settings.url}{API_PREFIX}{path}", **kwargs)
        if response.status_code == 202 and response.headers.get("Location"):
            response = self._follow(response)
        if response.ok:
            return response.json() if response.content else None
        raise error_from_response(response, server=self.settings.url)

    def _follow(self, accepted: requests.Response) -> requests.Response:
        """The answer at the URL a `202 Accepted` names, asked until it is no longer 202."""
        deadline = time.monotonic() + ACCEPTED_WAIT_SECONDS
        response = accepted
        while response.status_code == 202 and response.headers.get("Location"):
            if time.monotonic() > deadline:
                progress = _progress(response)
                raise ServerUnreachableError(
                    f"ClearFlow at {self.settings.url} accepted the request but had no answer after "
                    f"{ACCEPTED_WAIT_SECONDS:.0f} s{f' ({progress})' if progress else ''}: is its worker running?"
                )
            time.sleep(_retry_after(response))
            # Asked of the configured server whatever host the URL names: the token goes nowhere else.
            server, location = urlsplit(self.settings.url), urlsplit(response.headers["Location"])
            response = self._send("GET", location._replace(scheme=server.scheme, netloc=server.netloc).geturl())
        return response

    def _send(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        try:
            return self.session.request(method, url, timeout=self.timeout, **kwargs)
        except requests.Timeout:
            raise ServerUnreachableError(
                f"ClearFlow at {self.settings.url} did not answer within {self.timeout:.0f} s."
            ) from None
        except requests.RequestException as exc:
            raise ServerUnreachableError(
                f"cannot reach ClearFlow at {self.settings.url} ({_reason(exc)}). Is the server running, and is "
                "the URL right (CLEARFLOW_URL, or `clearflow login`)?"
            ) from None


def _retry_after(response: requests.Response) -> float:
    """The seconds the server asks to wait (Retry-After), between 0.2 and 10."""
    try:
        return min(max(float(response.headers.get("Retry-After", "1")), 0.2), 10.0)
    except ValueError:
        return 1.0


def _progress(response: requests.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return ""
    return str(body.get("progress", "")) if isinstance(body, dict) else ""


def _reason(exc: requests.RequestException) -> str:
    """The innermost cause in a few words ("Connection refused", "Name or service not known")."""
    cause: BaseException | None = exc
    while cause is not None and (cause.__cause__ or cause.__context__) is not None:
        cause = cause.__cause__ or cause.__context__
    text = str(cause or exc)
    return text.split("] ", 1)[-1].rstrip(")'\"") if "]" in text else text


_BY_STATUS: dict[int, type[ClearFlowError]] = {
    400: RefusedError,
    401: NotAuthenticatedError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: RefusedError,
    413: RefusedError,
    415: RefusedError,
    429: RefusedError,
}


def error_from_response(response: requests.Response, *, server: str) -> ClearFlowError:
    """The exception for an API error answer, with the API's message and paths."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict) or "message" not in body:
        return ServerError(
            f"{server} answered {response.status_code} {response.reason} without ClearFlow's error body: is it "
            "the ClearFlow web app?",
            status=response.status_code,
        )
    errors = [
        ErrorItem(str(item.get("path", "")), str(item.get("message", "")))
        for item in body.get("errors") or []
        if isinstance(item, dict)
    ]
    if errors and errors[0].path == "" and errors[0].message == body["message"] and len(errors) == 1:
        errors = []  # the message says it all
    cls = _BY_STATUS.get(response.status_code, ServerError if response.status_code >= 500 else RefusedError)
    message = str(body["message"])
    if response.status_code == 401:
        message += (
            " The token is unknown, revoked or expired: create one on the web app's API tokens page (/account/tokens/)."
        )
    return cls(
        message,
        errors=errors,
        code=str(body.get("code", "")),
        status=response.status_code,
        extra=body.get("extra") if isinstance(body.get("extra"), dict) else None,
    )
