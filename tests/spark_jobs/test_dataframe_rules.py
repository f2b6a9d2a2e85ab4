"""The engine's rules as pure DataFrame functions, on small batch DataFrames (one local SparkSession for the
session; no Kafka, no ClickHouse): parsing and conversion, dedup keys, the filter, computed fields, casting
to the sink's columns and dead-letter routing. Expected values are written out by hand."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)
from pyspark.testing import assertDataFrameEqual, assertSchemaEqual

from spark_jobs import column_mapping, dedup, transforms
from spark_jobs.column_mapping import SinkColumn
from spark_jobs.transforms import ERROR, Field, Transform

KAFKA_SCHEMA = StructType(
    [
        StructField("_cf_value", StringType()),
        StructField("_kafka_topic", StringType()),
        StructField("_kafka_partition", LongType()),
        StructField("_kafka_offset", LongType()),
        StructField("_kafka_timestamp", TimestampType()),
    ]
)
KAFKA_TIME = dt.datetime(2026, 1, 1, 12, 0, 0)


def records(spark, values: list[str | None]):
    """Kafka-like rows: the record value (as bytes, as the source gives it) and its coordinates."""
    rows = [(value, "events", 0, offset, KAFKA_TIME) for offset, value in enumerate(values)]
    df = spark.createDataFrame(rows, KAFKA_SCHEMA)
    return df.withColumn("_cf_value", F.col("_cf_value").cast("binary"))


FIELDS = [
    Field("id", "string"),
    Field("n", "int"),
    Field("price", "float"),
    Field("ok", "bool"),
    Field("at", "datetime"),
    Field("uid", "uuid"),
    Field("user.name", "string"),
]
UID = "F47AC10B-58CC-4372-A567-0E02B2C3D479"


def parsed_view(df):
    """The parsed columns as plain text, so that the expected rows need no time zone or struct."""
    return df.select(
        "id",
        "n",
        "price",
        "ok",
        F.date_format("at", "yyyy-MM-dd HH:mm:ss").alias("at"),
        "uid",
        F.col("user.name").alias("user_name"),
        ERROR,
    )


PARSED_SCHEMA = StructType(
    [
        StructField("id", StringType()),
        StructField("n", LongType()),
        StructField("price", DoubleType()),
        StructField("ok", BooleanType()),
        StructField("at", StringType()),
        StructField("uid", StringType()),
        StructField("user_name", StringType()),
        StructField(ERROR, StringType()),
    ]
)


def test_parse_events_converts_every_type_and_names_what_does_not_convert(spark):
    df = records(
        spark,
        [
            json.dumps(
                {
                    "id": "a",
                    "n": 5,
                    "price": 1.5,
                    "ok": True,
                    "at": "2026-01-02T03:04:05Z",
                    "uid": UID,
                    "user": {"name": "ann"},
                }
            ),
            '{"id": "b", "n": " 7 ", "price": "2", "ok": "FALSE", "at": 1700000000, "uid": null}',
            '{"id": "c", "at": 1700000000000}',
            '{"id": "d", "n": "seven"}',
            '{"id": "e", "uid": "not-a-uuid"}',
            '{"id": "f", "ok": "yes"}',
            "not json",
            None,
        ],
    )
    actual = parsed_view(transforms.parse_events(df, FIELDS))
    expected = spark.createDataFrame(
        [
            ("a", 5, 1.5, True, "2026-01-02 03:04:05", UID.lower(), "ann", None),
            ("b", 7, 2.0, False, "2023-11-14 22:13:20", None, None, None),
            ("c", None, None, None, "2023-11-14 22:13:20", None, None, None),  # epoch milliseconds
            ("d", None, None, None, None, None, None, "field 'n': cannot convert 'seven' to int"),
            ("e", None, None, None, None, None, None, "field 'uid': cannot convert 'not-a-uuid' to uuid"),
            ("f", None, None, None, None, None, None, "field 'ok': cannot convert 'yes' to bool"),
            (None, None, None, None, None, None, None, "invalid JSON"),
            (None, None, None, None, None, None, None, "empty record value (NULL)"),
        ],
        PARSED_SCHEMA,
    )
    assertSchemaEqual(actual.schema, PARSED_SCHEMA)
    assertDataFrameEqual(actual, expected)


def test_parse_events_converts_each_field_once_a_row(spark):
    # A field's value is read twice (its column, and the dead-letter reason); Spark does not share an expression
    # with a coalesce's later argument, so the conversion must be a column of its own to run once a row.
    out = transforms.parse_events(records(spark, [f'{{"uid": "{UID}", "at": 1700000000}}']), FIELDS)
    plan = out._jdf.queryExecution().optimizedPlan().toString()
    uuid_checks = sum(1 for f in FIELDS if f.type == "uuid")
    datetime_checks = sum(1 for f in FIELDS if f.type == "datetime")
    assert plan.count("RLIKE(") == uuid_checks + datetime_checks
    assert out.select("uid", ERROR).first() == (UID.lower(), None)


def test_parse_events_keeps_nested_fields_as_structs_and_the_kafka_columns(spark):
    out = transforms.parse_events(records(spark, ['{"user": {"name": "ann"}}']), [Field("user.name", "string")])
    assertSchemaEqual(
        out.schema,
        StructType(
            [
                *[StructField(f.name, f.dataType) for f in records(spark, []).schema.fields],
                StructField("user", StructType([StructField("name", StringType())])),
                StructField(ERROR, StringType()),
            ]
        ),
    )


def test_require_keys_dead_letters_events_without_their_key(spark):
    df = transforms.parse_events(
        records(spark, ['{"id": "a", "user": {"id": "u1"}}', '{"id": "b"}', '{"user": {"id": "u3"}}', "[1"]),
        [Field("id", "string"), Field("user.id", "string")],
    )
    actual = dedup.require_keys(df, ["id", "user.id"]).select("id", ERROR)
    expected = spark.createDataFrame(
        [
            ("a", None),
            ("b", "dedup key 'user.id' is missing or null"),
            (None, "dedup key 'id' is missing or null"),
            (None, "invalid JSON"),  # the first reason stays
        ],
        f"id string, {ERROR} string",
    )
    assertDataFrameEqual(actual, expected)


def streamed(spark, tmp_path, df, step):
    """Run `step` over `df` as a stream (dedup's operator exists only in streaming): the rows go through a
    file source and a memory sink, once, with a fresh checkpoint."""
    source = tmp_path / "in"
    df.write.parquet(str(source))
    stream = step(spark.readStream.schema(df.schema).parquet(str(source)))
    name = f"out_{tmp_path.name.replace('-', '_')}"
    query = (
        stream.writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    return spark.table(name)


def test_drop_duplicates_keeps_one_event_per_key_and_every_dead_letter(spark, tmp_path):
    df = transforms.parse_events(
        records(spark, ['{"id": "a"}', '{"id": "a"}', '{"id": "b"}', '{"id": "a"}', "bad", "bad"]),
        [Field("id", "string")],
    )
    df = dedup.require_keys(df, ["id"])

    def step(stream):
        timed = dedup.dedup_time(stream, time_field=None)
        keyed = dedup.dedup_key(timed, ["id"])
        return dedup.drop_duplicates(keyed, window_seconds=3600).select("id", ERROR, "_kafka_offset")

    actual = streamed(spark, tmp_path, df, step)
    kept = actual.where(F.col(ERROR).isNull()).groupBy("id").count()
    assertDataFrameEqual(kept, spark.createDataFrame([("a", 1), ("b", 1)], "id string, count long"))
    dead = actual.where(F.col(ERROR).isNotNull()).select("_kafka_offset", ERROR)
    assertDataFrameEqual(
        dead, spark.createDataFrame([(4, "invalid JSON"), (5, "invalid JSON")], f"_kafka_offset long, {ERROR} string")
    )


def test_dedup_time_is_the_event_time_and_an_event_time_must_be_there(spark):
    recent = "2026-11-28T11:00:00Z"
    df = transforms.parse_events(
        records(spark, [json.dumps({"ts": recent}), '{"ts": "1999-01-01T00:00:00Z"}', "{}"]), [Field("ts", "datetime")]
    )
    # As it is: the dedup processor clamps it into the window when it compares two copies of a key
    # (test_engine_dedup), since the batch's time in a query would be compiled anew at every batch.
    timed = dedup.dedup_time(df, time_field="ts").select(
        ERROR, F.date_format("_cf_time", "yyyy-MM-dd'T'HH:mm:ss'Z'").alias("time")
    )
    kafka_time = KAFKA_TIME.strftime("%Y-%m-%dT%H:%M:%SZ")
    expected = spark.createDataFrame(
        [(None, recent), (None, "1999-01-01T00:00:00Z"), ("event time 'ts' is missing or null", kafka_time)],
        f"{ERROR} string, time string",
    )
    assertDataFrameEqual(timed, expected)


def test_the_filter_keeps_matches_and_every_dead_letter(spark):
    df = transforms.parse_events(records(spark, ['{"n": 5}', '{"n": 1}', "{}", "oops"]), [Field("n", "int")])
    actual = transforms.apply_filter(df, "n > 2").select("n", ERROR)
    expected = spark.createDataFrame([(5, None), (None, "invalid JSON")], f"n long, {ERROR} string")
    assertDataFrameEqual(actual, expected)
    assertDataFrameEqual(transforms.apply_filter(df, None), df)


def test_computed_fields_are_cast_to_their_type_and_may_use_the_ones_before(spark):
    df = transforms.parse_events(
        records(spark, ['{"email": "a@x.org", "n": 2}', '{"email": "plain", "n": 3}']),
        [Field("email", "string"), Field("n", "int")],
    )
    steps = [
        Transform("domain", "split(email, '@')[1]", "string"),
        Transform("twice", "n * 2", "int"),
        Transform("big", "twice > 5", "bool"),
        Transform("as_int", "email", "int"),  # text that is no number: NULL, not a failure
    ]
    actual = transforms.apply_transforms(df, steps).select("domain", "twice", "big", "as_int")
    expected = spark.createDataFrame(
        [("x.org", 4, False, None), (None, 6, True, None)],
        "domain string, twice long, big boolean, as_int long",
    )
    assertDataFrameEqual(actual, expected)


SINK = [
    SinkColumn("id", "id", "String"),
    SinkColumn("n", "small", "UInt8"),
    SinkColumn("uid", "uid", "UUID"),
    SinkColumn("id", "id_uuid", "Nullable(UUID)"),
    SinkColumn("at", "day", "Date"),
    SinkColumn("price", "amount", "Decimal(5, 2)"),
]
SINK_TYPES = {"id": "string", "n": "int", "uid": "uuid", "at": "datetime", "price": "float"}


def test_map_columns_casts_to_the_sink_columns_and_routes_what_does_not_fit_to_dead_letters(spark):
    df = transforms.parse_events(
        records(
            spark,
            [
                json.dumps({"id": UID, "n": 200, "uid": UID, "at": "2026-01-02T23:00:00Z", "price": 12.345}),
                '{"id": "x", "n": 300}',
                '{"id": "y", "n": -1}',
                '{"id": "z", "price": 123456}',
                "oops",
            ],
        ),
        [Field(path, kind) for path, kind in SINK_TYPES.items()],
    )
    out = column_mapping.map_columns(df, SINK, SINK_TYPES)
    assert out.columns == [
        "id",
        "small",
        "uid",
        "id_uuid",
        "day",
        "amount",
        "_cf_dlq_raw",
        "_cf_dlq_topic",
        "_cf_dlq_partition",
        "_cf_dlq_offset",
        "_cf_dlq_timestamp",
        ERROR,
    ]
    actual = out.select(
        "id",
        "small",
        "uid",
        F.col("id_uuid"),
        F.col("day").cast("string").alias("day"),
        F.col("amount").cast("string").alias("amount"),
        "_cf_dlq_raw",
        "_cf_dlq_offset",
        ERROR,
    )
    expected = spark.createDataFrame(
        [
            (UID, 200, UID.lower(), UID.lower(), "2026-01-02", "12.35", None, None, None),
            (
                "x",
                300,
                None,
                "x",
                None,
                None,
                '{"id": "x", "n": 300}',
                1,
                "column 'small': cannot write '300' to UInt8",
            ),
            ("y", -1, None, "y", None, None, '{"id": "y", "n": -1}', 2, "column 'small': cannot write '-1' to UInt8"),
            (
                "z",
                None,
                None,
                "z",
                None,
                None,
                '{"id": "z", "price": 123456}',
                3,
                "column 'id_uuid': cannot write 'z' to Nullable(UUID)",
            ),
            (None, None, None, None, None, None, "oops", 4, "invalid JSON"),
        ],
        "id string, small long, uid string, id_uuid string, day string, amount string, _cf_dlq_raw string, "
        f"_cf_dlq_offset long, {ERROR} string",
    )
    assertDataFrameEqual(actual, expected)


def test_check_columns_finds_the_same_dead_letters_before_dedup(spark):
    df = transforms.parse_events(
        records(spark, ['{"id": "a", "n": 255}', '{"id": "b", "n": 256}']), [Field("id", "string"), Field("n", "int")]
    )
    actual = column_mapping.check_columns(df, [SinkColumn("n", "small", "UInt8")], {"n": "int"}).select("id", ERROR)
    expected = spark.createDataFrame(
        [("a", None), ("b", "column 'small': cannot write '256' to UInt8")], f"id string, {ERROR} string"
    )
    assertDataFrameEqual(actual, expected)


@pytest.mark.fast
@pytest.mark.parametrize(
    ("field_type", "column_type", "needs"),
    [("int", "Int64", False), ("int", "UInt8", True), ("uuid", "String", False), ("json", "JSON", True)],
)
def test_needs_check_follows_the_field_type_table(field_type, column_type, needs):
    assert column_mapping.needs_check(field_type, column_type) is needs
