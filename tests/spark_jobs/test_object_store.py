"""Checkpoints on object storage: the S3A settings a job gets, and the jars it gets them with."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pyspark
import pytest

from localstack import jars
from spark_jobs import object_store

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`

REPO = Path(__file__).resolve().parents[2]


def test_an_s3_compatible_endpoint_gets_path_style_plain_http_and_a_region_and_no_secret_in_spark_settings() -> None:
    env = {
        "CLEARFLOW_S3_ENDPOINT": "http://127.0.0.1:9000",
        "AWS_ACCESS_KEY_ID": "id",
        "AWS_SECRET_ACCESS_KEY": "s3cr3t",
    }
    conf = object_store.spark_conf(env)
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "us-east-1"
    assert "s3cr3t" not in repr(conf) and "id" not in conf.values()  # secrets are set in-process only
    assert object_store.credential_conf(env) == {"fs.s3a.access.key": "id", "fs.s3a.secret.key": "s3cr3t"}


def test_on_aws_without_keys_the_chain_and_instance_role_are_left_to_s3a() -> None:
    conf = object_store.hadoop_conf({"AWS_REGION": "eu-west-1"})
    assert "fs.s3a.endpoint" not in conf and conf["fs.s3a.path.style.access"] == "false"
    assert conf["fs.s3a.endpoint.region"] == "eu-west-1"
    assert object_store.credential_conf({}) == {}
    temporary = object_store.credential_conf(
        {"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b", "AWS_SESSION_TOKEN": "t"}
    )
    assert temporary["fs.s3a.aws.credentials.provider"] == object_store.TEMPORARY_PROVIDER


def test_locations_split_into_bucket_and_key_prefix() -> None:
    assert object_store.bucket_of("s3a://clearflow/checkpoints/pipeline-3") == "clearflow"
    assert object_store.key_prefix("s3a://clearflow/checkpoints/pipeline-3") == "checkpoints/pipeline-3/"
    assert object_store.s3a_uri("s3://b/p") == "s3a://b/p" and not object_store.is_object_store("/var/ck")


def test_hadoop_aws_matches_the_hadoop_inside_the_pinned_pyspark() -> None:
    pinned = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"pyspark=={jars.SPARK_VERSION}" in pinned
    shipped = {p.name for p in (Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar")}
    assert shipped == {f"hadoop-client-api-{jars.HADOOP_VERSION}.jar"}
    [aws] = jars.BUNDLES[jars.OBJECT_STORE_BUNDLE]
    assert aws == f"org.apache.hadoop:hadoop-aws:{jars.HADOOP_VERSION}"
    assert re.fullmatch(r"\d+\.\d+\.\d+", jars.S3PROXY_VERSION)
