"""REST API for watching a pipeline: its metrics over time and its dead letters (browse, download, replay,
purge). Owner only: someone else's pipeline is a 404, as everywhere."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from spark_jobs.metrics import timestamp_ms
from webapp.api.errors import ERROR_RESPONSES, error_responses
from webapp.api.inputs import validated_input
from webapp.pipelines import dead_letters, metrics_history, selectors
from webapp.pipelines.metrics import MetricsUnavailableError
from webapp.pipelines.models import Pipeline
from webapp.workspaces import policy

METRICS_TAG = ["Pipeline metrics"]
DEAD_LETTER_TAG = ["Dead letters"]


class SinceField(serializers.CharField):
    """An ISO 8601 time or unix milliseconds, as unix milliseconds."""

    def to_internal_value(self, data: object) -> int:
        text = super().to_internal_value(data).strip()
        if text.lstrip("-").isdigit():
            return int(text)
        at_ms = timestamp_ms(text)
        if at_ms is None:
            raise serializers.ValidationError("Give an ISO 8601 time (2026-11-23T10:00:00Z) or unix milliseconds.")
        return at_ms


class MetricsQuery(serializers.Serializer):
    since = SinceField(
        required=False,
        help_text="Only batches that started after this time (ISO 8601 or unix ms); "
        "poll with the previous answer's `next_since`. Without it: the newest `limit` batches.",
    )
    limit = serializers.IntegerField(
        required=False, min_value=1, max_value=metrics_history.MAX_LIMIT, default=metrics_history.DEFAULT_LIMIT
    )


class MetricsRecordOutput(serializers.Serializer):
    batch_id = serializers.IntegerField()
    timestamp = serializers.CharField(help_text="ISO 8601 UTC start of the micro-batch.")
    t_ms = serializers.IntegerField(help_text="The same time in unix milliseconds.")
    input_rows = serializers.IntegerField()
    input_rows_per_second = serializers.FloatField()
    processed_rows_per_second = serializers.FloatField()
    duplicates_dropped = serializers.IntegerField()
    duplicate_share = serializers.FloatField(help_text="duplicates_dropped / input_rows (0 when nothing came in).")
    rows_written = serializers.IntegerField()
    dead_letters = serializers.IntegerField()
    filtered_out = serializers.IntegerField()
    batch_duration_ms = serializers.IntegerField()
    lag = serializers.DictField(
        child=serializers.DictField(child=serializers.IntegerField()),
        help_text="{topic: {partition: records behind the latest offset}}",
    )
    total_lag = serializers.IntegerField()
    state_rows = serializers.IntegerField(required=False)
    insert_ms_max = serializers.IntegerField(required=False)


class MetricsTotalsOutput(serializers.Serializer):
    input_rows = serializers.IntegerField()
    duplicates_dropped = serializers.IntegerField()
    rows_written = serializers.IntegerField()
    dead_letters = serializers.IntegerField()
    filtered_out = serializers.IntegerField()
    batches = serializers.IntegerField()
    since = serializers.CharField(allow_null=True, help_text="Start of the first batch counted.")


class MetricsHistoryOutput(serializers.Serializer):
    records = MetricsRecordOutput(many=True)
    totals = MetricsTotalsOutput()
    has_more = serializers.BooleanField(help_text="More batches after the last one returned.")
    next_since = serializers.IntegerField(allow_null=True)
    retention = serializers.DictField(child=serializers.IntegerField())


class PipelineMetricsApi(APIView):
    workspace_model = Pipeline

    @extend_schema(
        tags=METRICS_TAG,
        operation_id="pipelines_metrics",
        description=(
            "The job's per-batch metrics, oldest first, and running totals (dead letters included). Kept in Redis "
            "for the last `retention.max_records` batches and at most `retention.max_age_seconds`."
        ),
        parameters=[MetricsQuery],
        responses={200: MetricsHistoryOutput, **ERROR_RESPONSES},
    )
    def get(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        query = validated_input(MetricsQuery, request.query_params)
        history = metrics_history.pipeline_metrics_history(
            pipeline=pipeline, since_ms=query.get("since"), limit=query["limit"]
        )
        return Response(MetricsHistoryOutput(history).data)


class PaceOutput(serializers.Serializer):
    state = serializers.ChoiceField(
        choices=["unknown", "keeping_up", "catching_up", "behind"],
        help_text="keeping_up: the lag is at most a batch's worth; catching_up: larger and shrinking; behind: larger "
        "and not shrinking (events arrive faster than the pipeline reads them, or it is stuck).",
    )
    summary = serializers.CharField(help_text="The pace in words, e.g. 'Behind: lag 3.7M events, growing 18k/s ...'.")
    lag = serializers.IntegerField(help_text="Records behind the topics' end offsets now, all partitions.")
    arriving_per_second = serializers.FloatField(help_text="Events written to the topics per second.")
    reading_per_second = serializers.FloatField(help_text="Events the pipeline committed per second.")
    growing_per_second = serializers.FloatField(help_text="The lag's change per second (negative: shrinking).")
    catch_up_seconds = serializers.FloatField(allow_null=True, help_text="Time left to catch up at this pace.")
    measured_at_ms = serializers.IntegerField(allow_null=True)
    seconds_judged = serializers.FloatField()
    cause = serializers.CharField(
        allow_blank=True,
        help_text="When behind: light | stalled | clickhouse | state_memory | cores | unknown (blank otherwise).",
    )
    cause_words = serializers.CharField(allow_blank=True, help_text="Why it is behind and what to do, in words.")
    stale = serializers.BooleanField(help_text="True when the lag has not been read for a while.")


class LagReadingOutput(serializers.Serializer):
    t_ms = serializers.IntegerField(help_text="When it was read, unix ms.")
    total = serializers.IntegerField(help_text="Records behind, all partitions.")
    lag = serializers.DictField(
        child=serializers.DictField(child=serializers.IntegerField()),
        help_text="{topic: {partition: records behind the topic's end offset}}",
    )
    end_total = serializers.IntegerField(help_text="The topics' end offsets, summed.")
    committed_total = serializers.IntegerField(help_text="The pipeline's committed offsets, summed.")
    position = serializers.CharField(help_text="checkpoint | batch | start: where the committed offsets were read.")


class LagOutput(serializers.Serializer):
    pace = PaceOutput(allow_null=True)
    readings = LagReadingOutput(many=True)
    retention_seconds = serializers.IntegerField()


class PipelineLagApi(APIView):
    workspace_model = Pipeline

    @extend_schema(
        tags=METRICS_TAG,
        operation_id="pipelines_lag",
        description=(
            "The pipeline's lag behind its topics, read from the brokers every few seconds by the worker (the "
            "topics' end offsets minus what the pipeline has committed, per partition), oldest first, and its pace "
            "judged on them: keeping up, catching up or behind, with the cause when known."
        ),
        parameters=[MetricsQuery],
        responses={200: LagOutput, **ERROR_RESPONSES},
    )
    def get(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        query = validated_input(MetricsQuery, request.query_params)
        readings = metrics_history.lag_history(pipeline=pipeline, since_ms=query.get("since"), limit=query["limit"])
        data = {
            "pace": pace_output(metrics_history.pace_of(pipeline)),
            "readings": readings,
            "retention_seconds": metrics_history.LAG_RETENTION_SECONDS,
        }
        return Response(LagOutput(data).data)


def pace_output(pace: dict[str, Any] | None) -> dict[str, Any] | None:
    if pace is None:
        return None
    return {"cause": "", "cause_words": "", **pace}


def pace_or_none(pipeline: Any) -> dict[str, Any] | None:
    """The pipeline's pace for an answer, or None when it cannot be read (Redis down: the rest still answers)."""
    try:
        return pace_output(metrics_history.pace_of(pipeline))
    except MetricsUnavailableError:
        return None


class DeadLetterQuery(serializers.Serializer):
    page = serializers.IntegerField(required=False, min_value=1, default=1)
    page_size = serializers.IntegerField(
        required=False, min_value=1, max_value=dead_letters.MAX_PAGE_SIZE, default=dead_letters.PAGE_SIZE
    )


class DeadLetterOutput(serializers.Serializer):
    inserted_at = serializers.DateTimeField()
    reason = serializers.CharField()
    topic = serializers.CharField()
    partition = serializers.IntegerField()
    offset = serializers.IntegerField()
    kafka_timestamp = serializers.DateTimeField(allow_null=True)
    batch_id = serializers.IntegerField()
    raw = serializers.CharField(help_text="The event's value as text (bytes that are not UTF-8 shown as U+FFFD).")


class DeadLetterPageOutput(serializers.Serializer):
    table = serializers.CharField(source="table.display_name", help_text="database.table")
    table_exists = serializers.BooleanField(help_text="False until the job has run once.")
    count = serializers.IntegerField()
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()
    pages = serializers.IntegerField()
    results = DeadLetterOutput(many=True)


class ReplayInput(serializers.Serializer):
    limit = serializers.IntegerField(
        required=False, min_value=1, max_value=dead_letters.REPLAY_LIMIT, default=dead_letters.REPLAY_LIMIT
    )


class ReplayOutput(serializers.Serializer):
    replayed = serializers.IntegerField(help_text="Sent to their source topic and removed from the dead letters.")
    failed = serializers.IntegerField(help_text="Not acknowledged by the broker; kept as dead letters.")
    remaining = serializers.IntegerField(help_text="Dead letters left (ask again to replay more).")
    error = serializers.CharField(allow_null=True)


class PurgeInput(serializers.Serializer):
    confirm = serializers.BooleanField(help_text="Must be true: the pipeline's dead letters are deleted for good.")

    def validate_confirm(self, value: bool) -> bool:
        if not value:
            raise serializers.ValidationError("Set confirm to true to delete the pipeline's dead letters.")
        return value


class PurgeOutput(serializers.Serializer):
    purged = serializers.IntegerField()


class DeadLetterListApi(APIView):
    workspace_model = Pipeline

    @extend_schema(
        tags=DEAD_LETTER_TAG,
        operation_id="pipelines_dead_letters_list",
        description="The pipeline's dead letters, newest first, a page at a time.",
        parameters=[DeadLetterQuery],
        responses={200: DeadLetterPageOutput, **ERROR_RESPONSES},
    )
    def get(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        query = validated_input(DeadLetterQuery, request.query_params)
        page = dead_letters.dead_letter_page(
            pipeline=pipeline,
            page=query["page"],
            page_size=query["page_size"],
            with_payloads=policy.may(request.user, "dead_letter.payload", pipeline.workspace_id),
        )
        return Response(DeadLetterPageOutput(page).data)


def dead_letter_download(pipeline: object) -> StreamingHttpResponse:
    """Every dead letter as JSON lines, streamed, as an attachment (shared by the API and the page)."""
    lines = dead_letters.dead_letter_json_lines(pipeline=pipeline)
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson; charset=utf-8")
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in pipeline.name)
    response["Content-Disposition"] = f'attachment; filename="{safe}-dead-letters-{stamp}.jsonl"'
    return response


class JSONLinesRenderer(BaseRenderer):
    """Lets a client ask for `Accept: application/x-ndjson`; only an error body is rendered here (one line of
    the usual JSON error shape): the download itself is a streamed response."""

    media_type = "application/x-ndjson"
    format = "jsonl"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        return (json.dumps(data) + "\n").encode() if data is not None else b""


class DeadLetterDownloadApi(APIView):
    workspace_model = Pipeline
    workspace_actions = {"GET": "dead_letter.payload"}
    renderer_classes = [JSONRenderer, JSONLinesRenderer]

    @extend_schema(
        tags=DEAD_LETTER_TAG,
        operation_id="pipelines_dead_letters_download",
        description="Every dead letter of the pipeline as JSON lines (one object per line, newest first), streamed. "
        "An error is JSON, or one JSON line when the client asks for `application/x-ndjson` (`?format=jsonl`).",
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR, description="JSON lines"),
            **error_responses(JSONLinesRenderer.media_type),
        },
    )
    def get(self, request: Request, pk: int) -> StreamingHttpResponse:
        return dead_letter_download(selectors.pipeline_get(user=request.user, pk=pk))


class DeadLetterReplayApi(APIView):
    workspace_model = Pipeline
    workspace_actions = {"POST": "dead_letter.replay"}

    @extend_schema(
        tags=DEAD_LETTER_TAG,
        operation_id="pipelines_dead_letters_replay",
        description=(
            "Send up to `limit` dead letters (oldest first) back to their source topic, so the job parses and "
            "deduplicates them again; those the broker acknowledged are removed from the dead-letter table "
            "(an event that fails again comes back as a new dead letter)."
        ),
        request=ReplayInput,
        responses={200: ReplayOutput, **ERROR_RESPONSES},
    )
    def post(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        data = validated_input(ReplayInput, request.data)
        return Response(
            ReplayOutput(
                dead_letters.dead_letters_replay(pipeline=pipeline, limit=data["limit"], actor=request.user)
            ).data
        )


class DeadLetterPurgeApi(APIView):
    workspace_model = Pipeline
    workspace_actions = {"POST": "dead_letter.purge"}

    @extend_schema(
        tags=DEAD_LETTER_TAG,
        operation_id="pipelines_dead_letters_purge",
        description='Delete every dead letter of the pipeline (`{"confirm": true}` required).',
        request=PurgeInput,
        responses={200: PurgeOutput, **ERROR_RESPONSES},
    )
    def post(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        validated_input(PurgeInput, request.data)
        return Response(
            PurgeOutput({"purged": dead_letters.dead_letters_purge(pipeline=pipeline, actor=request.user)}).data
        )
