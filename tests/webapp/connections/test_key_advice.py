"""Key advice against the real broker: topics with a known share of duplicates re-sent at known
delays (record timestamps set explicitly), a key missing everywhere, an empty topic."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from clearflow_spec.connections import KafkaConnectionSpec
from clearflow_spec.sizing import BYTES_PER_KEY_ON_DISK
from webapp.connections.kafka_client import KafkaTopicNotFoundError
from webapp.connections.key_advice import analyze_duplicates

BASE = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
ORIGINALS = 9_000  # one every 100 ms: 900 s of events
SPACING_MS = 100
USERS = 3_000  # each user signs up three times: user_id repeats across different events
# Re-sent copies: (how many, delay). 1,000 of 10,000 events (10%); sorted, the 500th delay is 2 s, the
# 990th 30 s, the 999th 240 s: p50 2 s, p99 30 s, p99.9 and max 240 s -> the smallest offered window is 5m.
RESENDS = [(600, 2_000), (395, 30_000), (5, 240_000)]


@dataclass(frozen=True)
class Record:
    timestamp_ms: int
    value: dict
    partition: int


def produce(bootstrap: str, topic: str, records: list[Record], *, partitions: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, num_partitions=partitions)]).values():
        future.result(timeout=10)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for record in sorted(records, key=lambda r: r.timestamp_ms):
        producer.produce(
            topic, value=json.dumps(record.value).encode(), partition=record.partition, timestamp=record.timestamp_ms
        )
        producer.poll(0)
    assert producer.flush(30) == 0


def signups() -> list[Record]:
    base_ms = int(BASE.timestamp() * 1000)
    originals = []
    for i in range(ORIGINALS):
        at = base_ms + i * SPACING_MS
        value = {
            "event_id": str(uuid.UUID(int=i + 1, version=4)),
            "user_id": str(uuid.UUID(int=10**9 + i % USERS, version=4)),
            "plan": ["free", "pro", "team"][i % 3],
            "created_at": (BASE + timedelta(milliseconds=i * SPACING_MS)).isoformat().replace("+00:00", "Z"),
        }
        originals.append(Record(at, value, i % 2))
    resent = []
    index = 0
    for count, delay in RESENDS:
        for _ in range(count):
            original = originals[index * 7]  # spread over the stream
            # Half of the copies land on the other partition, as a producer keyed differently would.
            resent.append(Record(original.timestamp_ms + delay, original.value, (original.partition + index) % 2))
            index += 1
    return originals + resent


@pytest.fixture(scope="module")
def settings(kafka_bootstrap) -> KafkaConnectionSpec:
    return KafkaConnectionSpec(bootstrap_servers=kafka_bootstrap)


@pytest.fixture(scope="module")
def signups_topic(kafka_bootstrap) -> str:
    topic = f"signups_{uuid.uuid4().hex[:8]}"
    produce(kafka_bootstrap, topic, signups(), partitions=2)
    return topic


def test_share_delays_and_window_of_a_known_topic(settings, signups_topic):
    result = analyze_duplicates(settings, topics=[signups_topic], keys=["event_id"])
    assert result.complete and result.scanned == 10_000
    assert abs(result.duplicate_share - 0.10) <= 0.01
    assert result.distinct_keys == ORIGINALS
    assert result.missing_keys == 0
    assert abs(result.delay_ms.p50 - 2_000) <= 1_000
    assert abs(result.delay_ms.p99 - 30_000) <= 1_000
    assert abs(result.delay_ms.max - 240_000) <= 1_000
    assert result.recommended_window == "5m"
    assert not result.window_is_lower_bound
    assert result.reason.startswith("5m covers 99.9%")
    # 9,000 keys over about 19 minutes, held for 5 minutes: about 2,400 keys, 60 bytes each on disk (the sizing).
    assert 2_000 < result.estimated_state_keys < 3_000
    assert result.estimated_state_bytes == result.estimated_state_keys * BYTES_PER_KEY_ON_DISK
    assert result.state_store == "rocksdb"  # deprecated: the state is always in RocksDB
    assert [b.count for b in result.histogram] == [0, 600, 395, 5]  # <=1s, 1-10s, 10s-1min, 1-5min


def test_candidates_tell_a_real_key_from_one_that_merges_different_events(settings, signups_topic):
    result = analyze_duplicates(settings, topics=[signups_topic], keys=["event_id"])
    candidates = {c.field: c for c in result.candidates}
    assert set(candidates) == {"event_id", "user_id"}  # plan repeats, created_at is a time
    assert abs(candidates["event_id"].duplicate_share - 0.10) <= 0.01
    assert candidates["event_id"].differing == 0
    assert abs(candidates["user_id"].duplicate_share - 0.70) <= 0.01  # 10,000 events, 3,000 users
    assert candidates["user_id"].differing > 5_000


def test_event_time_basis_measures_delays_in_event_time(settings, signups_topic):
    # The copies carry the original's event time: in event time they are no later at all.
    result = analyze_duplicates(
        settings, topics=[signups_topic], keys=["event_id"], time_basis="event", event_time_field="created_at"
    )
    assert result.delay_ms.max == 0
    assert result.recommended_window == "1m"
    assert result.missing_time == 0


def test_a_short_scan_says_at_least(settings, kafka_bootstrap):
    topic = f"short_{uuid.uuid4().hex[:8]}"
    base_ms = int(BASE.timestamp() * 1000)
    records = [Record(base_ms + i * 1_000, {"id": i}, 0) for i in range(40)]
    records += [Record(base_ms + i * 1_000 + 5_000, {"id": i}, 0) for i in range(10)]
    produce(kafka_bootstrap, topic, records, partitions=1)
    result = analyze_duplicates(settings, topics=[topic], keys=["id"])
    assert result.duplicates == 10
    assert result.recommended_window == "1m"
    assert result.window_is_lower_bound  # 40 s of events cannot show a delay of 50 s
    assert result.reason.startswith("At least 1m")


def test_max_events_bounds_the_read(settings, signups_topic):
    result = analyze_duplicates(settings, topics=[signups_topic], keys=["event_id"], max_events=1_001)
    assert result.scanned == 1_001 and result.planned == 1_001 and result.complete


def test_a_key_missing_from_every_event_says_so(settings, signups_topic):
    result = analyze_duplicates(settings, topics=[signups_topic], keys=["order_ref"], max_events=2_000)
    assert result.missing_keys == result.scanned == 2_000
    assert result.duplicates == 0 and result.recommended_window is None
    assert "missing from every one of the 2,000 events" in result.reason


def test_an_empty_topic_answers_clearly(settings, kafka_bootstrap):
    topic = f"empty_{uuid.uuid4().hex[:8]}"
    produce(kafka_bootstrap, topic, [], partitions=2)
    result = analyze_duplicates(settings, topics=[topic], keys=["event_id"])
    assert result.scanned == 0 and result.complete
    assert result.recommended_window is None and result.delay_ms is None
    assert result.reason == "The topics hold no events: there is nothing to measure yet."


def test_the_time_budget_answers_with_what_was_read(settings, signups_topic):
    result = analyze_duplicates(settings, topics=[signups_topic], keys=["event_id"], time_budget=0.0)
    assert not result.complete
    assert result.scanned < 10_000
    assert "time budget ran out" in result.notes[0]


def test_unknown_topic(settings):
    with pytest.raises(KafkaTopicNotFoundError):
        analyze_duplicates(settings, topics=["no_such_topic_here"], keys=["event_id"])
