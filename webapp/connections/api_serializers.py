"""The connections API's serializers: a connection's input and output (secrets write-only: an output says only
whether one is set), and what a connection lists, samples and infers."""

from __future__ import annotations

from rest_framework import serializers

from clearflow_spec.connections import KAFKA_SECRET_FLAGS
from clearflow_spec.field_types import FIELD_TYPES
from webapp.api.outputs import ChangeOutput
from webapp.connections.models import ClickHouseConnection, KafkaConnection, SchemaRegistryConnection

ConnectionModel = type[KafkaConnection] | type[ClickHouseConnection] | type[SchemaRegistryConnection]


def _input_meta(model: ConnectionModel) -> type:
    """Input serializers' Meta: the fields a user sets (`EDITABLE_FIELDS`, read from the spec's connection model);
    secrets write-only and taken as typed."""
    return type(
        "Meta",
        (),
        {
            "model": model,
            "fields": list(model.EDITABLE_FIELDS),
            "extra_kwargs": {name: {"write_only": True, "trim_whitespace": False} for name in model.SECRET_FIELDS},
        },
    )


def _output_fields(model: ConnectionModel, flags: dict[str, str]) -> list[str]:
    """Outputs show every setting but the secrets; `flags` names the `has_…` field shown after each secret."""
    fields = ["id"]
    for name in model.EDITABLE_FIELDS:
        fields.append(flags[name] if name in model.SECRET_FIELDS else name)
    return [*fields, *model.STATE_FIELDS, "workspace", "created_at", "updated_at"]


class KafkaConnectionInput(serializers.ModelSerializer):
    # The model's fields and validators; the services validate again (model.clean) and save.
    Meta = _input_meta(KafkaConnection)


class KafkaConnectionOutput(serializers.ModelSerializer):
    has_sasl_password = serializers.BooleanField(read_only=True)
    has_ssl_key = serializers.BooleanField(read_only=True)
    has_sasl_kerberos_keytab = serializers.BooleanField(read_only=True)
    has_sasl_oauthbearer_client_secret = serializers.BooleanField(read_only=True)
    has_aws_secret_access_key = serializers.BooleanField(read_only=True)

    class Meta:
        model = KafkaConnection
        fields = _output_fields(KafkaConnection, KAFKA_SECRET_FLAGS)


class ConnectionDiffOutput(serializers.Serializer):
    exists = serializers.BooleanField(help_text="You have a connection of this name: saving would change it.")
    id = serializers.IntegerField(allow_null=True)
    changes = ChangeOutput(many=True, help_text="Fields that would change; a secret's values are never shown.")
    secrets_compared = serializers.BooleanField(
        help_text="Whether the secrets given were compared with the stored ones: never for a read-only token."
    )


class KafkaClusterInfoOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    brokers = serializers.ListField(child=serializers.CharField())
    topic_count = serializers.IntegerField()
    cluster_id = serializers.CharField(allow_null=True)


class TopicOutput(serializers.Serializer):
    name = serializers.CharField()
    partitions = serializers.IntegerField()
    message_count = serializers.IntegerField(allow_null=True, help_text="Estimate: high minus low watermark.")


class SampleInput(serializers.Serializer):
    topics = serializers.ListField(child=serializers.CharField(max_length=249), min_length=1, max_length=50)
    count = serializers.IntegerField(min_value=1, max_value=500, default=20)
    position = serializers.ChoiceField(["newest", "oldest"], default="newest")
    schema_registry_connection = serializers.IntegerField(
        required=False,
        help_text="Id of one of your schema registry connections: the values are Avro in the Confluent wire format "
        "(magic byte 0, schema id) and are decoded with the registered schemas.",
    )


class SampledEventOutput(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField()
    offset = serializers.IntegerField()
    timestamp = serializers.DateTimeField(allow_null=True)
    key = serializers.CharField(allow_null=True)
    value = serializers.JSONField()
    is_json = serializers.BooleanField()
    size = serializers.IntegerField()
    schema_id = serializers.IntegerField(allow_null=True, help_text="Avro: the writer schema id the event carries.")
    decode_error = serializers.CharField(
        allow_null=True, help_text="Avro: why the value could not be decoded (it would go to the dead letters)."
    )


class InferredFieldOutput(serializers.Serializer):
    path = serializers.CharField()
    type = serializers.CharField(
        help_text=f"One of {', '.join(FIELD_TYPES)}, or a nested type over them: array<T>, map<string,T>, "
        "struct<name:T,...>."
    )
    nullable = serializers.BooleanField()
    present = serializers.IntegerField()
    examples = serializers.ListField(child=serializers.JSONField())
    schema_type = serializers.CharField(allow_null=True, help_text="Avro: the type the schema gives.")
    clickhouse_type = serializers.CharField(allow_null=True, help_text="Avro: the column type proposed.")


class SchemaVersionUsedOutput(serializers.Serializer):
    subject = serializers.CharField(allow_null=True)
    version = serializers.IntegerField(allow_null=True)
    schema_id = serializers.IntegerField()
    events = serializers.IntegerField(help_text="Sampled events written with it.")


class InferSchemaOutput(serializers.Serializer):
    sampled = serializers.IntegerField()
    fields = InferredFieldOutput(many=True)
    schema_versions = SchemaVersionUsedOutput(
        many=True, default=list, help_text="Avro: the subject versions the sampled events were written with."
    )
    undecodable = serializers.IntegerField(default=0, help_text="Avro: sampled events that could not be decoded.")


class ClickHouseConnectionInput(serializers.ModelSerializer):
    Meta = _input_meta(ClickHouseConnection)


class ClickHouseConnectionOutput(serializers.ModelSerializer):
    has_password = serializers.BooleanField(read_only=True)

    class Meta:
        model = ClickHouseConnection
        fields = _output_fields(ClickHouseConnection, {"password": "has_password"})


class ClickHouseServerInfoOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    version = serializers.CharField()
    database_count = serializers.IntegerField()


class SchemaRegistryConnectionInput(serializers.ModelSerializer):
    Meta = _input_meta(SchemaRegistryConnection)


class SchemaRegistryConnectionOutput(serializers.ModelSerializer):
    has_password = serializers.BooleanField(read_only=True)

    class Meta:
        model = SchemaRegistryConnection
        fields = _output_fields(SchemaRegistryConnection, {"password": "has_password"})


class SchemaRegistryInfoOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    subject_count = serializers.IntegerField()
    subjects = serializers.ListField(child=serializers.CharField(), help_text="The first 20, sorted.")


class DatabaseOutput(serializers.Serializer):
    name = serializers.CharField()


class TableOutput(serializers.Serializer):
    name = serializers.CharField()
    engine = serializers.CharField()
    total_rows = serializers.IntegerField(allow_null=True)


class ColumnOutput(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField()
    nullable = serializers.BooleanField()
    default_kind = serializers.CharField(allow_blank=True)
    default_expression = serializers.CharField(allow_blank=True)
    in_sorting_key = serializers.BooleanField()
    required = serializers.BooleanField(help_text="Not Nullable and no default: an insert must give a value.")
    comment = serializers.CharField(allow_blank=True)
