"""tests/specs.py, the tests' spec builder: what it leaves out, the parser's defaults fill in."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.specs import EVENT_COLUMNS, EVENT_FIELDS, pipeline_spec, spec_dict

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`


def test_a_spec_from_keywords_dedups_and_orders_by_its_first_field_unless_told():
    clickhouse = SimpleNamespace(host="ch", port=8123)
    spec = pipeline_spec(
        topics=["events"], fields=EVENT_FIELDS, columns=EVENT_COLUMNS, table="t", kafka="k:9092", clickhouse=clickhouse
    )
    assert spec.dedup is not None and spec.dedup.keys == ["event_id"] and spec.dedup.window == "1h"
    assert spec.sink.order_by == ["event_id"] and [c.column for c in spec.sink.columns] == ["event_id", "user_id", "n"]
    assert spec.source.kafka.bootstrap_servers == "k:9092" and spec.sink.clickhouse.port == 8123

    data = spec_dict(topics=["events"], fields=EVENT_FIELDS, columns=EVENT_COLUMNS, table="t", dedup=None)
    assert data["dedup"] is None and data["sink"]["order_by"] == []
    assert "kafka" not in data["source"] and data["sink"]["clickhouse"] == {}  # the connections fill them in


def test_the_sections_take_what_the_builder_does_not_name():
    data = spec_dict(
        topics=["events"],
        fields=EVENT_FIELDS,
        columns=EVENT_COLUMNS,
        table="t",
        database="analytics",
        source={"max_records_per_batch": 1234},
        sink={"dlq_table": "t_dead"},
        filter="n > 0",
    )
    assert data["source"]["max_records_per_batch"] == 1234 and data["sink"]["dlq_table"] == "t_dead"
    assert data["sink"]["clickhouse"] == {"database": "analytics"} and data["filter"] == "n > 0"
