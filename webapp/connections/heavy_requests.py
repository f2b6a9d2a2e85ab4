"""Key advice, samples, schema inference and the live check of a spec off the web threads: the request is
recorded, the worker reads the events, and the page or the API client asks for the answer until it is there.

Reading up to 50,000 events of a topic takes seconds to tens of seconds; on a web thread, a few such requests in
parallel held every thread of the web app. `heavy_request_start` checks the caps on what runs at once
(`HEAVY_REQUESTS_PER_USER` and `HEAVY_REQUESTS_PER_WORKSPACE`; key advice counted apart from the requests that
sample the topics, which count together; 429 in words past either), records a `HeavyRequest` and, on commit,
sends it to the worker (`queue.heavy_request_run`, the default queue). The worker's task calls
`heavy_request_run`, which moves it queued -> running -> done (the answer kept as JSON) or failed (the error as
the API would have answered it), each step a compare-and-set so that a task delivered twice reads the events
once. `heavy_request_get` is what the poll reads; an ended request is kept for `HEAVY_REQUEST_KEEP_SECONDS`, and
one the worker never finished stops counting against the caps after `HEAVY_REQUEST_STALE_SECONDS`.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.http import Http404
from django.utils import timezone

from clearflow_spec.spec import SpecError
from webapp.api.exception_handlers import SPEC_INVALID, flatten_errors, spec_path
from webapp.connections import key_advice, selectors
from webapp.connections.models import HeavyRequest, KafkaConnection
from webapp.core import queue
from webapp.core.exceptions import ApplicationError, NotFoundError, TooManyRequestsError
from webapp.workspaces.models import Workspace

Kind = HeavyRequest.Kind
Status = HeavyRequest.Status
ENDED = (Status.DONE, Status.FAILED)
# The kinds counted together against the caps, and how the caps' messages name them: a sample, a schema inferred
# from one and a spec's live check all read a sample of the topics.
SAMPLING = (Kind.SAMPLE, Kind.INFER_SCHEMA, Kind.LIVE_CHECK)
CAPPED_TOGETHER = {Kind.KEY_ADVICE: (Kind.KEY_ADVICE,), **{kind: SAMPLING for kind in SAMPLING}}
KIND_WORDS = {
    Kind.KEY_ADVICE: "key-advice requests",
    **{kind: "sample requests (samples, schema inference, live checks)" for kind in SAMPLING},
}


def heavy_request_start(
    *, kind: str, user: Any, connection: KafkaConnection, params: dict[str, Any], page: str = ""
) -> HeavyRequest:
    """Record the request and send it to the worker; TooManyRequestsError when `user`, or the connection's
    workspace, already has the most requests of this kind running at once. `page`: the page that asks (e.g. a
    wizard draft's step); its requests of this kind that no worker has taken yet are dropped first, since a page
    that asks anew no longer wants them."""
    with transaction.atomic():
        # Locked in this order everywhere (webapp.pipelines.quotas): two requests counted at once see each other.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        Workspace.objects.select_for_update().filter(pk=connection.workspace_id).first()
        _prune()
        if page:
            params = {**params, "page": page}
            HeavyRequest.objects.filter(user=user, kind=kind, status=Status.QUEUED, params__page=page).update(
                status=Status.FAILED,
                progress="",
                error=_error(ApplicationError("Replaced by a newer request before it was read.")),
                finished=timezone.now(),
            )
        running = HeavyRequest.objects.filter(
            kind__in=CAPPED_TOGETHER[Kind(kind)],
            status__in=(Status.QUEUED, Status.RUNNING),
            created__gte=timezone.now() - timedelta(seconds=settings.HEAVY_REQUEST_STALE_SECONDS),
        )
        words = KIND_WORDS[Kind(kind)]
        mine = running.filter(user=user).count()
        if mine >= settings.HEAVY_REQUESTS_PER_USER:
            raise TooManyRequestsError(
                f"{mine} {words} already run for you; wait for one to finish "
                "(at most CLEARFLOW_HEAVY_REQUESTS_PER_USER at once).",
                extra={"retry_after": 5},
            )
        theirs = running.filter(workspace_id=connection.workspace_id).count()
        if theirs >= settings.HEAVY_REQUESTS_PER_WORKSPACE:
            raise TooManyRequestsError(
                f"{theirs} {words} already run in this workspace; wait for one to finish "
                "(at most CLEARFLOW_HEAVY_REQUESTS_PER_WORKSPACE at once).",
                extra={"retry_after": 5},
            )
        request = HeavyRequest(
            id=uuid.uuid4(),
            kind=kind,
            user=user,
            workspace_id=connection.workspace_id,
            connection=connection,
            params=params,
            progress="Waiting for a worker to read the events.",
        )
        request.full_clean()
        request.save()
        transaction.on_commit(lambda: _send(request))
    return request


def _send(request: HeavyRequest) -> None:
    if not queue.heavy_request_run(request_id=str(request.pk)):
        _end(
            request,
            Status.QUEUED,
            error=_error(
                ApplicationError("The worker could not be reached, so the events were not read: try again shortly.")
            ),
        )


def heavy_request_get(*, user: Any, pk: Any, kind: str) -> HeavyRequest:
    """The user's request of that kind (Http404 for anyone else's, an unknown or a pruned one)."""
    try:
        pk = uuid.UUID(str(pk))
    except ValueError:
        raise Http404("No such request: it was never made by you, or it ended long ago.") from None
    found = HeavyRequest.objects.filter(pk=pk, user=user, kind=kind).first()
    if found is None:
        raise Http404("No such request: it was never made by you, or it ended long ago.")
    return found


def heavy_request_run(*, request_id: str) -> None:
    """Read the events and keep the answer (the worker's task). A request already taken does nothing."""
    taken = HeavyRequest.objects.filter(pk=request_id, status=Status.QUEUED).update(
        status=Status.RUNNING, progress=_progress_words(request_id)
    )
    if not taken:
        return
    request = HeavyRequest.objects.select_related("connection").get(pk=request_id)
    try:
        result = RUNNERS[Kind(request.kind)](request)
    except (ApplicationError, ValidationError, SpecError) as exc:
        _end(request, Status.RUNNING, error=_error(exc))
        return
    except Exception:
        _end(request, Status.RUNNING, error=_error(ApplicationError("The events could not be read (an error).")))
        raise
    _end(request, Status.RUNNING, result=result)


def _end(request: HeavyRequest, expected: str, *, result: Any = None, error: dict | None = None) -> None:
    HeavyRequest.objects.filter(pk=request.pk, status=expected).update(
        status=Status.FAILED if error else Status.DONE,
        result_json="" if result is None else json.dumps(result, cls=DjangoJSONEncoder),
        error=error,
        progress="",
        finished=timezone.now(),
    )


def _error(exc: Exception) -> dict[str, Any]:
    """The failure as the API answers it (`webapp.api.exception_handlers`), to be answered at the poll."""
    if isinstance(exc, SpecError):
        errors = [{"path": spec_path(issue.path), "message": issue.message} for issue in exc.errors]
        extra = getattr(exc, "extra", None) or {}
        return {"status_code": 400, "code": "invalid_spec", "message": SPEC_INVALID, "errors": errors, "extra": extra}
    if isinstance(exc, ApplicationError):
        return {"status_code": exc.status_code, "code": exc.code, "message": exc.message, "extra": exc.extra}
    if isinstance(exc, ValidationError):
        errors = flatten_errors(exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
        message = errors[0]["message"] if errors else "Invalid."
        return {"status_code": 400, "code": "invalid", "message": message, "errors": errors, "extra": {}}
    return {"status_code": 400, "code": "invalid", "message": str(exc), "extra": {}}


def _prune() -> None:
    keep = timezone.now() - timedelta(seconds=settings.HEAVY_REQUEST_KEEP_SECONDS)
    HeavyRequest.objects.filter(created__lt=keep - timedelta(seconds=settings.HEAVY_REQUEST_STALE_SECONDS)).delete()
    HeavyRequest.objects.filter(status__in=ENDED, finished__lt=keep).delete()


def _progress_words(request_id: str) -> str:
    request = HeavyRequest.objects.filter(pk=request_id).values("kind", "params").first() or {}
    params = request.get("params") or {}
    topics = ", ".join(params.get("topics") or [])
    if request.get("kind") == Kind.KEY_ADVICE:
        events = params.get("max_events", key_advice.DEFAULT_MAX_EVENTS)
        return f"Reading up to {events:,} recent events of {topics} and counting their duplicates."
    if request.get("kind") == Kind.LIVE_CHECK:
        return "Checking the topics and the target table, and sampling the newest events against the mapping."
    if params.get("span"):
        return f"Reading up to {params.get('count', 20)} events of {topics} written at the time of the first sample."
    return f"Reading up to {params.get('count', 20)} {params.get('position', 'newest')} events of {topics}."


# -- what each kind does --------------------------------------------------------------------------------------


def _key_advice(request: HeavyRequest) -> dict[str, Any]:
    params = request.params
    analysis = key_advice.analyze_duplicates(
        request.connection.client_settings(),
        topics=params["topics"],
        keys=params.get("keys") or [],
        time_basis=params.get("time", "ingestion"),
        event_time_field=params.get("event_time_field"),
        max_events=params.get("max_events", key_advice.DEFAULT_MAX_EVENTS),
        time_budget=params.get("time_budget_seconds", key_advice.DEFAULT_TIME_BUDGET),
    )
    return dataclasses.asdict(analysis)


def _sample(request: HeavyRequest) -> dict[str, Any]:
    """The events (without their bytes), and with a schema registry the schema the fields come from and the
    versions the sample used; `framed`: how many values are in the Confluent wire format (Avro read as JSON).
    Asked for a `span` ({"start_ms", "end_ms"}), the events written within it, or when it holds none the
    `position` ones instead; the answer's `span` says how many it held (`found`)."""
    from clearflow_spec.avro_schema import wire_schema_id

    params = request.params
    registry_id = params.get("schema_registry_connection")
    registry = _registry_of(request, registry_id) if registry_id is not None else None
    sampled = {
        "topics": params["topics"],
        "count": params.get("count", 20),
        "position": params.get("position", "newest"),
    }

    def read(span: tuple[int, int] | None) -> tuple[list[Any], str | None, list[dict[str, Any]]]:
        if registry is None:
            return selectors.kafka_event_sample(connection=request.connection, **sampled, span=span), None, []
        sample = selectors.avro_event_sample(
            connection=request.connection, schema_registry_connection=registry, **sampled, span=span
        )
        return sample.events, sample.schema, [vars(used) for used in sample.used]

    span = params.get("span")
    events, schema, versions = read((span["start_ms"], span["end_ms"]) if span else None)
    found = None if span is None else {**span, "found": len(events)}
    if span is not None and not events:
        events, schema, versions = read(None)
    return {
        "events": [{k: v for k, v in dataclasses.asdict(event).items() if k != "raw"} for event in events],
        "schema": schema,
        "versions": versions,
        "framed": sum(1 for event in events if wire_schema_id(event.raw) is not None),
        "span": found,
    }


def _infer_schema(request: HeavyRequest) -> dict[str, Any]:
    """The fields of a sample: from its values, or with a schema registry from the newest schema it used."""
    params = request.params
    sampled = {
        "topics": params["topics"],
        "count": params.get("count", 20),
        "position": params.get("position", "newest"),
    }
    registry_id = params.get("schema_registry_connection")
    if registry_id is None:
        events = selectors.kafka_event_sample(connection=request.connection, **sampled)
        fields = selectors.schema_infer(values=[event.value for event in events])
        return {"sampled": len(events), "fields": [dataclasses.asdict(field) for field in fields]}
    registry = _registry_of(request, registry_id)
    sample = selectors.avro_event_sample(connection=request.connection, schema_registry_connection=registry, **sampled)
    if sample.schema is None:
        raise NotFoundError(
            f"The schema registry has no Avro schema for {', '.join(s.subject for s in sample.subjects)}, "
            "and no sampled event could be decoded."
        )
    fields = selectors.schema_infer(values=sample.decoded_values, avro_schema=sample.schema)
    return {
        "sampled": len(sample.events),
        "fields": [dataclasses.asdict(field) for field in fields],
        "schema_versions": [vars(used) for used in sample.used],
        "undecodable": sample.undecodable,
    }


def _registry_of(request: HeavyRequest, registry_id: int) -> Any:
    try:
        return selectors.schema_registry_connection_get(user=request.user, pk=registry_id)
    except Http404:  # deleted since the request was made
        raise NotFoundError(f"The schema registry connection {registry_id} no longer exists.") from None


def _live_check(request: HeavyRequest) -> dict[str, Any]:
    from webapp.pipelines.live_check import live_check_run  # the pipelines app builds on the connections

    return live_check_run(user=request.user, params=request.params)


RUNNERS = {
    Kind.KEY_ADVICE: _key_advice,
    Kind.SAMPLE: _sample,
    Kind.INFER_SCHEMA: _infer_schema,
    Kind.LIVE_CHECK: _live_check,
}
