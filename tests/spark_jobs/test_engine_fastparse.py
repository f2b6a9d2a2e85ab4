"""The source's Arrow fast-path parse: accepts only what it converts exactly like Spark, else defers."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from spark_jobs import fastparse

FIELDS = [("event_id", "string"), ("user.id", "uuid"), ("n", "int"), ("x", "float"), ("ok", "bool"), ("ts", "datetime")]
UUID = "6F1C0D9E-2D1B-4C8E-9A8E-1B2C3D4E5F60"


def good(i: int) -> bytes:
    return json.dumps(
        {"event_id": f"k{i}", "user": {"id": UUID}, "n": i, "x": 1.5, "ok": True, "ts": "2026-01-01T10:00:00+01:00"}
    ).encode()


def test_clean_records_are_parsed_and_typed():
    flag, arrays = fastparse.fast_arrays([good(1), good(2), b'{"event_id": "k3"}'], FIELDS)
    assert flag.to_pylist() == [True, True, True]
    assert arrays[0].to_pylist() == ["k1", "k2", "k3"]
    assert arrays[1].to_pylist() == [UUID.lower(), UUID.lower(), None]
    assert arrays[2].to_pylist() == [1, 2, None]
    assert arrays[5].to_pylist()[0] == dt.datetime(2026, 1, 1, 9, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    "odd",
    [
        b"not json",
        b"[1, 2]",
        b'{"event_id": 7}',  # a number for a string field: Spark keeps its text "7"
        b'{"event_id": "a", "n": "12"}',  # an int given as a string: Spark converts it
        b'{"event_id": "a", "n": 1.5}',
        b'{"event_id": "a", "user": {"id": "abc"}}',
        b'{"event_id": "a", "ts": "2026-01-01 10:00:00"}',  # Spark's formats are wider than Arrow's
        b'{"event_id": "a", "ok": "true"}',
        b'{"event_id": "a"} trailing',
        b'{"event_id": "a",\n "n": 1}',
        b"",
        None,
    ],
)
def test_anything_unusual_is_left_to_spark(odd):
    values = [good(i) for i in range(300)] + [odd] + [good(i) for i in range(300, 600)]
    flag, arrays = fastparse.fast_arrays(values, FIELDS)
    assert len(flag) == len(values) == len(arrays[0])
    assert flag[300].as_py() is False  # the odd record goes to Spark's parser
    assert flag.true_count >= 300  # most of the clean ones are still parsed here
    assert all(arrays[0][i].as_py() == f"k{i}" for i in range(len(values)) if flag[i].as_py() and i < 300)


def test_json_fields_disable_the_fast_path():
    assert fastparse.supported(FIELDS)
    assert not fastparse.supported([*FIELDS, ("payload", "json")])
