"""ClearFlow's streaming engine: Kafka -> parse -> dead letters -> dedup -> filter -> transforms -> ClickHouse.

`spark_jobs.spec` (the pipeline spec, no Spark import) is safe to import from anywhere; the other modules
import pyspark.
"""
