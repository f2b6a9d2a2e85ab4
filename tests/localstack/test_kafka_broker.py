"""The local Kafka broker starts when the port next to its client port is taken, and keeps its controller port."""

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path

from localstack import processes, service_defs


@contextlib.contextmanager
def _holding_a_port_whose_neighbour_is_free() -> Iterator[socket.socket]:
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
            holder.bind(("127.0.0.1", 0))
            holder.listen()
            if processes.port_bindable("127.0.0.1", holder.getsockname()[1] - 1):
                yield holder
                return
    raise AssertionError("no free port next to a taken one in 50 tries")


def test_the_broker_starts_when_its_preferred_controller_port_is_taken(tmp_path: Path) -> None:
    # What `make up` and the stack tests do: the controller on the client port + 1. Here another program holds it.
    with _holding_a_port_whose_neighbour_is_free() as holder:
        taken = holder.getsockname()[1]
        client_port = taken - 1
        data_dir = tmp_path / "kafka"
        with processes.ProcessGroup(tmp_path / "logs") as group:
            group.start(service_defs.kafka_broker(port=client_port, controller_port=taken, data_dir=data_dir))
            assert processes.tcp_open("127.0.0.1", client_port), "the broker answers on its client port"
            controller_port = int((data_dir / "controller.port").read_text())
            assert controller_port != taken
            assert processes.tcp_open("127.0.0.1", controller_port), "the controller listens on the port it chose"

        # Started again on the same storage, it listens where its storage was formatted, whatever is asked.
        with processes.ProcessGroup(tmp_path / "logs-again") as group:
            group.start(service_defs.kafka_broker(port=client_port, controller_port=taken, data_dir=data_dir))
            assert processes.tcp_open("127.0.0.1", controller_port)
