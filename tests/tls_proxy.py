"""ClickHouse behind HTTPS with a private CA, for real: a TLS-terminating TCP proxy in front of the test server.

chDB's HTTP server speaks plain HTTP only, as a ClickHouse behind a load balancer or an ingress often does; the
proxy plays that load balancer. It holds a server certificate signed by a CA generated here (the helpers of
`tests.kafka_security`), valid for 127.0.0.1 and localhost, so a client trusts it only when given that CA.
Bytes pass through unchanged (asyncio streams, one event loop in a daemon thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from tests.kafka_security import issue, make_ca


@dataclass(frozen=True)
class TlsEndpoint:
    host: str
    port: int
    ca_pem: str  # the private CA that signed the server certificate


class TlsProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        ca, ca_key = make_ca("ClearFlow test ClickHouse CA")
        server = issue(ca, ca_key, "clickhouse-tls", server=True)
        self.ca_pem = ca.certificate_pem
        self._dir = tempfile.TemporaryDirectory(prefix="clearflow-tls-proxy-")
        cert, key = Path(self._dir.name, "server.pem"), Path(self._dir.name, "server.key")
        cert.write_text(server.certificate_pem)
        key.write_text(server.key_pem)
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(cert, key)
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="tls-proxy", daemon=True)

    def start(self) -> TlsEndpoint:
        self._thread.start()
        started = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self._context), self._loop
        )
        self._server = started.result(timeout=10)
        port = self._server.sockets[0].getsockname()[1]
        return TlsEndpoint("127.0.0.1", port, self.ca_pem)

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._dir.cleanup()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _handle(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(self._pipe(client_reader, upstream_writer), self._pipe(upstream_reader, client_writer))

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (OSError, ssl.SSLError):
            pass  # the other side went away: close ours too
        finally:
            with contextlib.suppress(OSError, ssl.SSLError, RuntimeError):
                writer.close()
