# Spark master and workers: the official Apache Spark image (same version as the pyspark pin) plus what the
# job's Python workers import: the spark_jobs package and its clients (confluent-kafka, clickhouse-connect).
FROM apache/spark:4.3.0-java17-python3
USER root
COPY spark_jobs /opt/clearflow/spark_jobs
RUN pip install --no-cache-dir confluent-kafka==2.16.1 clickhouse-connect==1.12.0 pyarrow==26.0.1 \
        pandas==2.3.3 pydantic==2.14.3 sqlglot==30.30.0 redis==8.1.0
ENV PYTHONPATH=/opt/clearflow
USER spark
