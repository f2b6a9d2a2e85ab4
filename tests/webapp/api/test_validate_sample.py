"""`POST /pipelines/validate/` with `check_live` samples the topic and checks it against the mapping with the
engine's conversion rules: fields that cannot fit their column, dedup keys and event times that no event has.
Real broker and ClickHouse (tests/conftest.py)."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.webapp.conftest import produce_records
from tests.webapp.heavy import answered

URL = "/api/v1/pipelines/validate/"
EVENTS = 10


def signup(i: int) -> dict:
    return {
        "event_id": f"e-{i}",
        "user_id": f"u-{i}",  # a string: cannot go into an integer column
        "amount": str(i) if i < 7 else f"{i} EUR",  # 7 of 10 convert to a number
        "ts": f"0{i % 9 + 1}/11/2026 10:00",  # a date the engine cannot read
        "created_at": f"2026-11-0{i % 9 + 1}T10:00:00Z",
    }


@pytest.fixture(scope="module")
def topic(kafka_bootstrap: str) -> str:
    name = f"signups_{uuid.uuid4().hex[:8]}"
    produce_records(kafka_bootstrap, name, [json.dumps(signup(i)).encode() for i in range(EVENTS)])
    return name


@pytest.fixture(scope="module")
def database(clickhouse_server) -> str:
    """A database with `users_existing` (user_id Int64), the table the user maps into."""
    import clickhouse_connect

    name = f"cf_fit_{uuid.uuid4().hex[:8]}"
    client = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    try:
        client.command(f"CREATE DATABASE `{name}`")
        client.command(
            f"CREATE TABLE `{name}`.users_existing (event_id String, user_id Int64) "
            "ENGINE = MergeTree ORDER BY event_id"
        )
    finally:
        client.close()
    return name


def spec(topic: str, database: str, *, user_id_type: str = "Int32", table: str = "users_new", **dedup) -> dict:
    return {
        "source": {
            "topics": [topic],
            "fields": [
                {"path": "event_id", "type": "string"},
                {"path": "user_id", "type": "string"},
                {"path": "amount", "type": "string"},
                {"path": "ts", "type": "datetime"},
                {"path": "request_id", "type": "string"},
            ],
        },
        "dedup": {"keys": ["event_id"], "window": "1h", **dedup},
        "sink": {
            "clickhouse": {"database": database},
            "table": table,
            "create_table": table == "users_new",
            "order_by": ["event_id"],
            "columns": [
                {"field": "event_id", "column": "event_id", "type": "String"},
                {"field": "user_id", "column": "user_id", "type": user_id_type},
            ],
        },
    }


def body(kafka_conn, ch_conn, spec_: dict, **extra) -> dict:
    return {
        "spec": spec_,
        "kafka_connection": kafka_conn.pk,
        "clickhouse_connection": ch_conn.pk,
        "check_live": True,
        **extra,
    }


def test_a_string_field_into_int32_cannot_fit_and_the_answer_shows_examples(api, kafka_conn, ch_conn, topic, database):
    response = answered(api, api.post(URL, body(kafka_conn, ch_conn, spec(topic, database)), format="json"))

    assert response.status_code == 400, response.json()
    answer = response.json()
    assert answer["code"] == "invalid_spec"
    [error] = answer["errors"]
    assert error["path"] == "spec.sink.columns[1].field"
    assert "'user_id' cannot fit column 'user_id' (Int32)" in error["message"]
    assert "none of the 10 sampled values converts" in error["message"]
    user_id = answer["extra"]["sample"]["fields"][1]
    assert (user_id["state"], user_id["fitting"], user_id["total"], user_id["blocking"]) == ("cannot_fit", 0, 10, True)
    assert user_id["examples"][0]["reason"].startswith("column 'user_id': cannot write 'u-")
    assert len(user_id["examples"]) == 3
    assert answer["extra"]["sample"]["fields"][0]["state"] == "fits"


def test_an_existing_int64_column_is_checked_against_the_sample_too(api, kafka_conn, ch_conn, topic, database):
    spec_ = spec(topic, database, user_id_type="Int64", table="users_existing")
    response = answered(api, api.post(URL, body(kafka_conn, ch_conn, spec_), format="json"))

    assert response.status_code == 400, response.json()
    assert response.json()["errors"][0]["path"] == "spec.sink.columns[1].field"
    assert response.json()["extra"]["sample"]["fields"][1]["state"] == "cannot_fit"


def test_accepting_dead_letters_for_the_field_lets_validation_pass(api, kafka_conn, ch_conn, topic, database):
    response = answered(
        api,
        api.post(URL, body(kafka_conn, ch_conn, spec(topic, database), accept_dead_letters=["user_id"]), format="json"),
    )

    assert response.status_code == 200, response.json()
    user_id = response.json()["sample"]["fields"][1]
    assert (user_id["state"], user_id["accepted"], user_id["blocking"]) == ("cannot_fit", True, False)
    assert response.json()["sample"]["sampled"] == EVENTS


def test_a_field_that_fits_some_values_is_a_warning(api, kafka_conn, ch_conn, topic, database):
    spec_ = spec(topic, database)
    spec_["sink"]["columns"][1] = {"field": "amount", "column": "amount", "type": "Decimal(10, 2)"}
    response = answered(api, api.post(URL, body(kafka_conn, ch_conn, spec_), format="json"))

    assert response.status_code == 200, response.json()
    amount = response.json()["sample"]["fields"][1]
    assert (amount["state"], amount["fitting"], amount["total"]) == ("partial", 7, 10)
    assert amount["message"] == "Fits 7 of 10 sampled values; the other 3 would go to dead letters."
    assert {e["value"] for e in amount["examples"]} == {"7 EUR", "8 EUR", "9 EUR"}


def test_accepting_dead_letters_for_a_field_that_is_not_mapped_is_refused(api, kafka_conn, ch_conn, topic, database):
    response = answered(
        api,
        api.post(URL, body(kafka_conn, ch_conn, spec(topic, database), accept_dead_letters=["nope"]), format="json"),
    )

    assert response.status_code == 400
    assert response.json()["errors"] == [{"path": "accept_dead_letters", "message": "Not a mapped field: nope."}]


def test_a_dedup_key_that_no_event_has_blocks(api, kafka_conn, ch_conn, topic, database):
    spec_ = spec(topic, database, keys=["request_id"])
    response = answered(
        api, api.post(URL, body(kafka_conn, ch_conn, spec_, accept_dead_letters=["user_id"]), format="json")
    )

    assert response.status_code == 400, response.json()
    [error] = response.json()["errors"]
    assert error["path"] == "spec.dedup.keys[0]"
    assert error["message"] == (
        "No sampled event has a usable dedup key 'request_id': 10 miss it or have null (of 10). "
        "Those events would go to dead letters."
    )
    key = response.json()["extra"]["sample"]["dedup_keys"][0]
    assert (key["missing"], key["total"], key["share"], key["blocking"]) == (10, 10, 1.0, True)


def test_an_event_time_the_engine_cannot_read_blocks(api, kafka_conn, ch_conn, topic, database):
    spec_ = spec(topic, database, time="event", event_time_field="ts")
    response = answered(
        api, api.post(URL, body(kafka_conn, ch_conn, spec_, accept_dead_letters=["user_id"]), format="json")
    )

    assert response.status_code == 400, response.json()
    [error] = response.json()["errors"]
    assert error["path"] == "spec.dedup.event_time_field"
    assert error["message"].startswith(
        "No sampled event has a usable event time 'ts': 10 have a value the engine cannot read (of 10)."
    )
    event_time = response.json()["extra"]["sample"]["event_time"]
    assert event_time["examples"][0]["reason"] == "field 'ts': cannot convert '01/11/2026 10:00' to datetime"


def test_an_event_time_the_engine_reads_passes(api, kafka_conn, ch_conn, topic, database):
    spec_ = spec(topic, database, time="event", event_time_field="created_at")
    spec_["source"]["fields"].append({"path": "created_at", "type": "datetime"})
    response = answered(
        api, api.post(URL, body(kafka_conn, ch_conn, spec_, accept_dead_letters=["user_id"]), format="json")
    )

    assert response.status_code == 200, response.json()
    assert response.json()["sample"]["event_time"]["share"] == 0
    assert response.json()["sample"]["dedup_keys"][0]["message"] == ""


def test_without_check_live_nothing_is_sampled(api, kafka_conn, ch_conn, topic, database):
    response = api.post(URL, {**body(kafka_conn, ch_conn, spec(topic, database)), "check_live": False}, format="json")

    assert response.status_code == 200
    assert response.json()["sample"] is None


def test_a_saved_pipelines_validate_checks_the_sample(api, kafka_conn, ch_conn, topic, database):
    created = api.post(
        "/api/v1/pipelines/",
        {"name": "signups", "kafka_connection": kafka_conn.pk, "clickhouse_connection": ch_conn.pk,
         "spec": spec(topic, database)},
        format="json",
    )  # fmt: skip
    assert created.status_code == 201, created.json()
    url = f"/api/v1/pipelines/{created.json()['id']}/validate/"

    assert answered(api, api.post(url, {}, format="json")).status_code == 400
    accepted = answered(api, api.post(url, {"accept_dead_letters": ["user_id"]}, format="json"))
    assert accepted.status_code == 200 and accepted.json()["sample"]["fields"][1]["accepted"] is True
