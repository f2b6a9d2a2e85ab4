"""The job log's batch lines in words: what a person reads instead of the metrics record's JSON."""

from __future__ import annotations

import json

import pytest

from webapp.pipelines.job_log import batch_words, job_log_lines

pytestmark = pytest.mark.fast


def record_line(**values) -> str:
    record = {
        "batch_id": 7,
        "input_rows": 149_114,
        "batch_duration_ms": 53_712,
        "duplicates_dropped": 13_449,
        "rows_written": 135_665,
        "dead_letters": 0,
        "filtered_out": 0,
        "late_rows_dropped": 0,
        **values,
    }
    return f"2026-11-25 15:01:03,076 INFO clearflow.metrics {json.dumps(record, sort_keys=True)}"


def test_a_batch_line_reads_as_a_sentence_and_keeps_its_raw_text():
    line = record_line()
    assert batch_words(line) == (
        "15:01:03 batch 7: 149,114 events in 53.7 s, 13,449 duplicates dropped, 135,665 rows written"
    )
    (shown,) = job_log_lines([line])
    assert shown.words is not None and shown.text == line


def test_what_happened_to_the_other_events_is_named_only_when_it_happened():
    words = batch_words(record_line(duplicates_dropped=0, filtered_out=12, dead_letters=1, late_rows_dropped=3))
    assert words == (
        "15:01:03 batch 7: 149,114 events in 53.7 s, 12 filtered out, 3 late events dropped, 135,665 rows written, "
        "1 dead letter"
    )


def test_other_lines_stay_as_they_are():
    lines = ["2026-11-25 15:01:03,076 INFO clearflow.run pipeline p started", "26/11/25 15:00:59 WARN Executor: x",
             "2026-11-25 15:01:03,076 INFO clearflow.metrics {not json"]  # fmt: skip
    assert [line.words for line in job_log_lines(lines)] == [None, None, None]
