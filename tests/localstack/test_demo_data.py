"""`make demo-data` gives a new user realistic events with duplicates to remove, on two topics."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from localstack import processes, service_defs
from localstack.demo_data import run

REPO_ROOT = Path(__file__).resolve().parents[2]


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


def _demo_data(bootstrap: str, *extra: str) -> subprocess.Popen[str]:
    """`make demo-data` as a user runs it (the Makefile calls `python -m localstack demo-data $(ARGS)`)."""
    return subprocess.Popen(
        [sys.executable, "-m", "localstack", "demo-data", "--bootstrap-servers", bootstrap, *extra],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_demo_data_stops_with_a_clear_message_when_the_broker_goes_away(tmp_path: Path) -> None:
    port = processes.free_port()
    bootstrap = f"127.0.0.1:{port}"
    with processes.ProcessGroup(tmp_path / "logs") as group:
        group.start(service_defs.kafka_broker(port=port, data_dir=tmp_path / "kafka"))
        demo = _demo_data(bootstrap, "--rate", "400", "--give-up-after", "5")
        try:
            assert demo.stdout is not None
            assert "producing to users" in demo.stdout.readline()
            assert "demo-data: 500 events" in demo.stdout.readline(), "it produced while the broker was up"
            group.stop_all()  # the broker goes away
            stopped = time.monotonic()
            _, stderr = demo.communicate(timeout=60)
            took = time.monotonic() - stopped
        finally:
            if demo.poll() is None:
                demo.kill()
                demo.wait()

    assert demo.returncode == 1
    assert f"demo-data: stopped: the Kafka broker at {bootstrap} has not answered for 5 s" in stderr
    assert "is `make up` still running?" in stderr
    assert took < 20, f"gave up {took:.1f} s after the broker stopped"
    assert stderr.count("\n") <= 2, f"one message, not a log of every reconnect:\n{stderr}"


def test_demo_data_without_a_broker_says_how_to_start_one() -> None:
    bootstrap = f"127.0.0.1:{processes.free_port()}"  # nothing listens there
    demo = _demo_data(bootstrap, "--give-up-after", "3")
    _, stderr = demo.communicate(timeout=30)

    assert demo.returncode == 1
    assert f"cannot reach the Kafka broker at {bootstrap} within 3 s" in stderr
    assert "start it with `make up`" in stderr
