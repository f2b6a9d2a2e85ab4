"""Start time and memory of the local Apache Kafka broker: `python -m localstack.measure_broker [starts]`.

Starts the broker as `make up` and the tests do (`service_defs.kafka_broker`) on a fresh data directory
(storage formatted first) and again on the same directory, `starts` times each, and prints every run and the
medians: storage format time, time until the port opens and until it answers a metadata request, the RSS of
the JVM 3 s after that, and the time SIGTERM takes to stop it. Figures are in docs/local-stack.md.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from localstack import processes, service_defs


def _rss_mb(pid: int) -> float:
    out = subprocess.run(["ps", "-o", "rss=", "-p", str(pid)], capture_output=True, text=True, check=False).stdout
    return sum(int(x) for x in out.split()) / 1024


def _answers_metadata(bootstrap: str) -> bool:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    try:
        AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(timeout=1)
    except KafkaException:
        return False
    return True


def measure(data_dir: Path, log_dir: Path) -> dict[str, float]:
    port = processes.free_port()
    started = time.monotonic()
    definition = service_defs.kafka_broker(port=port, data_dir=data_dir)
    figures = {"format_s": time.monotonic() - started}
    with processes.ProcessGroup(log_dir) as group:
        service = group.start(definition)
        figures["port_open_s"] = time.monotonic() - started
        if not processes.wait_until(lambda: _answers_metadata(f"127.0.0.1:{port}"), timeout=60):
            raise processes.ServiceFailed("the broker did not answer a metadata request within 60 s")
        figures["metadata_s"] = time.monotonic() - started
        time.sleep(3)
        figures["rss_mb"] = _rss_mb(service.process.pid)
        stopping = time.monotonic()
    figures["stop_s"] = time.monotonic() - stopping
    return figures


def main(argv: list[str]) -> int:
    starts = int(argv[0]) if argv else 5
    runs: dict[str, list[dict[str, float]]] = {"fresh": [], "restart": []}
    for _ in range(starts):
        with tempfile.TemporaryDirectory() as tmp:
            for kind in runs:
                figures = measure(Path(tmp) / "kafka", Path(tmp) / f"logs-{kind}")
                runs[kind].append(figures)
                print(kind, " ".join(f"{k}={v:.1f}" for k, v in figures.items()), flush=True)
    for kind, rows in runs.items():
        medians = {key: statistics.median(row[key] for row in rows) for key in rows[0]}
        print(f"median {kind} (n={len(rows)}):", " ".join(f"{k}={v:.1f}" for k, v in medians.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
