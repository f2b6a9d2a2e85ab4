"""The systems ClearFlow talks to: Redis/Celery, the default Kafka and ClickHouse, Spark.

The Kafka and ClickHouse addresses here are the local stack's (and docker-compose's) defaults: the health
check watches them and the wizard offers them. Users' own clusters are saved as connections instead.
"""

from __future__ import annotations

from webapp.config.env import env_int, env_str

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")

CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", REDIS_URL)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

KAFKA_BOOTSTRAP_SERVERS = env_str("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")

CLICKHOUSE_HOST = env_str("CLICKHOUSE_HOST", "127.0.0.1")
CLICKHOUSE_PORT = env_int("CLICKHOUSE_PORT", 8123)
CLICKHOUSE_USER = env_str("CLICKHOUSE_USER", "default")
CLICKHOUSE_PASSWORD = env_str("CLICKHOUSE_PASSWORD", "")

# local[N] runs the job in the worker's machine; spark://host:7077 submits to a cluster.
SPARK_MASTER = env_str("SPARK_MASTER", "local[2]")
