"""The pipelines API's serializers: the spec as the API takes it, a pipeline's input (create, update, deploy,
delete), what a validation answers, and a pipeline's outputs (its status, versions, runs, history, log)."""

from __future__ import annotations

import json
from typing import Any

from rest_framework import serializers

from clearflow_spec.limits import size_issues
from clearflow_spec.spec import SpecError, SpecIssue
from webapp.pipelines.exactly_once_apis import DeliveryGuaranteeOutput, ValidationWarningOutput
from webapp.pipelines.models import Pipeline, PipelineRun, PipelineTransition, PipelineVersion
from webapp.pipelines.observe_apis import PaceOutput
from webapp.pipelines.state_size_outputs import EstimatedStateOutput, PlannedRateInput
from webapp.pipelines.type_fit_outputs import SampleReportOutput, accept_dead_letters_field


class SpecField(serializers.JSONField):
    """The pipeline spec (clearflow_spec.spec v1); `source.kafka` and `sink.clickhouse` come from the connections."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict) and (too_large := size_issues(data)):
            # Before anything reads the whole spec: a spec over its caps costs no more work (paths `spec.…`).
            raise SpecError([SpecIssue(path, message) for path, message in too_large])
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            raise serializers.ValidationError("A pipeline spec must be a JSON object.")
        if "\\u0000" in json.dumps(value):
            # PostgreSQL cannot store NUL characters in JSON.
            raise serializers.ValidationError("The spec may not contain NUL characters (\\u0000).")
        return value


class PipelineCreateInput(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    kafka_connection = serializers.IntegerField(help_text="Id of one of your Kafka connections.")
    clickhouse_connection = serializers.IntegerField(help_text="Id of one of your ClickHouse connections.")
    schema_registry_connection = serializers.IntegerField(
        required=False,
        help_text="Id of one of your schema registry connections: for source.format avro or protobuf in the "
        "Confluent wire format (it fills source.schema_registry).",
    )
    spec = SpecField()
    note = serializers.CharField(max_length=255, required=False, allow_blank=True, default="")


CHECKPOINT_HELP = (
    "Only when the new version cannot continue from the checkpoint (the API answers 409 and lists why): "
    "`keep` the offsets and dedup state anyway, or start `fresh` (read again from the starting offsets)."
)


class PipelineUpdateInput(serializers.Serializer):
    name = serializers.CharField(max_length=100, required=False)
    kafka_connection = serializers.IntegerField(required=False)
    clickhouse_connection = serializers.IntegerField(required=False)
    schema_registry_connection = serializers.IntegerField(required=False)
    spec = SpecField(required=False)
    note = serializers.CharField(max_length=255, required=False, allow_blank=True, default="")
    checkpoint = serializers.ChoiceField(["keep", "fresh"], required=False, help_text=CHECKPOINT_HELP)


class PipelineDeployInput(serializers.Serializer):
    checkpoint = serializers.ChoiceField(["keep", "fresh"], required=False, help_text=CHECKPOINT_HELP)


class PipelineDeleteInput(serializers.Serializer):
    remove_checkpoint = serializers.BooleanField(
        default=False, help_text="Also remove the checkpoint (start over). The ClickHouse rows stay either way."
    )


class ConfirmInput(serializers.Serializer):
    confirm = serializers.BooleanField(help_text="Must be true: the action cannot be undone.")

    def validate_confirm(self, value: bool) -> bool:
        if not value:
            raise serializers.ValidationError("Confirm with true: this cannot be undone.")
        return value


class PipelineRunOutput(serializers.ModelSerializer):
    version = serializers.IntegerField(source="version.number", allow_null=True, default=None)

    class Meta:
        model = PipelineRun
        fields = [
            "id",
            "version",
            "attempt",
            "host",
            "pid",
            "spark_app_id",
            "spark_master",
            "driver_memory",
            "start",
            "log_path",
            "started_at",
            "running_at",
            "stop_requested_at",
            "killed_at",
            "ended_at",
            "exit_code",
            "outcome",
            "reason",
            "cause",
            "log_tail",
            "sizing",
            "resize",
        ]


class PipelineTransitionOutput(serializers.ModelSerializer):
    class Meta:
        model = PipelineTransition
        fields = ["at", "from_status", "to_status", "reason"]


class PipelineLogOutput(serializers.Serializer):
    lines = serializers.ListField(child=serializers.CharField(allow_blank=True))


class PipelineLogInput(serializers.Serializer):
    lines = serializers.IntegerField(min_value=1, max_value=200, default=100)


class PipelineValidateInput(PlannedRateInput):
    spec = SpecField()
    name = serializers.CharField(max_length=100, required=False)
    kafka_connection = serializers.IntegerField(required=False)
    clickhouse_connection = serializers.IntegerField(required=False)
    schema_registry_connection = serializers.IntegerField(required=False)
    check_live = serializers.BooleanField(
        default=False,
        help_text="Also check topics and the target table on the systems, and sample the topics to check that the "
        "events fit the mapping, have the dedup keys and a readable event time (needs both connections).",
    )
    accept_dead_letters = accept_dead_letters_field()


class PipelineCheckInput(PlannedRateInput):
    check_live = serializers.BooleanField(default=True)
    accept_dead_letters = accept_dead_letters_field()


class ValidationOutput(serializers.Serializer):
    valid = serializers.BooleanField()
    spec = serializers.JSONField(help_text="The normalized spec (secrets masked).")
    delivery = DeliveryGuaranteeOutput(
        allow_null=True, help_text="Only with check_live: what the target table guarantees."
    )
    warnings = ValidationWarningOutput(many=True, help_text="Problems that do not make the spec invalid.")
    estimated_state = EstimatedStateOutput(
        allow_null=True,
        help_text="With dedup: the state the window holds once full, and the job's memory for it. Null when no rate "
        "is known (give events_per_second, or check_live to ask the topics).",
    )
    sample = SampleReportOutput(
        allow_null=True,
        default=None,
        help_text="With check_live: per mapped field, dedup key and event time, how the newest events fit. "
        "A blocking finding is a 400 with this report in `extra.sample`.",
    )


class PipelineStatusOutput(serializers.ModelSerializer):
    current_version = serializers.IntegerField(source="current_version.number", allow_null=True, default=None)
    deployed_version = serializers.IntegerField(source="deployed_version.number", allow_null=True, default=None)

    class Meta:
        model = Pipeline
        fields = [
            "id",
            "status",
            "status_message",
            "status_changed_at",
            "current_version",
            "deployed_version",
            "deploy_requested_at",
            "restart_at",
        ]


class PipelineOutput(PipelineStatusOutput):
    spec = serializers.JSONField(source="stored_spec", allow_null=True)

    class Meta:
        model = Pipeline
        fields = [
            "id",
            "name",
            "status",
            "status_message",
            "status_changed_at",
            "kafka_connection",
            "clickhouse_connection",
            "schema_registry_connection",
            "current_version",
            "deployed_version",
            "deploy_requested_at",
            "restart_at",
            "spec",
            "workspace",
            "created_at",
            "updated_at",
        ]


class PipelineVersionOutput(serializers.ModelSerializer):
    created_by = serializers.CharField(source="created_by.get_username", allow_null=True, default=None)
    spec = serializers.JSONField(source="stored_spec")

    class Meta:
        model = PipelineVersion
        fields = ["number", "spec", "note", "created_by", "created_at"]


class PipelineDetailOutput(PipelineOutput):
    delivery = DeliveryGuaranteeOutput(help_text="What the target table guarantees now (asked from ClickHouse).")
    pace = PaceOutput(
        allow_null=True,
        help_text="Its lag behind the topics as last read from the brokers, and whether it keeps up (null: not "
        "read, e.g. not deployed or the metrics store is down). The lag over time: `.../lag/`.",
    )

    topics_read = serializers.ListField(
        child=serializers.CharField(),
        allow_null=True,
        help_text="The topics it reads now, as the brokers last listed them: the spec's topics, or those its "
        "`source.topic_pattern` matches, including topics created since it started (null: not read yet).",
    )

    class Meta(PipelineOutput.Meta):
        fields = [*PipelineOutput.Meta.fields, "delivery", "pace", "topics_read"]
