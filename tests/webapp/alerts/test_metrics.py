"""`/metrics` carries one `clearflow_alert_firing` sample per firing alert rule."""

from __future__ import annotations

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from tests.pipeline_states import walk_to
from tests.webapp.alerts.conftest import make_pipeline
from webapp.alerts import services
from webapp.pipelines.models import PipelineStatus

pytestmark = pytest.mark.django_db


def firing_samples(client) -> list[dict[str, str]]:
    response = client.get("/metrics", headers={"Authorization": "Bearer alerts-scrape"})
    assert response.status_code == 200
    return [
        sample.labels
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
        if sample.name == "clearflow_alert_firing" and sample.value == 1
    ]


def test_a_firing_rule_is_a_series_until_it_resolves(client, owner, settings, redis_url):
    settings.CLEARFLOW_METRICS_TOKEN = "alerts-scrape"
    settings.REDIS_URL = redis_url
    pipeline = make_pipeline(owner, name="watched")
    assert firing_samples(client) == []
    walk_to(pipeline, PipelineStatus.FAILED, message="boom")
    services.alerts_evaluate()
    assert firing_samples(client) == [
        {"pipeline_id": str(pipeline.pk), "pipeline": "watched", "owner": "owner", "rule": "pipeline_failed"}
    ]
    walk_to(pipeline, PipelineStatus.STOPPED)
    services.alerts_evaluate()
    assert firing_samples(client) == []
