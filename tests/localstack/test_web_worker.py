"""The local stack's gunicorn worker: clients that send part of a request and wait cannot hold every thread."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from localstack.processes import free_port
from tests.test_deployment import REPO

THREADS = 2 * 4  # what `make up` runs: 2 workers x 4 threads


def test_stalled_clients_time_out_instead_of_holding_every_thread(tmp_path: Path) -> None:
    (tmp_path / "hello.py").write_text(
        "def app(environ, start_response):\n"
        "    start_response('200 OK', [('Content-Type', 'text/plain')])\n"
        "    return [b'ok']\n"
    )
    port = free_port()
    argv = [str(Path(sys.executable).parent / "gunicorn"), "hello:app", "--chdir", str(tmp_path),
            "--pythonpath", str(REPO), "--bind", f"127.0.0.1:{port}", "--workers", "2", "--threads", "4",
            "--worker-class", "localstack.web_worker.ReadTimeoutThreadWorker"]  # fmt: skip
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stalled: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "gunicorn did not start"
                time.sleep(0.2)
        for _ in range(THREADS):
            client = socket.create_connection(("127.0.0.1", port))
            client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # and nothing more
            stalled.append(client)
        time.sleep(1)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=25) as answer:
            assert answer.read() == b"ok"
    finally:
        for client in stalled:
            client.close()
        server.terminate()
        server.wait(timeout=20)
