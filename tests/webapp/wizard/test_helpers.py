"""Small pure parts of the wizard: spec paths to steps, sample storage cap, the draft's partial spec."""

from __future__ import annotations

import pydantic
import pytest

from clearflow_spec.spec import parse_spec
from webapp.connections.kafka_client import SampledEvent
from webapp.wizard import draft_spec
from webapp.wizard.steps.sample import MAX_STORED_SAMPLE_BYTES, events_to_store


def event(offset: int, size: int) -> SampledEvent:
    return SampledEvent(
        topic="t", partition=0, offset=offset, timestamp=None, key=None, value={"i": offset}, is_json=True, size=size
    )


@pytest.mark.fast
def test_large_samples_are_capped_but_never_empty():
    stored, truncated = events_to_store([event(i, 400_000) for i in range(5)])
    assert [e["offset"] for e in stored] == [0, 1] and truncated
    stored, truncated = events_to_store([event(0, MAX_STORED_SAMPLE_BYTES * 3)])
    assert len(stored) == 1 and not truncated
    stored, truncated = events_to_store([event(i, 100) for i in range(20)])
    assert len(stored) == 20 and not truncated


@pytest.mark.fast
@pytest.mark.parametrize(
    ("path", "step"),
    [
        ("source.topics[0]", "topics"),
        ("source.fields[2].path", "sample"),
        ("dedup.keys[0]", "dedup"),
        ("join.keys[0].right", "join"),
        ("join.window", "join"),
        ("filter", "transform"),
        ("transforms[1].expression", "transform"),
        ("sink.columns[3].type", "mapping"),
        ("sink.order_by[0]", "clickhouse"),
        ("sink.table", "clickhouse"),
        ("name", "review"),
        ("", "review"),
    ],
)
def test_each_spec_problem_points_at_the_step_that_fixes_it(path, step):
    assert draft_spec.step_for_path(path) == step


SPEC = {
    "version": 1,
    "name": "signups",
    "source": {
        "kafka": {"bootstrap_servers": "b:9092", "security_protocol": "PLAINTEXT"},
        "topics": ["users", "users_crm"],
        "starting_offsets": "latest",
        "format": "json",
        "fields": [
            {"path": "event_id", "type": "uuid"},
            {"path": "user.email", "type": "string"},
            {"path": "created_at", "type": "datetime"},
        ],
        "max_records_per_batch": 1234,
    },
    "dedup": {
        "keys": ["event_id"],
        "window": "90m",
        "time": "event",
        "event_time_field": "created_at",
    },
    "filter": "created_at IS NOT NULL",
    "transforms": [{"name": "domain", "expression": "split(user.email, '@')[1]", "type": "string"}],
    "sink": {
        "clickhouse": {"host": "ch", "port": 8123, "username": "default", "password": "", "database": "analytics"},
        "table": "signups",
        "create_table": True,
        "engine": "ReplacingMergeTree",
        "order_by": ["id"],
        "columns": [
            {"field": "event_id", "column": "id", "type": "UUID"},
            {"field": "user.email", "column": "user_email", "type": "Nullable(String)"},
            {"field": "domain", "column": "domain", "type": "Nullable(String)"},
        ],
        "dlq_table": "signups_dead",
        "insert_dedup_window": 500,
    },
}


@pytest.mark.fast
def test_an_edit_starts_from_the_whole_spec_without_its_connections():
    data = draft_spec.edit_draft_data(SPEC, kafka_connection_id=1, clickhouse_connection_id=2, name="signups")
    assert data["kafka"] == {"connection_id": 1}
    assert data["clickhouse"] == {"connection_id": 2, "order_by": ["event_id"]}  # ORDER BY as fields
    assert "kafka" not in data["spec"]["source"]
    assert data["spec"]["sink"]["clickhouse"] == {"database": "analytics"}

    spec = draft_spec.complete_spec(draft_spec.load_draft_spec(data["spec"]), name="renamed")
    assert spec["name"] == "renamed"
    # Every field but the connection details comes back as it was, the ones the wizard does not show too.
    expected = {
        **SPEC,
        "name": "renamed",
        "source": {k: v for k, v in SPEC["source"].items() if k != "kafka"},
        "sink": {**SPEC["sink"], "clickhouse": {"database": "analytics"}},
    }
    assert spec == expected
    assert parse_spec({**spec, "source": SPEC["source"], "sink": SPEC["sink"]}).sink.insert_dedup_window == 500


@pytest.mark.fast
def test_the_draft_spec_is_typed_and_keeps_what_a_step_does_not_write():
    column = {"field": "a", "column": "a", "type": "String"}
    spec = draft_spec.load_draft_spec({"dedup": None, "sink": {"table": "t", "columns": [column], "dlq_table": "d"}})
    spec.sink.table = "u"
    spec.sink.unset("columns")  # another table: map again
    spec.source.topics = ["a"]
    assert spec.to_dict() == {"dedup": None, "sink": {"table": "u", "dlq_table": "d"}, "source": {"topics": ["a"]}}
    assert spec.is_set("dedup") and spec.dedup is None  # set to "off", not missing
    assert spec.sink.engine is None and not spec.sink.is_set("engine")
    # A misspelt name or a value of the wrong type is an error where it is written, not a silent None.
    with pytest.raises(AttributeError):
        _ = spec.sink.tabel
    with pytest.raises(pydantic.ValidationError):
        spec.sink.tabel = "x"
    with pytest.raises(pydantic.ValidationError):
        spec.source.starting_offsets = "middle"
    with pytest.raises(pydantic.ValidationError):  # a whole section is the spec's own model, with its rules
        spec.dedup = {"keys": []}


@pytest.mark.fast
def test_a_draft_value_that_no_longer_reads_is_left_out_alone():
    spec = draft_spec.load_draft_spec(
        {"source": {"topics": ["t"]}, "sink": {"table": 3, "deduplication_window": 500}, "gone": 1}
    )
    assert spec.to_dict() == {"source": {"topics": ["t"]}, "sink": {"insert_dedup_window": 500}}


@pytest.mark.django_db
def test_drafts_in_the_old_format_move_to_a_partial_spec(owner):
    import importlib

    from django.apps import apps

    from webapp.wizard.models import WizardDraft

    old = {
        "kafka": {"connection_id": 1},
        "topics": {"topics": ["users"]},
        "sample": {"count": 20, "fields": [{"path": "event_id", "type": "uuid", "nullable": True, "manual": False}]},
        "dedup": {"enabled": True, "keys": ["event_id"], "window": "90m", "time_basis": "ingestion"},
        "transform": {"filter": "", "computed": []},
        "clickhouse": {
            "connection_id": 2,
            "database": "db",
            "table_mode": "new",
            "new_table": "t",
            "engine": "MergeTree",
            "order_by": ["event_id"],
            "columns": [],
        },
        "mapping": {"columns": [{"field": "event_id", "column": "id", "type": "UUID"}]},
        "review": {"name": "p", "starting_offsets": "latest"},
    }
    draft = WizardDraft.objects.create(user=owner, data=old, step="review", reached="review")
    importlib.import_module("webapp.wizard.migrations.0002_draft_partial_spec").forwards(apps, None)
    draft.refresh_from_db()
    spec = draft_spec.complete_spec(draft.spec, name="p")
    assert spec["source"] == {
        "topics": ["users"],
        "fields": [{"path": "event_id", "type": "uuid"}],
        "starting_offsets": "latest",
    }
    assert spec["dedup"]["window"] == "90m" and spec["filter"] is None
    assert spec["sink"]["table"] == "t" and spec["sink"]["order_by"] == ["id"]
    assert spec["sink"]["columns"] == [{"field": "event_id", "column": "id", "type": "UUID"}]
    assert draft.data["sample"]["notes"]["event_id"]["nullable"] is True
    assert draft.data["clickhouse"]["order_by"] == ["event_id"]


@pytest.mark.fast
@pytest.mark.parametrize(
    ("kind", "message", "field"),
    [
        ("kafka", "Nothing accepts connections at 127.0.0.1:1 (connection refused). (...)", "bootstrap_servers"),
        ("kafka", "The broker rejected the user name or password (SCRAM-SHA-512). (...)", "sasl_password"),
        ("kafka", "The broker's TLS certificate at b:9093 is not signed by the CA certificate given", "ssl_ca_pem"),
        ("kafka", "The broker refused the TLS connection: it requires a client certificate", "ssl_certificate_pem"),
        ("clickhouse", "ClickHouse at ch:8123 rejected the user name or password.", "password"),
        ("clickhouse", "Nothing accepts connections at ch:8124 (connection refused).", "port"),
        ("clickhouse", "The host name ch.internal could not be resolved.", "host"),
        (
            "clickhouse",
            "Too many requests that connect to a server (...): at most 20 a minute. Try again in 30 seconds.",
            None,
        ),
    ],
)
def test_a_failed_connection_test_points_at_the_field_to_fix(kind, message, field):
    from webapp.connections.kinds import connection_kind

    assert connection_kind(kind).test_error_field(message) == field


@pytest.mark.fast
def test_the_draft_knows_exactly_the_specs_fields():
    from pydantic import BaseModel

    from clearflow_spec.spec import PipelineSpec

    def names(model: type[BaseModel], prefix: str = "") -> set[str]:
        found = set()
        for name, info in model.model_fields.items():
            found.add(prefix + name)
            if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
                found |= names(info.annotation, f"{prefix}{name}.")
        return found

    assert names(draft_spec.DraftSpec) == names(PipelineSpec)


@pytest.mark.fast
def test_saving_a_step_opens_the_optional_join_step_and_the_one_after_it():
    from webapp.wizard.steps import reached_after

    assert reached_after("sample") == "dedup"
    assert reached_after("dedup") == "transform"  # the join step can be passed by
    assert reached_after("join") == "transform"
    assert reached_after("review") == "review"
