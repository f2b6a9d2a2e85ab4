"""The column types proposed for a new table (`webapp.pipelines.mapping`): the schema's own type when it gives
one, Nullable when the field may be missing, and never Nullable in the ORDER BY (a sorting key cannot be)."""

from __future__ import annotations

import pytest

from clearflow_spec.avro_schema import schema_fields
from tests.webapp.avro_events import ORDER_V2
from webapp.pipelines.mapping import SourceField, proposed_type, suggest_mapping

pytestmark = pytest.mark.fast


def test_the_avro_schemas_types_are_proposed_and_the_order_by_is_never_nullable():
    fields = [SourceField(f.path, f.type, f.nullable, f.clickhouse_type) for f in schema_fields(ORDER_V2)]
    proposed = {m.field: m.type for m in suggest_mapping(fields, None, order_by=["order_id", "note"]).columns}
    assert proposed["price"] == "Decimal(10, 2)"
    assert proposed["paid_at"] == "DateTime64(3, 'UTC')"
    assert proposed["day"] == "Date"
    assert proposed["status"] == "LowCardinality(String)"
    assert proposed["coupon"] == "Nullable(String)"
    assert proposed["note"] == "String"  # in the ORDER BY: not Nullable, though the schema allows null


@pytest.mark.parametrize(
    ("source", "in_order_by", "expected"),
    [
        (SourceField("a", "string", True, "LowCardinality(Nullable(String))"), True, "LowCardinality(String)"),
        (
            SourceField("a", "string", True, "LowCardinality(Nullable(String))"),
            False,
            "LowCardinality(Nullable(String))",
        ),
        (SourceField("a", "datetime", True, "Date"), False, "Nullable(Date)"),  # sometimes missing in the sample
        (SourceField("a", "string", True), False, "Nullable(String)"),  # no schema type: the default
        (SourceField("a", "uuid", False), True, "UUID"),
    ],
)
def test_proposed_type(source, in_order_by, expected):
    assert proposed_type(source, in_order_by=in_order_by) == expected
