"""Small pure parts of the wizard: spec paths to steps, sample storage cap, spec <-> wizard data."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from spark_jobs.spec import parse_spec
from webapp.wizard import spec_builder
from webapp.wizard.steps.sample import MAX_STORED_SAMPLE_BYTES, events_to_store


def event(offset: int, size: int):
    return SimpleNamespace(
        topic="t", partition=0, offset=offset, timestamp=None, key=None, value={"i": offset}, is_json=True, size=size
    )


def test_large_samples_are_capped_but_never_empty():
    stored, truncated = events_to_store([event(i, 400_000) for i in range(5)])
    assert [e["offset"] for e in stored] == [0, 1] and truncated
    stored, truncated = events_to_store([event(0, MAX_STORED_SAMPLE_BYTES * 3)])
    assert len(stored) == 1 and not truncated
    stored, truncated = events_to_store([event(i, 100) for i in range(20)])
    assert len(stored) == 20 and not truncated


@pytest.mark.parametrize(
    ("path", "step"),
    [
        ("source.topics[0]", "topics"),
        ("source.fields[2].path", "sample"),
        ("dedup.keys[0]", "dedup"),
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
    assert spec_builder.step_for_path(path) == step


WIZARD_DATA = {
    "kafka": {"connection_id": 1},
    "topics": {"topics": ["users", "users_crm"]},
    "sample": {
        "fields": [
            {"path": "event_id", "type": "uuid", "nullable": False},
            {"path": "user.email", "type": "string", "nullable": True},
            {"path": "created_at", "type": "datetime", "nullable": False},
        ]
    },
    "dedup": {
        "enabled": True,
        "keys": ["event_id"],
        "window": "90m",
        "time_basis": "event_time",
        "event_time_field": "created_at",
        "state_store": "rocksdb",
    },
    "transform": {
        "filter": "created_at IS NOT NULL",
        "computed": [{"name": "domain", "expression": "split(user.email, '@')[1]", "type": "string"}],
    },
    "clickhouse": {
        "connection_id": 2,
        "database": "analytics",
        "table_mode": "new",
        "new_table": "signups",
        "engine": "ReplacingMergeTree",
        "order_by": ["event_id"],
    },
    "mapping": {
        "columns": [
            {"field": "event_id", "column": "event_id", "type": "UUID"},
            {"field": "user.email", "column": "user_email", "type": "Nullable(String)"},
            {"field": "domain", "column": "domain", "type": "Nullable(String)"},
        ]
    },
    "review": {"name": "signups", "starting_offsets": "latest"},
}
CONNECTIONS = {
    "source": {"kafka": {"bootstrap_servers": "b:9092"}},
    "sink": {"clickhouse": {"host": "ch"}},
}


def test_the_draft_becomes_a_valid_spec_and_back():
    spec = spec_builder.draft_spec(WIZARD_DATA, name="signups")
    full = {
        **spec,
        "source": {**spec["source"], **CONNECTIONS["source"]},
        "sink": {**spec["sink"], "clickhouse": {**spec["sink"]["clickhouse"], "host": "ch"}},
    }
    parsed = parse_spec(full)
    assert parsed.dedup.time == "event" and parsed.dedup.event_time_field == "created_at"
    assert parsed.dedup.state_store == "rocksdb"  # chosen in the wizard, kept when the pipeline is edited
    assert parsed.source.starting_offsets == "latest"
    assert parsed.sink.order_by == ["event_id"] and parsed.sink.create_table
    assert parsed.sink.clickhouse.database == "analytics"

    back = spec_builder.wizard_data_from_spec(full, kafka_connection_id=1, clickhouse_connection_id=2, name="signups")
    assert back["dedup"] == WIZARD_DATA["dedup"]
    assert back["transform"] == WIZARD_DATA["transform"]
    assert back["mapping"] == WIZARD_DATA["mapping"]
    assert back["clickhouse"]["order_by"] == ["event_id"] and back["clickhouse"]["new_table"] == "signups"
    assert spec_builder.draft_spec(back, name="signups") == spec


def test_dedup_off_and_an_existing_table():
    data = {
        **WIZARD_DATA,
        "dedup": {"enabled": False},
        "clickhouse": {**WIZARD_DATA["clickhouse"], "table_mode": "existing", "table": "events"},
    }
    spec = spec_builder.draft_spec(data, name="x")
    assert spec["dedup"] is None
    assert spec["sink"]["table"] == "events" and spec["sink"]["create_table"] is False
    assert spec["sink"]["order_by"] == []
