"""Where the engine finds its jars: Spark's Kafka connector (resolved) and ClearFlow's own Java code (built from
`spark_jobs/jvm`), both at install time, never downloaded or compiled at start.

`make install` (`python -m localstack jars`) resolves each Java bundle into `<jars root>/<bundle>/`. The root is
`$CLEARFLOW_JARS_DIR`, else `<sys.prefix>/share/clearflow/jars` (next to the Python packages of the venv or the
image). This module is the one definition of that place: `localstack.jars` imports it. No pyspark import, so
a worker can build a `spark-submit --jars` list without Spark.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

JARS_DIR_ENV = "CLEARFLOW_JARS_DIR"
CONNECTOR_BUNDLE = "spark-kafka"
# ClearFlow's Protobuf decoder (spark_jobs/protobuf-jvm) and its dependencies, built by `make install`.
PROTOBUF_BUNDLE = "protobuf-decoder"
# AWS_MSK_IAM's login module and callback handler (aws-msk-iam-auth, with the AWS SDK it signs with). Beside the
# connector's kafka-clients in the same `--jars` list, so one class loader loads both: a handler loaded by another
# loader than kafka-clients fails with "is not an instance of AuthenticateCallbackHandler".
MSK_IAM_BUNDLE = "msk-iam"
ENGINE_BUNDLE = "clearflow-engine"  # the dedup StatefulProcessor (spark_jobs/jvm), compiled by `make install`
OBJECT_STORE_BUNDLE = "hadoop-aws"  # Hadoop's S3A file system and its AWS SDK (checkpoints on s3a://)


class ConnectorJarsMissing(RuntimeError):
    """Spark's Kafka connector is not installed where the job looks for it; the message says what to run."""


def jars_root() -> Path:
    return Path(os.environ.get(JARS_DIR_ENV) or Path(sys.prefix) / "share" / "clearflow" / "jars")


def bundle_jars(bundle: str) -> list[str]:
    """Absolute paths of one installed bundle's jars; ConnectorJarsMissing (naming what to run) when it has none."""
    directory = jars_root() / bundle
    found = sorted(str(path) for path in directory.glob("*.jar"))
    if not found:
        raise ConnectorJarsMissing(
            f"the engine's jars ({bundle}) are not installed in {directory}: run `make install` "
            f"(python -m localstack jars), or point ${JARS_DIR_ENV} at a directory holding {bundle}/*.jar"
        )
    return found


def connector_jars() -> list[str]:
    """Absolute paths of Spark's Kafka connector and its dependencies, MSK IAM's auth library, and ClearFlow's
    Protobuf decoder and its dependencies (for `spark.jars` or `spark-submit --jars`). ConnectorJarsMissing when
    one is missing."""
    return [*bundle_jars(CONNECTOR_BUNDLE), *bundle_jars(MSK_IAM_BUNDLE), *bundle_jars(PROTOBUF_BUNDLE)]


def engine_jars() -> list[str]:
    """The jar of ClearFlow's own Java code (the dedup processor); ConnectorJarsMissing when it was never built."""
    return bundle_jars(ENGINE_BUNDLE)


def job_jars() -> list[str]:
    """Every jar a pipeline job needs (`spark.jars` or `spark-submit --jars`): the connector and the engine."""
    return [*connector_jars(), *engine_jars()]


def object_store_jars() -> list[str]:
    """Hadoop's S3A file system and its AWS SDK, for a checkpoint on object storage (s3a://)."""
    return bundle_jars(OBJECT_STORE_BUNDLE)
