"""The SDK (and so the `clearflow` command) follows a `202 Accepted` to its answer: what the server's worker reads
(inferred fields, a spec's live check) comes back as if it had come at once, and its error as any error does."""

from __future__ import annotations

import pytest

from clearflow import Client
from clearflow.errors import RefusedError
from tests.webapp.conftest import orders_spec


@pytest.mark.django_db(transaction=True)
def test_the_sdk_waits_for_the_answer_of_an_accepted_request(
    server, token, monkeypatch, kafka_conn, ch_conn, topics, clickhouse_target
):
    spec = orders_spec(topics.orders, clickhouse_target.database)
    body = {"kafka_connection": kafka_conn.pk, "clickhouse_connection": ch_conn.pk, "spec": spec, "check_live": True}
    with Client(server, token) as client:
        fields = client.api.post(f"/connections/kafka/{kafka_conn.pk}/infer-schema/", {"topics": [topics.orders]})
        assert fields["sampled"] == 20 and "order_id" in {field["path"] for field in fields["fields"]}
        assert client.api.post("/pipelines/validate/", body)["valid"] is True

        monkeypatch.setattr("webapp.core.queue.heavy_request_run", lambda *, request_id: False)  # no worker
        with pytest.raises(RefusedError) as refused:
            client.api.post("/pipelines/validate/", body)
    assert refused.value.message == "The worker could not be reached, so the events were not read: try again shortly."
