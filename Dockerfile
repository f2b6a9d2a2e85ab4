# The ClearFlow application image: the web app (gunicorn), the Celery worker and beat, and the Spark driver.
# Built by the same install steps as `make install`: a build stage with a JDK and Maven installs the Python
# packages (pyspark at the pin in pyproject.toml) into a venv and resolves and builds the engine's jars into it
# (`python -m localstack jars`: the Kafka connector, the Protobuf decoder, clearflow-engine, hadoop-aws); the
# runtime stage has a JRE and that venv (gcc and libkrb5-dev build the gssapi package, libgssapi-krb5-2 runs it).
# PYTHON_IMAGE is the one base of both stages and of docker/spark.Dockerfile (a build argument, so a check can
# build on a local base).
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jdk-headless maven gcc libkrb5-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md manage.py ./
COPY clearflow_spec ./clearflow_spec
COPY spark_jobs ./spark_jobs
COPY webapp ./webapp
COPY worker ./worker
COPY localstack ./localstack
COPY clearflow ./clearflow
COPY frontend ./frontend
RUN python -m venv /opt/clearflow/venv \
 && /opt/clearflow/venv/bin/pip install . \
 && /opt/clearflow/venv/bin/python -m localstack jars

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    CLEARFLOW_VAR_DIR=/var/lib/clearflow DJANGO_STATIC_ROOT=/srv/static PATH=/opt/clearflow/venv/bin:$PATH
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps libgssapi-krb5-2 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/clearflow/venv /opt/clearflow/venv
WORKDIR /app
COPY --from=build /app ./
# The uid is the Spark image's (docker/spark.Dockerfile): the driver here and the executors there write the same
# checkpoint directory (a volume both mount, owned by this user from the image's mount point).
RUN useradd --system --uid 10001 --home /var/lib/clearflow clearflow \
 && mkdir -p /var/lib/clearflow /srv/static /var/lib/clearflow-checkpoints \
 && chown clearflow /var/lib/clearflow-checkpoints \
 && DJANGO_SECRET_KEY=build CLEARFLOW_ENCRYPTION_KEY=bm90LWEtcmVhbC1rZXktb25seS1mb3ItYnVpbGRpbmc9 \
    python manage.py collectstatic --noinput \
 && chown -R clearflow /var/lib/clearflow
USER clearflow
EXPOSE 8000
CMD ["gunicorn", "webapp.config.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--threads", "4"]
