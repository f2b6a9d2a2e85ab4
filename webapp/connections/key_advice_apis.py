"""`POST /api/v1/connections/kafka/{id}/dedup-analysis/`: key advice over the REST API."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from pydantic import ValidationError as PydanticValidationError
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from clearflow_spec.spec import DEDUP_WINDOWS, FieldSpec
from webapp.api.inputs import validated_input
from webapp.connections import heavy_request_apis, heavy_requests, key_advice, selectors
from webapp.connections.apis import KAFKA_TAG
from webapp.connections.models import HeavyRequest, KafkaConnection
from webapp.connections.throttle import count_connection_request
from webapp.workspaces import policy


def _field_path(value: str) -> str:
    try:
        FieldSpec(path=value, type="string")
    except PydanticValidationError as exc:
        raise serializers.ValidationError(str(exc.errors()[0]["msg"]).removeprefix("Value error, ")) from None
    return value


class DedupAnalysisInput(serializers.Serializer):
    topics = serializers.ListField(child=serializers.CharField(max_length=249), min_length=1, max_length=50)
    keys = serializers.ListField(
        child=serializers.CharField(max_length=255, validators=[_field_path]),
        max_length=10,
        default=list,
        help_text="The dedup key's field paths (all together make the key). Empty: only the candidates.",
    )
    time = serializers.ChoiceField(["ingestion", "event"], default="ingestion")
    event_time_field = serializers.CharField(
        max_length=255, allow_null=True, required=False, default=None, validators=[_field_path]
    )
    max_events = serializers.IntegerField(
        min_value=1, max_value=key_advice.MAX_EVENTS_LIMIT, default=key_advice.DEFAULT_MAX_EVENTS
    )
    time_budget_seconds = serializers.FloatField(
        min_value=0.5, max_value=key_advice.MAX_TIME_BUDGET, default=key_advice.DEFAULT_TIME_BUDGET
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["time"] == "event" and not attrs.get("event_time_field"):
            raise serializers.ValidationError({"event_time_field": "time 'event' needs the event-time field."})
        return attrs


class DelayOutput(serializers.Serializer):
    p50 = serializers.IntegerField()
    p99 = serializers.IntegerField()
    p999 = serializers.IntegerField()
    max = serializers.IntegerField()
    count = serializers.IntegerField(help_text="Duplicates whose delay is known.")


class HistogramBinOutput(serializers.Serializer):
    label = serializers.CharField()
    upper_ms = serializers.IntegerField(allow_null=True)
    count = serializers.IntegerField()


class KeyCandidateOutput(serializers.Serializer):
    field = serializers.CharField()
    events = serializers.IntegerField()
    missing = serializers.IntegerField()
    distinct = serializers.IntegerField()
    duplicates = serializers.IntegerField()
    duplicate_share = serializers.FloatField()
    differing = serializers.IntegerField(
        help_text="Duplicates whose payload differs from the first event with that value: different events merged."
    )
    uuid_like = serializers.BooleanField()


@extend_schema_serializer(deprecate_fields=["state_store"])
class DedupAnalysisOutput(serializers.Serializer):
    topics = serializers.ListField(child=serializers.CharField())
    keys = serializers.ListField(child=serializers.CharField())
    time = serializers.CharField()
    event_time_field = serializers.CharField(allow_null=True)
    max_events = serializers.IntegerField()
    planned = serializers.IntegerField(help_text="Events the scan set out to read.")
    scanned = serializers.IntegerField()
    distinct_keys = serializers.IntegerField()
    duplicates = serializers.IntegerField()
    duplicate_share = serializers.FloatField(help_text="duplicates / scanned, 0..1.")
    missing_keys = serializers.IntegerField()
    missing_time = serializers.IntegerField()
    not_json = serializers.IntegerField()
    span_ms = serializers.IntegerField(allow_null=True)
    delay_ms = DelayOutput(allow_null=True)
    histogram = HistogramBinOutput(many=True)
    recommended_window = serializers.ChoiceField([w for w, _ in DEDUP_WINDOWS], allow_null=True)
    window_is_lower_bound = serializers.BooleanField()
    reason = serializers.CharField()
    estimated_state_keys = serializers.IntegerField(
        allow_null=True, help_text="Keys the dedup state holds once the recommended window is full."
    )
    estimated_state_bytes = serializers.IntegerField(
        allow_null=True, help_text="Those keys' bytes on disk (the state is always in RocksDB, under the checkpoint)."
    )
    state_store = serializers.CharField(
        help_text="Deprecated, removed in ClearFlow 0.2.0: always `rocksdb`. The dedup state is always kept on disk "
        "in RocksDB; kept for clients of earlier versions. The size to plan for is in `estimated_state_keys` and "
        "`estimated_state_bytes`."
    )
    candidates = KeyCandidateOutput(many=True)
    complete = serializers.BooleanField(help_text="False: the time budget ran out; the figures cover what was read.")
    elapsed_ms = serializers.IntegerField()
    notes = serializers.ListField(child=serializers.CharField())


class KafkaDedupAnalysisApi(APIView):
    workspace_model = KafkaConnection
    workspace_actions = {"POST": policy.READ}  # measures a topic, changes nothing

    @extend_schema(
        tags=KAFKA_TAG,
        operation_id="kafka_dedup_analysis",
        request=DedupAnalysisInput,
        description=(
            "Ask for key advice: the worker reads up to `max_events` recent events of the topics (within "
            "`time_budget_seconds`) and measures the duplicates by `keys`: their share, the delay between an event "
            "and its duplicates, the smallest offered window covering 99.9% of those delays, the dedup state it "
            "implies, and key candidates. Nothing is committed. The answer is `202` with the `url` to GET for the "
            "result (`kafka_dedup_analysis_result`). At most `CLEARFLOW_HEAVY_REQUESTS_PER_USER` key-advice "
            "requests run at once per user (and `CLEARFLOW_HEAVY_REQUESTS_PER_WORKSPACE` per workspace): one more "
            "is a 429 in words."
        ),
        responses=heavy_request_apis.START_RESPONSES,
    )
    def post(self, request: Request, pk: int) -> Response:
        connection = selectors.kafka_connection_get(user=request.user, pk=pk)
        data = validated_input(DedupAnalysisInput, request.data)
        count_connection_request(connection.owner)
        heavy = heavy_requests.heavy_request_start(
            kind=HeavyRequest.Kind.KEY_ADVICE, user=request.user, connection=connection, params=data
        )
        return heavy_request_apis.accepted(request, heavy, "api:kafka-dedup-analysis-result")


class KafkaDedupAnalysisResultApi(APIView):
    workspace_model = KafkaConnection

    @extend_schema(
        tags=KAFKA_TAG,
        operation_id="kafka_dedup_analysis_result",
        description="The key advice asked for with `POST .../dedup-analysis/`: `202` while the worker reads the "
        "events (ask again after `Retry-After` seconds), then the figures, or the error the request met (e.g. 404 "
        "for a topic that does not exist, 502 for a broker that does not answer). Kept for 10 minutes after it ends.",
        responses=heavy_request_apis.accepted_responses(DedupAnalysisOutput, "The figures"),
    )
    def get(self, request: Request, pk: int, request_id: str) -> Response:
        selectors.kafka_connection_get(user=request.user, pk=pk)
        heavy = heavy_requests.heavy_request_get(user=request.user, pk=request_id, kind=HeavyRequest.Kind.KEY_ADVICE)
        return heavy_request_apis.answer(request, heavy, "api:kafka-dedup-analysis-result", DedupAnalysisOutput)
