"""A spec's connection sections: filled in from connections (the pipeline's database kept), and taken out again."""

from __future__ import annotations

import pytest

from clearflow_spec.connections import spec_with_connections, spec_without_connections

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`

SPEC = {
    "name": "p",
    "source": {"topics": ["t"], "fields": []},
    "sink": {"clickhouse": {"database": "analytics"}, "table": "t", "columns": []},
}


def test_sections_are_filled_in_and_the_pipelines_database_is_kept():
    filled = spec_with_connections(
        SPEC, kafka={"bootstrap_servers": "b:1"}, clickhouse={"host": "ch", "database": "default"}
    )
    assert filled["source"]["kafka"] == {"bootstrap_servers": "b:1"}
    assert filled["sink"]["clickhouse"] == {"host": "ch", "database": "analytics"}
    assert "kafka" not in SPEC["source"]  # a copy
    no_database = spec_with_connections({**SPEC, "sink": {"table": "t"}}, clickhouse={"host": "ch", "database": "d"})
    assert no_database["sink"]["clickhouse"]["database"] == "d"


def test_taking_them_out_leaves_what_a_pipeline_file_holds():
    filled = spec_with_connections(SPEC, kafka={"bootstrap_servers": "b:1"}, clickhouse={"host": "ch"})
    assert spec_without_connections(filled) == SPEC
    assert list(spec_without_connections(filled)["sink"]) == ["clickhouse", "table", "columns"]
    assert spec_without_connections({"source": "not an object", "sink": {"clickhouse": "x"}}) == {
        "source": "not an object",
        "sink": {},
    }
