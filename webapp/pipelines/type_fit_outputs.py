"""The sample check's report in the API (`POST /pipelines/validate/` with `check_live`), see `type_fit`."""

from __future__ import annotations

from rest_framework import serializers

ACCEPT_HELP = (
    "Mapped fields (source paths) whose values may go to dead letters: a field that cannot fit its column "
    "(no sampled value converts) does not block validation when it is listed here."
)


def accept_dead_letters_field() -> serializers.ListField:
    return serializers.ListField(
        child=serializers.CharField(max_length=500), required=False, default=list, max_length=500, help_text=ACCEPT_HELP
    )


class FailedValueOutput(serializers.Serializer):
    value = serializers.CharField(help_text="The sampled value as JSON text.")
    reason = serializers.CharField(help_text="The dead-letter reason the job would write.")


class FieldFitOutput(serializers.Serializer):
    field = serializers.CharField()
    column = serializers.CharField()
    type = serializers.CharField()
    state = serializers.ChoiceField(["fits", "partial", "cannot_fit", "no_values", "not_checked"])
    fitting = serializers.IntegerField(help_text="Sampled values that convert to the column's type.")
    total = serializers.IntegerField(help_text="Sampled events with a value for the field.")
    examples = FailedValueOutput(many=True)
    accepted = serializers.BooleanField(help_text="Dead letters accepted for this field (accept_dead_letters).")
    blocking = serializers.BooleanField()
    message = serializers.CharField()


# What a field is to the pipeline in a key-presence check (named in the API schema as FieldRoleEnum).
FIELD_ROLES = [("key", "key"), ("event_time", "event_time")]


class KeyPresenceOutput(serializers.Serializer):
    field = serializers.CharField()
    role = serializers.ChoiceField(FIELD_ROLES)
    total = serializers.IntegerField()
    missing = serializers.IntegerField(help_text="Sampled events where it is missing or null.")
    unconvertible = serializers.IntegerField(help_text="Sampled events where its value does not convert.")
    share = serializers.FloatField(help_text="Share of sampled events without a usable value (0..1).")
    examples = FailedValueOutput(many=True)
    blocking = serializers.BooleanField()
    message = serializers.CharField(allow_blank=True)


class SampleReportOutput(serializers.Serializer):
    sampled = serializers.IntegerField(help_text="JSON objects in the live sample (the newest events).")
    blocking = serializers.BooleanField()
    fields = FieldFitOutput(many=True)
    dedup_keys = KeyPresenceOutput(many=True)
    event_time = KeyPresenceOutput(allow_null=True)
