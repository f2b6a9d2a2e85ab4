"""ClearFlow's streaming engine: Kafka -> parse -> dead letters -> dedup -> filter -> transforms -> ClickHouse.

Built on the rules (`clearflow_spec`: the spec, the types, the limits, the sizing and the protocol, none of which
imports Spark). The modules here run the job: its session, source, decoders, dedup, join, sink, metrics and
standby, and the Java beside them.
"""
