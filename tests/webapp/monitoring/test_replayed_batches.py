"""A micro-batch Spark runs again after a crash (same query, same batch id) is counted once: in the totals of
`/metrics` and of the pipeline page. A new query (a checkpoint started over) counts from its first batch.
The replay itself, by a real Spark job, is in tests/spark_jobs/test_metrics_replay.py."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.urls import reverse

from spark_jobs.metrics import MetricsPublisher
from tests.webapp.monitoring.test_metrics_endpoint import batch, pipeline, samples, scrape  # noqa: F401

pytestmark = pytest.mark.django_db


def totals(client, pipeline) -> tuple[float, float, str]:  # noqa: F811
    values = samples(scrape(client).content.decode())
    labels = {"pipeline_id": str(pipeline.pk), "pipeline": pipeline.name, "owner": pipeline.owner.get_username()}

    def value(name: str) -> float:
        return values[(name, frozenset(labels.items()))]

    page = client.get(reverse("pipelines:metrics", kwargs={"pk": pipeline.pk})).content.decode()
    return value("clearflow_pipeline_events_in_total"), value("clearflow_pipeline_batches_total"), page


def test_a_replayed_batch_counts_once(client, pipeline, redis_url, owner):  # noqa: F811
    client.force_login(owner)
    publisher = MetricsPublisher(pipeline.job_name, redis_url)
    for batch_id in (0, 1, 2):
        publisher.publish(replace(batch(batch_id), query_id="query-a"))
    assert totals(client, pipeline)[:2] == (300, 3)

    # The job died after writing batch 2 and before committing it: the next run runs batch 2 again.
    publisher.publish(replace(batch(2), query_id="query-a", batch_duration_ms=999))
    events_in, batches, page = totals(client, pipeline)
    assert (events_in, batches) == (300, 3)
    assert "<b>300</b><span>events in</span>" in page and "Totals over 3 batches" in page
    durations = [v for (name, _), v in samples(scrape(client).content.decode()).items() if "last_batch_dur" in name]
    assert durations == [0.999]  # the latest record is the replay's

    # Then batch 3 counts, and a checkpoint started over (a new query) counts from its batch 0.
    publisher.publish(replace(batch(3), query_id="query-a"))
    publisher.publish(replace(batch(0), query_id="query-b"))
    assert totals(client, pipeline)[:2] == (500, 5)
