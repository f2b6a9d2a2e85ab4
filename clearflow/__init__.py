"""ClearFlow's Python SDK and the `clearflow` command: pipelines as code, applied idempotently.

    from clearflow import Client

    client = Client()  # CLEARFLOW_URL and CLEARFLOW_TOKEN, or what `clearflow login` stored
    result = client.apply("pipelines/", deploy=True)
    print(client.status("signups").rows_per_second)

Pipeline files (YAML or JSON) hold `kind: pipeline` documents, whose `spec` is the pipeline spec of
`clearflow_spec.spec` (the server's own model, so a mistake is caught here with the path and message the API
gives), and the connections they use (`kind: kafka-connection`, `kind: clickhouse-connection`, and
`kind: schema-registry-connection` for Avro), with secrets as `${ENV_VAR}` references. See docs/cli.md.
"""

from __future__ import annotations

from clearflow._version import __version__
from clearflow.client import Client
from clearflow.errors import (
    ApplyInterruptedError,
    ClearFlowError,
    DocumentError,
    ErrorItem,
    ExitCode,
    NotAuthenticatedError,
    NotConfiguredError,
    NotFoundError,
    PermissionDeniedError,
    PipelineFailedError,
    RefusedError,
    ServerError,
    ServerUnreachableError,
)

__all__ = [
    "ApplyInterruptedError",
    "ClearFlowError",
    "Client",
    "DocumentError",
    "ErrorItem",
    "ExitCode",
    "NotAuthenticatedError",
    "NotConfiguredError",
    "NotFoundError",
    "PermissionDeniedError",
    "PipelineFailedError",
    "RefusedError",
    "ServerError",
    "ServerUnreachableError",
    "__version__",
]
