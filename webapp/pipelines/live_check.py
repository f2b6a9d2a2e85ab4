"""Validating a spec, and its live check off the web threads.

Without `check_live` a spec is checked on its own, at once. With it, the topics and the target table are asked,
the topics' recent rate read and their newest events sampled against the mapping: seconds against a slow broker,
so the worker does it (`webapp.connections.heavy_requests`, kind `live_check`, counted with the samples against
the caps) and the API client polls for the answer (`live_check_start`, then `heavy_request_get`).
"""

from __future__ import annotations

from typing import Any

from django.http import Http404

from webapp.connections import heavy_requests, topic_rate
from webapp.connections import selectors as connection_selectors
from webapp.connections.models import HeavyRequest
from webapp.core.exceptions import NotFoundError
from webapp.pipelines import selectors, services, state_size, type_fit
from webapp.pipelines.exactly_once_apis import validation_data

CONNECTION_FIELDS = {
    "kafka_connection": connection_selectors.kafka_connection_list,
    "clickhouse_connection": connection_selectors.clickhouse_connection_list,
    "schema_registry_connection": connection_selectors.schema_registry_connection_list,
}


def pipeline_check(
    *,
    check_live: bool,
    accept_dead_letters: list[str],
    events_per_second: float | None = None,
    unique_share: float | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Validate; with `check_live` (and both connections) also check a live sample of the topics. The expected
    dedup state: at the rate given, else (with `check_live`) at the topics' recent rate."""
    parsed = services.pipeline_validate(check_live=check_live, **kwargs)
    estimate = state_size.estimate_for(
        dedup=parsed.dedup,
        topics=topic_rate.topics_now(parsed.source, kwargs.get("kafka_connection")),
        kafka_connection=kwargs.get("kafka_connection"),
        events_per_second=events_per_second,
        unique_share=unique_share,
        ask_topic=check_live,
    )
    estimated_state, state_warnings = state_size.estimated_state_data(estimate)
    report = None
    if check_live and kwargs.get("kafka_connection") and kwargs.get("clickhouse_connection"):
        report = type_fit.sample_check_live(
            spec=parsed,
            kafka_connection=kwargs["kafka_connection"],
            accept_dead_letters=accept_dead_letters,
            schema_registry_connection=kwargs.get("schema_registry_connection"),
        )
    output = validation_data(parsed, clickhouse_connection=kwargs.get("clickhouse_connection"), check_live=check_live)
    output["warnings"] = [*output["warnings"], *state_warnings]
    return {**output, "estimated_state": estimated_state, "sample": report.to_dict() if report else None}


def spec_check(*, spec: Any, name: str | None = None, **connections: Any) -> None:
    """The spec checked on its own with the connections given (SpecError), as the live check's first step."""
    given = {key: connections[key] for key in CONNECTION_FIELDS if connections.get(key) is not None}
    services.pipeline_validate(spec=spec, name=name, check_live=False, **given)


def reads_systems(*, check_live: bool, kafka_connection: Any) -> bool:
    """Whether the check asks the systems (and so goes to the worker): a live check with a Kafka connection."""
    return bool(check_live and kafka_connection is not None)


def live_check_start(*, user: Any, data: dict[str, Any], pipeline: Any = None) -> HeavyRequest:
    """Send the live check to the worker. `data`: the validated input with the connections (objects); `pipeline`:
    the saved pipeline whose current spec is checked (its connections then), else `data["spec"]` is."""
    params: dict[str, Any] = {
        key: value for key, value in data.items() if key not in CONNECTION_FIELDS and value is not None
    }
    if pipeline is not None:
        params["pipeline"] = pipeline.pk
        connection, spec = pipeline.kafka_connection, pipeline.stored_spec
    else:
        params.update({key: data[key].pk for key in CONNECTION_FIELDS if data.get(key) is not None})
        connection, spec = data["kafka_connection"], data.get("spec")
    params["topics"] = _topics(spec)  # for the progress line
    return heavy_requests.heavy_request_start(
        kind=HeavyRequest.Kind.LIVE_CHECK, user=user, connection=connection, params=params
    )


def _topics(spec: Any) -> list[str]:
    source = spec.get("source") if isinstance(spec, dict) else None
    topics = source.get("topics") if isinstance(source, dict) else None
    return [str(topic) for topic in topics] if isinstance(topics, list) else []


def live_check_run(*, user: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The worker's side: the check as `pipeline_check` answers it, the connections and pipeline read again (one
    deleted since the request is a 404 in words)."""
    options = {
        key: params[key]
        for key in ("check_live", "accept_dead_letters", "events_per_second", "unique_share")
        if key in params
    }
    options.setdefault("accept_dead_letters", [])
    if params.get("pipeline") is not None:
        try:
            pipeline = selectors.pipeline_get(user=user, pk=params["pipeline"])
        except Http404:
            raise NotFoundError(f"The pipeline {params['pipeline']} no longer exists.") from None
        return pipeline_check(
            spec=pipeline.spec,
            kafka_connection=pipeline.kafka_connection,
            clickhouse_connection=pipeline.clickhouse_connection,
            schema_registry_connection=pipeline.schema_registry_connection,
            **options,
        )
    connections = {}
    for key, listing in CONNECTION_FIELDS.items():
        if params.get(key) is not None:
            connections[key] = listing(user=user).filter(pk=params[key]).first()
            if connections[key] is None:
                raise NotFoundError(f"The connection {params[key]} ({key}) no longer exists.")
    spec_input = {key: params[key] for key in ("spec", "name") if key in params}
    return pipeline_check(**spec_input, **connections, **options)
