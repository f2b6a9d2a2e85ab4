"""What can go wrong, as exceptions that carry the API's error paths, and the `clearflow` command's exit codes.

Every error has a `message` in plain words and `errors`, a list of `ErrorItem(path, message, where)`: `path` is the
API's path of the bad field (`spec.sink.columns[2].type`), `where` the file and document it came from when the
problem was found in a pipeline file. The class says what kind of problem it is, and `exit_code` what the command
exits with.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    OK = 0
    REFUSED = 1  # a refused spec or file, bad input, a conflict with the pipeline's state
    USAGE = 2  # an unknown option or command (argparse's own code)
    NOT_ALLOWED = 3  # no server or token configured, a token the server refuses (401), a read-only token (403)
    NOT_FOUND = 4  # no pipeline (or connection) of that name
    UNREACHABLE = 5  # the server cannot be reached, or failed (5xx), or Kafka/ClickHouse failed behind it (502)


@dataclass(frozen=True)
class ErrorItem:
    path: str
    message: str
    where: str = ""  # "pipelines/signups.yaml, document 2 (pipeline 'signups')" for problems in files

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message, **({"where": self.where} if self.where else {})}


class ClearFlowError(Exception):
    """Base class: `message`, `errors` (with paths), the API's `code` and HTTP `status` when it answered."""

    exit_code = ExitCode.REFUSED

    def __init__(
        self,
        message: str,
        *,
        errors: Iterable[ErrorItem] = (),
        code: str = "",
        status: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.errors = list(errors)
        self.code = code
        self.status = status
        self.extra = extra or {}

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"message": self.message, "errors": [e.to_dict() for e in self.errors]}
        if self.code:
            body["code"] = self.code
        if self.status is not None:
            body["status"] = self.status
        if self.extra:
            body["extra"] = self.extra
        return body


class RefusedError(ClearFlowError):
    """The server refused the request: bad input (400, each problem with its path) or a conflict (409)."""


class DocumentError(RefusedError):
    """Pipeline files with problems, found before anything was sent; nothing was applied."""


class NotConfiguredError(ClearFlowError):
    """No server URL or no token: set CLEARFLOW_URL and CLEARFLOW_TOKEN, or run `clearflow login`."""

    exit_code = ExitCode.NOT_ALLOWED


class NotAuthenticatedError(ClearFlowError):
    """The server does not accept the token (401): unknown, revoked or expired."""

    exit_code = ExitCode.NOT_ALLOWED


class PermissionDeniedError(ClearFlowError):
    """The token may not do this (403): a read-only token asked to change something."""

    exit_code = ExitCode.NOT_ALLOWED


class NotFoundError(ClearFlowError):
    """No such pipeline or connection (404, or no object of that name)."""

    exit_code = ExitCode.NOT_FOUND


class ServerUnreachableError(ClearFlowError):
    """The server did not answer: refused, unknown host, timed out."""

    exit_code = ExitCode.UNREACHABLE


class ServerError(ClearFlowError):
    """The server failed (5xx), or Kafka or ClickHouse failed behind it (502), or the answer was not ClearFlow's."""

    exit_code = ExitCode.UNREACHABLE


class PipelineFailedError(ClearFlowError):
    """A pipeline waited for (`--wait`) did not get there: it failed for good, or the wait timed out. What was
    asked of the server was done."""


class ApplyInterruptedError(ClearFlowError):
    """Applying stopped part-way (the server failed between two writes): `applied` says what was done. Applying
    the same files again finishes the work (apply is idempotent)."""

    def __init__(self, cause: ClearFlowError, applied: list[Any]) -> None:
        done = ", ".join(f"{o.kind} {o.name!r} {o.action}" for o in applied) or "nothing"
        super().__init__(
            f"{cause.message} Applied before that: {done}. Apply the files again to finish.",
            errors=cause.errors,
            code=cause.code,
            status=cause.status,
            extra=cause.extra,
        )
        self.exit_code = cause.exit_code
        self.cause = cause
        self.applied = applied
