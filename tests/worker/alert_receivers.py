"""Real local receivers for alert deliveries, started by the tests: an HTTP server (webhooks) and an SMTP server
(aiosmtpd). The deliveries run in the Celery worker's own process, where Django's test mail outbox cannot be seen,
so email goes over real SMTP to `SmtpReceiver`."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from localstack.processes import free_port


@dataclass
class Hit:
    path: str
    body: Any
    at: float


@dataclass
class WebhookReceiver:
    """Answers every POST with `status` (per path prefix when `statuses` names it) and records it."""

    status: int = 200
    statuses: dict[str, int] = field(default_factory=dict)
    hits: list[Hit] = field(default_factory=list)

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode(errors="replace")
                receiver.hits.append(Hit(self.path, body, time.monotonic()))
                status = next((s for p, s in receiver.statuses.items() if self.path.startswith(p)), receiver.status)
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def on(self, path: str) -> list[Hit]:
        return [hit for hit in self.hits if hit.path == path]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class SmtpReceiver:
    """aiosmtpd on a free local port; `messages` are the parsed emails received."""

    def __init__(self) -> None:
        from aiosmtpd.controller import Controller

        self.messages: list[tuple[float, list[str], Message]] = []
        receiver = self

        class Handler:
            async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
                receiver.messages.append(
                    (time.monotonic(), list(envelope.rcpt_tos), message_from_bytes(envelope.content))
                )
                return "250 OK"

        self.port = free_port()
        self.controller = Controller(Handler(), hostname="127.0.0.1", port=self.port)
        self.controller.start()

    def subjects(self) -> list[str]:
        return [str(message["Subject"]) for _, _, message in self.messages]

    def close(self) -> None:
        self.controller.stop()
