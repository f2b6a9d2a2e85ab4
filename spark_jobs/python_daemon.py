"""Spark's Python worker daemon with the sink's modules already imported (`spark.python.daemon.module`).

Spark forks every Python worker from one daemon process; a worker imports what its task needs on its first
task. The sink's first micro-batch would wait for pyarrow, clickhouse-connect and the engine's modules in each
worker (seconds on a loaded 2-core machine); imported once here, before the fork, every worker has them at once.
"""

from __future__ import annotations

import clickhouse_connect  # noqa: F401 - preloaded for the forked workers
import pyarrow
import pyarrow.compute  # noqa: F401
from pyspark.daemon import manager

import spark_jobs.query  # noqa: F401 - the foreachBatch writer's module and its imports (spark_jobs.sink)

if __name__ == "__main__":
    manager()
