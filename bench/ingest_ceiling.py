"""The ingest ceiling of the engine (run by bench/engine_bench.py, not a test).

Runs the job's first half only: the Kafka source and the parse step (`from_json` in the JVM), into Spark's
`noop` sink, with no dedup and no ClickHouse write, on the same session settings as
`spark_jobs.run`. What the whole pipeline does per second can never exceed this figure on the same machine.

    python bench/ingest_ceiling.py --spec pipeline.json --checkpoint DIR [--master local[2]] [--conf K=V]

It logs the same `clearflow.metrics {...}` line per micro-batch as the job, so the benchmark reads both the
same way.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    sys.path.insert(0, str(REPO))
    from clearflow_spec.spec import parse_spec
    from spark_jobs import pipeline, session, transforms
    from spark_jobs.metrics import MetricsPublisher, ProgressRelay, SinkStats
    from spark_jobs.run import parse_args, spark_conf

    # The job's own command line (--checkpoint is required here; the trigger is always available-now).
    args = parse_args()
    if not args.checkpoint:
        raise SystemExit("--checkpoint is required")
    logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s %(message)s", stream=sys.stderr)
    logging.getLogger("py4j").setLevel(logging.WARNING)

    spec = parse_spec(Path(args.spec).read_text())
    conf = spark_conf(args)
    spark = session.build_session(app_name=f"ceiling-{spec.name}", master=args.master or "local[2]", conf=conf)
    spark.sparkContext.setLogLevel("WARN")
    query_name = f"ceiling-{spec.name}"
    ProgressRelay(spark, query_name, SinkStats(), MetricsPublisher(spec.name, None)).start()
    parsed = transforms.parse_events(pipeline.read_kafka(spark, spec), pipeline._fields(spec))
    query = (
        parsed.writeStream.queryName(query_name)
        .format("noop")
        .option("checkpointLocation", args.checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
