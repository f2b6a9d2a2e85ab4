"""Demo-like user sign-up events with known duplicates, produced into the real test broker."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta


def user_events(count: int, *, duplicates: int, without_key: int = 0) -> list[dict]:
    """`count` events: `count - duplicates - without_key` distinct sign-ups, then `duplicates` exact repeats of
    the first ones (same event_id) and `without_key` events that lack `event_id`."""
    start = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    unique = count - duplicates - without_key
    events = []
    for i in range(unique):
        events.append(
            {
                "event_id": str(uuid.UUID(int=1000 + i, version=4)),
                "user_id": str(uuid.UUID(int=5000 + i, version=4)),
                "name": f"User {i}",
                "email": f"user{i}@example.com",
                "created_at": (start + timedelta(seconds=i)).isoformat().replace("+00:00", "Z"),
                "plan": ["free", "pro", "team"][i % 3],
                "age": 20 + i,
                "address": {"city": "Berlin", "country": "DE"},
            }
        )
    events += [dict(events[i]) for i in range(duplicates)]
    for i in range(without_key):
        extra = dict(events[i])
        extra.pop("event_id")
        events.append(extra)
    return events


def produce(bootstrap: str, topic: str, events: list[dict], *, partitions: int = 1) -> None:
    """Create `topic` and write `events` (keyed by user id)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
    for future in futures.values():
        future.result(timeout=10)
    if not events:
        return
    producer = Producer({"bootstrap.servers": bootstrap})
    for event in events:
        producer.produce(topic, key=str(event.get("user_id", "")).encode(), value=json.dumps(event).encode())
        producer.poll(0)
    assert producer.flush(10) == 0
