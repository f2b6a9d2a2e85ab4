"""`make demo-data`: keep producing realistic user events, with duplicates, so there is something to clean.

The scenario (after the GlassFlow tutorial in the seeds): sign-up events arrive on topic `users` from the
web app; about 10% of them arrive again a little later — a producer retry on `users`, or the same sign-up
synced by the CRM onto a second topic `users_crm`. Same `event_id`, so a pipeline keyed on it removes them.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import signal
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

FIRST_NAMES = [
    "Ada",
    "Grace",
    "Linus",
    "Margaret",
    "Alan",
    "Barbara",
    "Ken",
    "Frances",
    "Dennis",
    "Radia",
    "Edsger",
    "Katherine",
    "Guido",
    "Hedy",
    "Tim",
    "Annie",
    "Donald",
    "Sophie",
    "Bjarne",
    "Mary",
]
LAST_NAMES = [
    "Lovelace",
    "Hopper",
    "Torvalds",
    "Hamilton",
    "Turing",
    "Liskov",
    "Thompson",
    "Allen",
    "Ritchie",
    "Perlman",
    "Dijkstra",
    "Johnson",
    "van Rossum",
    "Lamarr",
    "Berners-Lee",
    "Easley",
    "Knuth",
    "Wilson",
]
DOMAINS = ["example.com", "mail.example.org", "corp.example.net", "example.io"]
CITIES = [
    ("Berlin", "DE"),
    ("Lisbon", "PT"),
    ("Toronto", "CA"),
    ("Nairobi", "KE"),
    ("Osaka", "JP"),
    ("Austin", "US"),
    ("Lyon", "FR"),
    ("Krakow", "PL"),
    ("Bogota", "CO"),
    ("Pune", "IN"),
]
PLANS = ["free", "pro", "team", "enterprise"]
# How long the broker may be unreachable before demo-data stops (a broker restart takes a few seconds).
GIVE_UP_AFTER_SECONDS = 30.0


def make_event(rng: random.Random) -> dict[str, object]:
    first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
    city, country = rng.choice(CITIES)
    return {
        "event_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "user_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "name": f"{first} {last}",
        "email": f"{first}.{last}{rng.randint(1, 999)}@{rng.choice(DOMAINS)}".lower().replace(" ", ""),
        "created_at": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "plan": rng.choice(PLANS),
        "age": rng.randint(18, 80),
        "address": {"city": city, "country": country},
        "device": {
            "type": rng.choice(["web", "ios", "android"]),
            "version": f"{rng.randint(1, 9)}.{rng.randint(0, 20)}",
        },
        "source": "web",
    }


@dataclass(order=True)
class PendingDuplicate:
    due: float
    topic: str = field(compare=False)
    event: dict[str, object] = field(compare=False)


def run(
    *,
    bootstrap_servers: str,
    topic: str = "users",
    second_topic: str = "users_crm",
    rate: float = 20.0,
    count: int | None = None,
    duplicate_ratio: float = 0.1,
    duplicate_delay: tuple[float, float] = (2.0, 30.0),
    partitions: int = 3,
    seed: int | None = None,
    give_up_after: float = GIVE_UP_AFTER_SECONDS,
) -> dict[str, int]:
    """Produce `count` events (forever if None) at `rate`/s; returns how many went where.

    Raises BrokerGone when the broker cannot be reached for `give_up_after` seconds (the producer keeps
    retrying until then, so a broker restart is ridden out)."""
    from confluent_kafka import Producer

    ensure_topics(bootstrap_servers, [topic, second_topic], partitions, timeout=give_up_after)
    watch = BrokerWatch(bootstrap_servers, give_up_after)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap_servers,
            "enable.idempotence": True,
            "error_cb": watch.on_error,
            # librdkafka would otherwise print every failed reconnect on stderr; BrokerWatch says it once.
            "log_level": 0,
        }
    )
    rng = random.Random(seed)
    pending: list[PendingDuplicate] = []
    stats = {"events": 0, "duplicates": 0, topic: 0, second_topic: 0}
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    previous = signal.signal(signal.SIGTERM, stop)
    interval = 1.0 / rate if rate > 0 else 0.0
    next_send = time.monotonic()
    try:
        while not stopping and (count is None or stats["events"] < count or pending):
            now = time.monotonic()
            while pending and (pending[0].due <= now or (count is not None and stats["events"] >= count)):
                duplicate = heapq.heappop(pending)
                _send(producer, duplicate.topic, duplicate.event, watch)
                stats["duplicates"] += 1
                stats[duplicate.topic] += 1
            watch.check()
            if count is not None and stats["events"] >= count:
                continue
            if interval and now < next_send:
                time.sleep(min(next_send - now, 0.05))
                continue
            next_send += interval
            event = make_event(rng)
            _send(producer, topic, event, watch)
            stats["events"] += 1
            stats[topic] += 1
            if rng.random() < duplicate_ratio:
                # A retry from the same producer, or the same sign-up synced by the CRM onto the second topic.
                duplicate_topic = topic if rng.random() < 0.6 else second_topic
                copy = dict(event, source="crm") if duplicate_topic == second_topic else dict(event)
                delay = rng.uniform(*duplicate_delay)
                heapq.heappush(pending, PendingDuplicate(time.monotonic() + delay, duplicate_topic, copy))
            if stats["events"] % 500 == 0:
                print(f"demo-data: {stats['events']} events, {stats['duplicates']} duplicates sent", flush=True)
            producer.poll(0)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        # With the broker gone there is nobody to flush to: do not wait for it a second time.
        producer.flush(0 if watch.down_since is not None else 10)
    return stats


class BrokerGone(RuntimeError):
    """The broker was unreachable for longer than the bounded retry; the message says what to do."""


class BrokerWatch:
    """Tracks since when the broker has been unreachable, from the producer's error and delivery callbacks."""

    def __init__(self, bootstrap_servers: str, give_up_after: float) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.give_up_after = give_up_after
        self.down_since: float | None = None
        self.last_error = ""

    def on_error(self, error: object) -> None:
        from confluent_kafka import KafkaError

        # Connection-level errors only: a transient error on a live broker is cleared by the next delivery.
        if error.code() in {KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT, KafkaError._RESOLVE}:  # type: ignore[attr-defined]
            self.last_error = error.str()  # type: ignore[attr-defined]
            if self.down_since is None:
                self.down_since = time.monotonic()

    def on_delivery(self, error: object, message: object) -> None:
        if error is None:
            self.down_since = None

    def check(self) -> None:
        if self.down_since is not None and time.monotonic() - self.down_since > self.give_up_after:
            raise BrokerGone(
                f"the Kafka broker at {self.bootstrap_servers} has not answered for {self.give_up_after:.0f} s "
                f"({self.last_error}); is `make up` still running?"
            )


def _send(producer: object, topic: str, event: dict[str, object], watch: BrokerWatch) -> None:
    from confluent_kafka import KafkaException

    while True:
        try:
            producer.produce(  # type: ignore[attr-defined]
                topic,
                key=str(event["user_id"]).encode(),
                value=json.dumps(event).encode(),
                on_delivery=watch.on_delivery,
            )
            return
        except BufferError:
            # The local queue is full because nothing is delivered: wait for the broker, or give up in check().
            producer.poll(0.5)  # type: ignore[attr-defined]
            watch.check()
        except KafkaException as error:
            raise BrokerGone(f"cannot send to {topic}: {error}") from error


def ensure_topics(bootstrap_servers: str, topics: list[str], partitions: int, *, timeout: float = 10) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap_servers, "log_level": 0})
    try:
        existing = admin.list_topics(timeout=timeout).topics
    except KafkaException as error:
        raise BrokerGone(
            f"cannot reach the Kafka broker at {bootstrap_servers} within {timeout:.0f} s ({error.args[0].str()}); "
            "start it with `make up`, or pass --bootstrap-servers"
        ) from error
    missing = [
        NewTopic(name, num_partitions=partitions, replication_factor=1) for name in topics if name not in existing
    ]
    if missing:
        for future in admin.create_topics(missing).values():
            future.result(timeout=10)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="make demo-data", description="Produce demo user events with duplicates.")
    parser.add_argument("--bootstrap-servers", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"))
    parser.add_argument("--topic", default="users")
    parser.add_argument("--second-topic", default="users_crm")
    parser.add_argument("--rate", type=float, default=20.0, help="new events per second (default 20)")
    parser.add_argument("--count", type=int, default=None, help="stop after this many new events")
    parser.add_argument("--duplicates", type=float, default=0.1, help="share re-sent as duplicates (default 0.1)")
    parser.add_argument(
        "--give-up-after",
        type=float,
        default=GIVE_UP_AFTER_SECONDS,
        help=f"stop when the broker has been unreachable this many seconds (default {GIVE_UP_AFTER_SECONDS:g})",
    )
    args = parser.parse_args(argv)
    print(
        f"demo-data: producing to {args.topic} and {args.second_topic} on {args.bootstrap_servers} "
        f"at {args.rate:g}/s, {args.duplicates:.0%} duplicates; Ctrl-C stops",
        flush=True,
    )
    try:
        stats = run(
            bootstrap_servers=args.bootstrap_servers,
            topic=args.topic,
            second_topic=args.second_topic,
            rate=args.rate,
            count=args.count,
            duplicate_ratio=args.duplicates,
            give_up_after=args.give_up_after,
        )
    except BrokerGone as error:
        print(f"demo-data: stopped: {error}", file=sys.stderr, flush=True)
        return 1
    print(f"demo-data: done, {json.dumps(stats)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
