# Spark master and workers, for the pipelines' executors: the same Python base and the same pyspark as the app
# image (installed from pyproject.toml's pin, so one Spark version everywhere), run from pyspark's own
# `spark-class`. The executors' Python workers import the spark_jobs package and its clients, installed with it
# into the app image's venv path (/opt/clearflow/venv): the driver names its own interpreter for them
# (`spark.pyspark.python`), so both images must have it at the same path. The jobs' jars (Kafka connector, engine,
# hadoop-aws) come from the driver (`spark-submit --jars`). The user's uid is the app image's: the driver and the
# executors write the same checkpoint directory.
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm
FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1 PATH=/opt/clearflow/venv/bin:$PATH
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps libgssapi-krb5-2 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/clearflow
COPY pyproject.toml README.md ./
COPY clearflow_spec ./clearflow_spec
COPY spark_jobs ./spark_jobs
COPY webapp ./webapp
COPY worker ./worker
COPY localstack ./localstack
COPY clearflow ./clearflow
# A worker keeps its executors' files in SPARK_WORKER_DIR (by default inside pyspark's package, which the user
# cannot write: the worker exited at start).
# gcc and MIT Kerberos's headers only while pip builds the gssapi package (the spark_jobs package's dependencies
# are the app's); removed in the same layer.
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libkrb5-dev \
 && python -m venv /opt/clearflow/venv \
 && /opt/clearflow/venv/bin/pip install . \
 && apt-get purge -y --auto-remove gcc libkrb5-dev \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --create-home spark \
 && mkdir -p /var/lib/clearflow-checkpoints /var/lib/spark/work \
 && chown spark /var/lib/clearflow-checkpoints /var/lib/spark/work
ENV SPARK_WORKER_DIR=/var/lib/spark/work
USER spark
