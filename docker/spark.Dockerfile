# Spark master and workers, for the pipelines' executors: the same Python base and the same pyspark as the app
# image (installed from pyproject.toml's pin, so one Spark version everywhere), run from pyspark's own
# `spark-class`. The executors' Python workers import the spark_jobs package and its clients, installed with it;
# the jobs' jars (Kafka connector, engine, hadoop-aws) come from the driver (`spark-submit --jars`).
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm
FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/clearflow
COPY pyproject.toml README.md ./
COPY clearflow_spec ./clearflow_spec
COPY spark_jobs ./spark_jobs
COPY webapp ./webapp
COPY worker ./worker
COPY localstack ./localstack
COPY clearflow ./clearflow
RUN pip install . && useradd --system --create-home spark
ENV PYTHONPATH=/opt/clearflow
USER spark
