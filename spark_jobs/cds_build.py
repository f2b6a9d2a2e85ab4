"""Make the class-data archive (`spark_jobs.cds`): a short training run of what a job's start loads, under
-XX:ArchiveClassesAtExit. `python -m spark_jobs.cds_build [--force]`, run by `make install`; an install step of
its own, so the session (`spark_jobs.session`, which maps the archive) never needs the code that makes it."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from spark_jobs.cds import CDS_ENV, archive_path
from spark_jobs.session import build_session

log = logging.getLogger(__name__)


def _train(target: str) -> None:
    """What a job's start loads, on the path a job takes: a session with the Kafka connector, the plan of a
    pipeline's Kafka source (analysed, not run: no broker is needed), then the standby's rehearsal, which runs a
    made-up pipeline through parse, dedup on RocksDB and foreachBatch with Arrow. An archive trained on a `rate`
    source missed the Kafka connector's and the state store's classes, which every job loads."""
    from clearflow_spec.spec import parse_spec
    from spark_jobs.pipeline import build_stream
    from spark_jobs.source import read_kafka
    from spark_jobs.standby import REHEARSAL_SPEC, rehearse

    spark = build_session(
        app_name="clearflow-cds",
        master="local[2]",
        conf={"spark.driver.extraJavaOptions": f"-Xss32m -XX:ArchiveClassesAtExit={target}"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    spec = parse_spec(REHEARSAL_SPEC)
    build_stream(read_kafka(spark, spec), spec)._jdf.queryExecution().analyzed()
    rehearse(spark)
    spark.stop()


def build(*, force: bool = False) -> Path | None:
    """Make the archive (about 45 s) unless it exists; returns its path, or None when it could not be made."""
    path = archive_path()
    if path.is_file() and not force:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    env = {**os.environ, CDS_ENV: "0"}  # the training run must not map an older archive
    code = f"from spark_jobs.cds_build import _train; _train({str(tmp)!r})"
    # The JVM writes the archive when it exits, i.e. when this child process ends: wait for it, then rename.
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    if result.returncode != 0 or not tmp.is_file():
        log.warning("no class-data archive made: %s", result.stderr.strip()[-1000:])
        tmp.unlink(missing_ok=True)
        return None
    os.replace(tmp, path)
    return path


def main() -> int:
    logging.basicConfig(level="INFO", format="%(message)s")
    path = build(force="--force" in sys.argv)
    print(f"clearflow: class-data archive {path}" if path else "clearflow: no class-data archive (see above)")
    return 0  # never fails an install: jobs run without the archive, only slower to start


if __name__ == "__main__":
    sys.exit(main())
