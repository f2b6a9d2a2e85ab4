"""The expected dedup state in the API's validation answers (`estimated_state`, see `state_size`), and the inputs
that plan it for a rate to come."""

from __future__ import annotations

from rest_framework import serializers


class PlannedRateInput(serializers.Serializer):
    """`events_per_second` and `unique_share`: size the state for a planned load instead of the topic's."""

    events_per_second = serializers.FloatField(
        required=False,
        min_value=0,
        max_value=10_000_000,
        help_text="Size the dedup state for this rate instead of the topic's recent rate (which is asked "
        "with check_live).",
    )
    unique_share = serializers.FloatField(
        required=False,
        min_value=0,
        max_value=1,
        help_text="With events_per_second: the share of events whose key is new within the window (default 1).",
    )


class EstimatedStateOutput(serializers.Serializer):
    events_per_second = serializers.FloatField()
    rate_source = serializers.ChoiceField(
        ["given", "advice", "topic"],
        help_text="given: events_per_second in the request; topic: the topics' recent rate (the larger of the last "
        "1 and 5 minutes, every event counted unique); advice: the key advice measured on the topic.",
    )
    window_seconds = serializers.IntegerField()
    unique_share = serializers.FloatField()
    keys = serializers.IntegerField(help_text="Keys the dedup state holds once the window is full.")
    capped_by_key_space = serializers.BooleanField()
    disk_bytes = serializers.IntegerField(help_text="The state's bytes on disk (RocksDB, under the checkpoint).")
    rocksdb_memory_mb = serializers.IntegerField(help_text="RocksDB's memory bound given to the job.")
    rocksdb_memory_bytes = serializers.IntegerField()
    driver_memory = serializers.CharField(help_text="The job's JVM heap, as Spark's --driver-memory takes it.")
    job_memory_bytes = serializers.IntegerField(help_text="The job's expected resident memory (RSS).")
    trigger_interval = serializers.CharField(
        help_text='How often the job runs a micro-batch ("5 seconds"): from the rate, a busy pipeline\'s batches '
        "back to back, a light one's about 500 events each (at most 5 s); rows reach ClickHouse within about that "
        "plus the batch's own time. CLEARFLOW_TRIGGER_INTERVAL sets it for every job."
    )
    fits = serializers.BooleanField(help_text="False: this machine cannot hold it (see `warnings`, path dedup.window).")
    free_disk_bytes = serializers.IntegerField(allow_null=True, help_text="Free at the checkpoint root; null: unknown.")
    memory_limit_bytes = serializers.IntegerField(allow_null=True)
