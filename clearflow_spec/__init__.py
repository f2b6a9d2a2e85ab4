"""ClearFlow's rules: the pipeline spec and its field types, the limits, the connections' description, the
sizing and pace rules, and the protocol the engine, the worker and the web app speak (Redis keys, records).

Spark-free and Django-free on purpose (tests/test_layers.py): the web app, the worker, the CLI and the client
wheel import these, and the engine (`spark_jobs`) is built on them.
"""
