"""Checkpoints on object storage: Spark's S3A file system (`s3a://bucket/prefix`), its settings and its errors.

A job whose checkpoint is an `s3a://` URI gets Hadoop's S3A file system and its AWS SDK (the `hadoop-aws` bundle,
`spark_jobs.jars.object_store_jars`) and these settings, all from the job's environment (the worker's):

- `CLEARFLOW_S3_ENDPOINT`: an S3-compatible server (`http://127.0.0.1:9000`: the local stack's S3Proxy); unset on
  AWS itself. An `http://` endpoint turns TLS off.
- `CLEARFLOW_S3_PATH_STYLE_ACCESS`: `true` for servers that take the bucket in the path (S3Proxy, MinIO); the
  default is true when an endpoint is set, false on AWS (virtual-host style).
- `CLEARFLOW_S3_REGION` (else `AWS_REGION`): the bucket's region; us-east-1 for an S3-compatible server.
- Credentials: `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` (and `AWS_SESSION_TOKEN`) from the environment,
  else S3A's own chain, which ends with the host's instance role (EC2 instance profile / ECS task role). Keys
  given in the environment are set into the session's Hadoop configuration inside the driver (the executors get
  them with it): never on a command line, and hidden from Spark's UI by `spark.redaction.regex`.

No Spark import here: the worker builds the settings without a JVM.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

ENDPOINT_ENV = "CLEARFLOW_S3_ENDPOINT"
PATH_STYLE_ENV = "CLEARFLOW_S3_PATH_STYLE_ACCESS"
REGION_ENV = "CLEARFLOW_S3_REGION"
# The AWS SDK's own names (its default chain reads them too): Hadoop key -> environment variable.
CREDENTIAL_ENV = {
    "fs.s3a.access.key": "AWS_ACCESS_KEY_ID",
    "fs.s3a.secret.key": "AWS_SECRET_ACCESS_KEY",
    "fs.s3a.session.token": "AWS_SESSION_TOKEN",
}
TEMPORARY_PROVIDER = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
COMPATIBLE_SERVER_REGION = "us-east-1"  # what S3-compatible servers accept; the SDK insists on a region
SCHEMES = ("s3a://", "s3://", "s3n://")


def is_object_store(uri: str) -> bool:
    """Whether `uri` is on S3 (s3a://; s3:// and s3n:// are read as s3a://)."""
    return uri.startswith(SCHEMES)


def s3a_uri(uri: str) -> str:
    """The same location with the scheme Hadoop's S3A file system registers (`s3a://`)."""
    for scheme in SCHEMES:
        if uri.startswith(scheme):
            return "s3a://" + uri.removeprefix(scheme)
    return uri


def bucket_of(uri: str) -> str:
    return urlsplit(s3a_uri(uri)).netloc


def key_prefix(uri: str) -> str:
    """The object keys' prefix of a location (`s3a://bucket/a/b` -> `a/b/`)."""
    path = urlsplit(s3a_uri(uri)).path.strip("/")
    return f"{path}/" if path else ""


def endpoint(env: Mapping[str, str] | None = None) -> str:
    return (env if env is not None else os.environ).get(ENDPOINT_ENV, "").strip()


def hadoop_conf(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The S3A settings without secrets (Hadoop keys, no `spark.hadoop.` prefix)."""
    env = env if env is not None else os.environ
    url = endpoint(env)
    conf: dict[str, str] = {}
    if url:
        conf["fs.s3a.endpoint"] = url
        conf["fs.s3a.connection.ssl.enabled"] = "false" if url.startswith("http://") else "true"
    path_style = env.get(PATH_STYLE_ENV, "").strip().lower()
    conf["fs.s3a.path.style.access"] = path_style if path_style in ("true", "false") else str(bool(url)).lower()
    region = env.get(REGION_ENV) or env.get("AWS_REGION") or (COMPATIBLE_SERVER_REGION if url else "")
    if region:
        conf["fs.s3a.endpoint.region"] = region
    # A state store commit renames nothing on S3A (Spark writes checkpoint files through its own manager), so
    # a failing write should fail in seconds, not after S3A's default 7 attempts with back-off.
    conf["fs.s3a.attempts.maximum"] = "3"
    conf["fs.s3a.retry.limit"] = "3"
    # Uploads buffered in memory, not in local files: S3A sits on the driver's class path, where the engine's local
    # file system (spark_jobs.pipeline.IN_PROCESS_LOCAL_FILES) is not; checkpoint files are small.
    conf["fs.s3a.fast.upload.buffer"] = "bytebuffer"
    return conf


def spark_conf(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The S3A settings as Spark settings (`spark.hadoop.*`): none of them a secret."""
    return {f"spark.hadoop.{key}": value for key, value in hadoop_conf(env).items()}


def credential_conf(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The keys from the environment, as Hadoop settings (set in-process: `set_credentials`); {} when none are
    given, which leaves S3A's chain (environment, then the instance role) to find them."""
    env = env if env is not None else os.environ
    conf = {key: env[name] for key, name in CREDENTIAL_ENV.items() if env.get(name)}
    if "fs.s3a.access.key" not in conf or "fs.s3a.secret.key" not in conf:
        return {}
    if "fs.s3a.session.token" in conf:
        conf["fs.s3a.aws.credentials.provider"] = TEMPORARY_PROVIDER
    return conf


def set_credentials(spark: object, env: Mapping[str, str] | None = None) -> None:
    """Put the environment's keys into the session's Hadoop configuration (the driver's, which the state store's
    tasks carry to the executors), before the first checkpoint access."""
    conf = credential_conf(env)
    if not conf:
        return
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[attr-defined]
    for key, value in conf.items():
        hadoop.set(key, value)


__all__ = [
    "ENDPOINT_ENV",
    "PATH_STYLE_ENV",
    "REGION_ENV",
    "bucket_of",
    "credential_conf",
    "hadoop_conf",
    "is_object_store",
    "key_prefix",
    "s3a_uri",
    "set_credentials",
    "spark_conf",
]
