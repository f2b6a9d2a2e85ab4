"""`make demo-data` gives a new user realistic events with duplicates to remove, on two topics."""

from __future__ import annotations

import json
from collections import Counter

from confluent_kafka import Consumer, TopicPartition

from localstack.demo_data import run


def _read_all(bootstrap: str, topic: str) -> list[dict[str, object]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{topic}", "enable.auto.commit": False})
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        events = []
        for partition in metadata.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            if high <= low:
                continue
            consumer.assign([TopicPartition(topic, partition, low)])
            while True:
                message = consumer.poll(5)
                assert message is not None and message.error() is None
                events.append(json.loads(message.value()))
                if message.offset() >= high - 1:
                    break
        return events
    finally:
        consumer.close()


def test_demo_data_sends_about_ten_percent_duplicates_across_two_topics(kafka_bootstrap: str) -> None:
    stats = run(
        bootstrap_servers=kafka_bootstrap,
        topic="demo_users",
        second_topic="demo_users_crm",
        rate=0,
        count=1000,
        duplicate_delay=(0.0, 0.01),
        seed=7,
    )
    users = _read_all(kafka_bootstrap, "demo_users")
    crm = _read_all(kafka_bootstrap, "demo_users_crm")

    assert stats["events"] == 1000
    assert len(users) + len(crm) == 1000 + stats["duplicates"]
    assert 60 <= stats["duplicates"] <= 140  # about 10%
    ids = Counter(event["event_id"] for event in users + crm)
    assert len(ids) == 1000
    assert sum(count - 1 for count in ids.values()) == stats["duplicates"]
    assert crm, "some duplicates arrive through the second topic"
    assert {event["event_id"] for event in crm} <= {event["event_id"] for event in users}
    sample = users[0]
    assert set(sample) >= {"event_id", "user_id", "name", "email", "created_at", "address", "device"}
    assert set(sample["address"]) == {"city", "country"}
