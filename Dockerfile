# The ClearFlow application image: the web app (gunicorn), the Celery worker and beat, and the Spark driver.
FROM python:3.11.14-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    CLEARFLOW_VAR_DIR=/var/lib/clearflow DJANGO_STATIC_ROOT=/srv/static
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY spark_jobs ./spark_jobs
COPY webapp ./webapp
COPY worker ./worker
COPY localstack ./localstack
COPY frontend ./frontend
COPY manage.py ./
RUN pip install . \
 && useradd --system --home /var/lib/clearflow clearflow \
 && mkdir -p /var/lib/clearflow /srv/static \
 && DJANGO_SECRET_KEY=build CLEARFLOW_ENCRYPTION_KEY=bm90LWEtcmVhbC1rZXktb25seS1mb3ItYnVpbGRpbmc9 \
    python manage.py collectstatic --noinput \
 && chown -R clearflow /var/lib/clearflow
USER clearflow
EXPOSE 8000
CMD ["gunicorn", "webapp.config.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--threads", "4"]
