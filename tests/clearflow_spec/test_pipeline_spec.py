"""The pipeline spec v1: validation with paths, ClickHouse types, windows, expressions, secrets."""

from __future__ import annotations

import copy
import json

import pytest

from clearflow_spec import spec as S
from clearflow_spec.client_config import librdkafka_config

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`


def valid_spec() -> dict:
    return {
        "version": 1,
        "name": "users-dedup",
        "source": {
            "kafka": {"bootstrap_servers": "127.0.0.1:9092", "security_protocol": "PLAINTEXT"},
            "topics": ["users"],
            "starting_offsets": "earliest",
            "format": "json",
            "fields": [
                {"path": "event_id", "type": "string"},
                {"path": "user.id", "type": "string"},
                {"path": "email", "type": "string"},
                {"path": "amount", "type": "float"},
                {"path": "created_at", "type": "datetime"},
            ],
        },
        "dedup": {"keys": ["event_id"], "window": "1h", "time": "ingestion"},
        "filter": "amount > 0",
        "transforms": [{"name": "domain", "expression": "split(email, '@')[1]", "type": "string"}],
        "sink": {
            "clickhouse": {"host": "127.0.0.1", "port": 8123, "username": "default", "password": "ch-secret"},
            "table": "users_dedup",
            "create_table": True,
            "engine": "MergeTree",
            "order_by": ["event_id"],
            "columns": [
                {"field": "event_id", "column": "event_id", "type": "String"},
                {"field": "user.id", "column": "user_id", "type": "UUID"},
                {"field": "domain", "column": "domain", "type": "LowCardinality(String)"},
                {"field": "amount", "column": "amount", "type": "Nullable(Float64)"},
            ],
        },
    }


def errors_of(data) -> dict[str, str]:
    with pytest.raises(S.SpecError) as info:
        S.parse_spec(data)
    return {issue.path: issue.message for issue in info.value.errors}


def test_valid_spec_parses_and_round_trips():
    data = valid_spec()
    parsed = S.parse_spec(data)
    assert parsed.name == "users-dedup"
    assert parsed.dedup is not None and parsed.dedup.window_seconds == 3600
    again = S.parse_spec(parsed.to_dict(reveal_secrets=True))
    assert again == parsed
    assert S.parse_spec(parsed.to_json(reveal_secrets=True)) == parsed
    assert parsed.to_dict(reveal_secrets=True)["sink"]["clickhouse"]["password"] == "ch-secret"


def test_an_earlier_versions_state_store_is_read_and_never_written_back():
    data = valid_spec()
    data["dedup"]["state_store"] = "memory"  # what specs of earlier versions chose; the state is always in RocksDB
    parsed = S.parse_spec(data)
    assert parsed.dedup is not None and parsed.dedup.keys == ["event_id"]
    assert "state_store" not in parsed.to_dict()["dedup"]
    assert "state_store" not in json.loads(parsed.to_json())["dedup"]
    assert S.parse_spec(parsed.to_dict(reveal_secrets=True)).to_dict() == parsed.to_dict()


def test_json_text_is_accepted_and_bad_json_is_reported():
    assert S.parse_spec(json.dumps(valid_spec())).name == "users-dedup"
    with pytest.raises(S.SpecError, match="invalid JSON at line 1"):
        S.parse_spec("{nope")


def test_unknown_clickhouse_type_names_the_path():
    data = valid_spec()
    data["sink"]["columns"][2]["type"] = "Strng"
    with pytest.raises(S.SpecError) as info:
        S.parse_spec(data)
    assert str(info.value) == "sink.columns[2].type: unknown ClickHouse type 'Strng'"


def test_structural_errors_name_their_paths():
    data = valid_spec()
    data["source"]["fields"][1]["type"] = "text"
    data["dedup"]["window"] = "8d"
    data["sink"]["clickhouse"]["port"] = "not-a-port"
    data["unexpected"] = 1
    found = errors_of(data)
    assert set(found) == {"source.fields[1].type", "dedup.window", "sink.clickhouse.port", "unexpected"}
    assert "7d" in found["dedup.window"]


def test_cross_section_errors_name_their_paths():
    data = valid_spec()
    data["dedup"]["keys"] = ["event_id", "missing.key"]
    data["sink"]["columns"][0]["field"] = "nope"
    data["sink"]["columns"][3]["type"] = "UUID"  # a float into UUID
    data["sink"]["order_by"] = ["amount"]  # Nullable(Float64) -> UUID now; still a column
    data["transforms"][0]["expression"] = "split(email, '@'"
    found = errors_of(data)
    assert "missing.key" in found["dedup.keys[1]"]
    assert "nope" in found["sink.columns[0].field"]
    assert found["sink.columns[3].type"] == "a float field ('amount') cannot be written to UUID"
    assert found["transforms[0].expression"].startswith("syntax error at line 1, column")


def test_filter_syntax_and_references():
    data = valid_spec()
    data["filter"] = "amount >"
    assert errors_of(data)["filter"].startswith("syntax error at line 1, column 8")
    data["filter"] = "amount > 1; drop table x"
    assert "single expression" in errors_of(data)["filter"]
    data["filter"] = "select 1"
    assert "not a SQL statement" in errors_of(data)["filter"]
    data["filter"] = "user.name = 'x'"
    assert "unknown field 'user.name'" in errors_of(data)["filter"]
    data["filter"] = "user.id IS NOT NULL AND _kafka_partition >= 0 AND transform(array(1), x -> x + 1) IS NOT NULL"
    assert S.parse_spec(data).filter.startswith("user.id")
    data["filter"] = "   "
    assert S.parse_spec(data).filter is None


def test_event_time_needs_a_datetime_field():
    data = valid_spec()
    data["dedup"] = {"keys": ["event_id"], "window": "5m", "time": "event"}
    assert "event_time_field" in errors_of(data)["dedup"]
    data["dedup"]["event_time_field"] = "amount"
    assert "must have type datetime" in errors_of(data)["dedup.event_time_field"]
    data["dedup"]["event_time_field"] = "created_at"
    assert S.parse_spec(data).dedup.event_time_field == "created_at"


def test_dedup_may_be_null():
    data = valid_spec()
    data["dedup"] = None
    assert S.parse_spec(data).dedup is None


def test_sasl_needs_credentials():
    data = valid_spec()
    data["source"]["kafka"].update(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512")
    assert "sasl_username, sasl_password" in errors_of(data)["source.kafka"]


def test_secrets_are_masked_in_repr_and_default_dict():
    data = valid_spec()
    data["source"]["kafka"].update(
        security_protocol="SASL_SSL",
        sasl_mechanism="PLAIN",
        username="svc",
        password="kafka-secret",
        ssl_certificate_pem="CERT",
        ssl_key_pem="KEY-secret",
    )
    parsed = S.parse_spec(data)
    for text in (repr(parsed), str(parsed), parsed.to_json(), json.dumps(parsed.to_dict())):
        assert "kafka-secret" not in text and "KEY-secret" not in text and "ch-secret" not in text
    masked = parsed.to_dict()
    assert masked["source"]["kafka"]["sasl_password"] == S.SECRET_MASK
    revealed = parsed.to_dict(reveal_secrets=True)
    assert revealed["source"]["kafka"]["ssl_key_pem"] == "KEY-secret"
    config = librdkafka_config(parsed.source.kafka)
    assert config["sasl.password"] == "kafka-secret" and config["ssl.key.pem"] == "KEY-secret"
    original = copy.deepcopy(data)
    assert S.parse_spec(revealed) == S.parse_spec(original)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("String", "String"),
        ("Nullable(String)", "Nullable(String)"),
        ("LowCardinality(Nullable(String))", "LowCardinality(Nullable(String))"),
        ("FixedString(16)", "FixedString(16)"),
        ("UInt256", "UInt256"),
        ("Int8", "Int8"),
        ("Float32", "Float32"),
        ("Decimal(18,4)", "Decimal(18, 4)"),
        ("Decimal64(3)", "Decimal64(3)"),
        ("Bool", "Bool"),
        ("UUID", "UUID"),
        ("Date32", "Date32"),
        ("DateTime('Europe/Berlin')", "DateTime('Europe/Berlin')"),
        ("DateTime64(3, 'UTC')", "DateTime64(3, 'UTC')"),
        ("IPv6", "IPv6"),
        ("JSON", "JSON"),
        ("Array(Nullable(Int32))", "Array(Nullable(Int32))"),
        ("Map(String, Array(UInt64))", "Map(String, Array(UInt64))"),
    ],
)
def test_clickhouse_types_parse(text, canonical):
    assert S.parse_clickhouse_type(text).sql() == canonical
    assert S.clickhouse_type_error(text) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Strng", "unknown ClickHouse type 'Strng'"),
        ("string", "did you mean 'String'"),
        ("FixedString", "FixedString needs a length"),
        ("Decimal(3)", None),
        ("Decimal(80, 2)", "precision"),
        ("Nullable(Array(Int8))", "not allowed"),
        ("Map(String)", "two type arguments"),
        ("Array(Int8", "missing"),
        ("DateTime64(12)", "precision 0..9"),
        ("String(3)", "takes no arguments"),
        ("", "empty"),
    ],
)
def test_clickhouse_type_errors(text, message):
    error = S.clickhouse_type_error(text)
    if message is None:
        assert error is None
    else:
        assert error is not None and message in error


def test_field_type_compatibility():
    assert S.field_type_compatible("string", "UUID")
    assert S.field_type_compatible("uuid", "Nullable(UUID)")
    assert S.field_type_compatible("int", "LowCardinality(Nullable(UInt32))")
    assert S.field_type_compatible("datetime", "DateTime64(3, 'UTC')")
    assert not S.field_type_compatible("float", "Int64")
    assert not S.field_type_compatible("bool", "UUID")
    assert not S.field_type_compatible("json", "Int64")
    assert not S.field_type_compatible("string", "Strng")
    assert not S.field_type_compatible("text", "String")
    for field_type in S.FIELD_TYPES:
        assert S.field_type_compatible(field_type, S.default_clickhouse_type(field_type))


@pytest.mark.parametrize(("text", "seconds"), [("30s", 30), ("5m", 300), ("1h", 3600), ("7d", 604800)])
def test_windows(text, seconds):
    assert S.parse_window(text) == seconds


@pytest.mark.parametrize("text", ["0s", "8d", "169h", "1w", "h", "10", "-1h", ""])
def test_bad_windows(text):
    with pytest.raises(ValueError):
        S.parse_window(text)


def test_expression_error_reports_position():
    assert S.expression_error("a = 1") is None
    error = S.expression_error("a = 1 AND\n b >")
    assert error is not None and error.startswith("syntax error at line 2, column 4 near '>'")
    assert "alias" in S.expression_error("a AS b")
    assert S.expression_error("") == "empty expression"


def test_insert_dedup_window_and_its_old_name():
    data = valid_spec()
    assert S.parse_spec(data).sink.insert_dedup_window == 1000
    data["sink"]["insert_dedup_window"] = 5000
    assert S.parse_spec(data).sink.insert_dedup_window == 5000

    # Specs stored (and API clients written) before the rename still parse, and are written back renamed.
    old = valid_spec()
    old["sink"]["deduplication_window"] = 2000
    parsed = S.parse_spec(old)
    assert parsed.sink.insert_dedup_window == 2000
    written = parsed.to_dict()["sink"]
    assert written["insert_dedup_window"] == 2000 and "deduplication_window" not in written

    old["sink"]["deduplication_window"] = 50
    assert errors_of(old) == {"sink.insert_dedup_window": "Input should be greater than or equal to 100"}
    both = valid_spec()
    both["sink"].update({"deduplication_window": 2000, "insert_dedup_window": 3000})
    assert "give only one of them" in errors_of(both)["sink"]


def test_specs_written_before_the_connection_fields_were_aligned_still_parse():
    """Stored specs name the Kafka credentials `username`/`password` and have no ClickHouse `verify`/`ssl_ca_pem`."""
    data = valid_spec()
    data["source"]["kafka"].update(
        security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", username="svc", password="old-secret"
    )
    data["sink"]["clickhouse"] = {"host": "ch", "port": 8443, "password": "", "secure": True}
    parsed = S.parse_spec(data)
    kafka = parsed.to_dict(reveal_secrets=True)["source"]["kafka"]
    assert (kafka["sasl_username"], kafka["sasl_password"]) == ("svc", "old-secret")
    assert "username" not in kafka and "password" not in kafka
    clickhouse = parsed.sink.clickhouse
    assert (clickhouse.secure, clickhouse.verify, clickhouse.ssl_ca_pem) == (True, True, None)


def test_a_clickhouse_ca_needs_https():
    data = valid_spec()
    data["sink"]["clickhouse"]["ssl_ca_pem"] = "-----BEGIN CERTIFICATE-----"
    data["sink"]["clickhouse"]["secure"] = False
    assert "ssl_ca_pem needs secure" in errors_of(data)["sink.clickhouse"]
