"""The join processor's state operations per event, by expiry mode (run by hand, not a test).

    nice -n 19 .venv/bin/python bench/join_state_ops.py --pairs 20000 --batches 6 --out var/bench/join-state-ops

Counts, unlike times, do not depend on what else runs on the machine: this runs io.clearflow.spark.Join alone (no
Kafka, no dedup, no sink: parquet files in, Spark's noop sink out) over the same events in each mode of
`spark_jobs.join.JOIN_EXPIRY_CONF`, and prints per batch what Spark's RocksDB state store reports for the join
operator: point reads (`rocksdbGetCount`), writes and deletes (`rocksdbPutCount`), bytes read and written, block
cache misses, and the operator's update time. Each batch brings `--pairs` new orders and the payments of the
previous batch's orders (a match with an order the join holds, as in bench/join_bench.py where a payment comes up
to 60 s after its order). After the last batch the window (`--window-s`) is left to pass and one more batch of a
few events runs: the expiry of everything held, counted the same way.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spark_jobs.join import JOIN_EXPIRY_CONF
from spark_jobs.session import build_session, state_store_conf

SCHEMA = (
    "_cf_join_high long, _cf_join_low long, _cf_side int, _cf_join_time long, _cf_row_id long, _cf_arrival long, "
    "_cf_matched boolean, left struct<order_id:string,amount:double>, "
    "right struct<payment_id:string,order_id:string,paid:double>, _cf_error string"
)
COLUMNS = ["_cf_side", "_cf_join_time", "_cf_row_id", "_cf_arrival", "_cf_matched", "left", "right", "_cf_error"]
COUNTERS = (
    "rocksdbGetCount",
    "rocksdbPutCount",
    "rocksdbTotalBytesRead",
    "rocksdbTotalBytesWritten",
    "rocksdbReadBlockCacheMissCount",
)


def rows(batch: int, pairs: int, now_us: int, *, orders: bool = True) -> list[tuple[Any, ...]]:
    """Batch `batch`'s orders (unless not `orders`) and the payments of batch - 1's orders (keys: the order
    number twice)."""
    out: list[tuple[Any, ...]] = []
    for i in range(batch * pairs, (batch + 1) * pairs) if orders else ():
        out.append((i, -i, 0, now_us, i, None, None, (f"o{i}", 1.0), None, None))
    for i in range((batch - 1) * pairs, batch * pairs) if batch else ():
        out.append((i, -i, 1, now_us, 10**12 + i, None, None, None, (f"p{i}", f"o{i}", 1.0), None))
    return out


def run(spark: Any, source: Path, checkpoint: Path, window_s: int) -> list[dict[str, Any]]:
    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source))
    jvm = spark._jvm
    expiry = spark.conf.get(JOIN_EXPIRY_CONF)
    jdf = jvm.io.clearflow.spark.Join.join(
        df._jdf, "_cf_join_high", "_cf_join_low", COLUMNS, window_s, False, expiry == "ttl"
    )
    query = (
        ClassicDataFrame(jdf, spark)
        .writeStream.format("noop")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    figures = []
    for progress in query.recentProgress:
        op = progress.stateOperators[0]
        custom = dict(op.customMetrics)
        figures.append(
            {
                "batch": progress.batchId,
                "events": progress.numInputRows,
                "rows_updated": op.numRowsUpdated,
                "rows_removed": op.numRowsRemoved,
                "updates_ms": op.allUpdatesTimeMs,
                "removals_ms": op.allRemovalsTimeMs,
                **{name: int(custom.get(name, 0)) for name in COUNTERS},
            }
        )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20_000, help="new orders per batch")
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--window-s", type=int, default=60)
    parser.add_argument("--modes", default="timers,ttl")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    spark = build_session(
        app_name="join-state-ops",
        master="local[2]",
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    for key, value in state_store_conf().items():
        spark.conf.set(key, value)
    work = Path(tempfile.mkdtemp(prefix="join-state-ops-"))
    results: dict[str, Any] = {}
    for mode in args.modes.split(","):
        spark.conf.set(JOIN_EXPIRY_CONF, mode)
        source, checkpoint = work / mode / "in", work / mode / "ckpt"
        now_us = int(time.time() * 1e6)
        for batch in range(args.batches + 1):  # the last: payments only, for the last orders
            data = rows(batch, args.pairs, now_us, orders=batch < args.batches)
            spark.createDataFrame(data, SCHEMA).coalesce(1).write.parquet(str(source / f"b{batch:03d}"))
        # One directory per batch: maxFilesPerTrigger counts files, so each batch's one file is a micro-batch.
        flat = work / mode / "flat"
        flat.mkdir()
        for i, part in enumerate(sorted(source.glob("b*/part-*.parquet"))):
            part.rename(flat / f"{i:03d}.parquet")
        load = run(spark, flat, checkpoint, args.window_s)
        time.sleep(args.window_s + 2)
        spark.createDataFrame(rows(10**6, 1, now_us, orders=True)[:1], SCHEMA).coalesce(1).write.parquet(
            str(work / mode / "x")
        )
        for part in (work / mode / "x").glob("part-*.parquet"):
            part.rename(flat / "999.parquet")
        expiry = run(spark, flat, checkpoint, args.window_s)
        results[mode] = {"load": load, "expiry": expiry}
        for figure in load + expiry:
            print(mode, json.dumps(figure), flush=True)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "summary.json").write_text(json.dumps(results, indent=1))
    spark.stop()


if __name__ == "__main__":
    main()
