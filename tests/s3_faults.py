"""An object store that fails on demand: an HTTP proxy in front of a real S3 API (S3Proxy) that answers 500 to the
writes under a key prefix it is told to refuse, as S3 does when it is overloaded (and a store on a full disk does).

Requests pass through unchanged (the client signs its Host header, which the proxy keeps), so everything not
refused is the real store's answer."""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from localstack.processes import free_port

INTERNAL_ERROR = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code>'
    b"<Message>We encountered an internal error. Please try again.</Message></Error>"
)
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


class FailingS3Proxy:
    """`endpoint` is the store's address for clients; `refuse_writes(substring)` makes every PUT and POST whose path
    contains it answer 500 until `heal()`; `refused` counts those answers."""

    def __init__(self, upstream: str) -> None:
        target = urlsplit(upstream)
        self.upstream_host, self.upstream_port = target.hostname or "127.0.0.1", target.port or 80
        self.refused = 0
        self.writes: list[str] = []  # the paths written through it (PUT, POST), for a failing test to show
        self._refusing: str | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", free_port()), self._handler())
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FailingS3Proxy:
        threading.Thread(target=self._server.serve_forever, name="failing-s3-proxy", daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def refuse_writes(self, path_part: str) -> None:
        self._refusing = path_part

    def heal(self) -> None:
        self._refusing = None

    def _refuses(self, method: str, path: str) -> bool:
        if method in ("PUT", "POST"):
            self.writes.append(f"{method} {path}")
        part = self._refusing
        if part is None or method not in ("PUT", "POST") or part not in path:
            return False
        with self._lock:
            self.refused += 1
        return True

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive and `Expect: 100-continue`, as the AWS SDK expects

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _relay(self) -> None:
                body = self._body()
                if proxy._refuses(self.command, self.path):
                    self.send_response(500)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(INTERNAL_ERROR)))
                    self.end_headers()
                    self.wfile.write(INTERNAL_ERROR)
                    return
                upstream = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=120)
                try:
                    upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                    for name, value in self.headers.items():
                        if name.lower() not in HOP_BY_HOP and name.lower() not in ("content-length", "expect"):
                            upstream.putheader(name, value)
                    upstream.putheader("Content-Length", str(len(body)))
                    upstream.endheaders(body)
                    answer = upstream.getresponse()
                    payload = answer.read()
                finally:
                    upstream.close()
                self.send_response(answer.status, answer.reason)
                head = self.command == "HEAD"  # its Content-Length is the object's, and it has no body
                for name, value in answer.getheaders():
                    if name.lower() not in HOP_BY_HOP and (head or name.lower() != "content-length"):
                        self.send_header(name, value)
                if not head:
                    self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if not head:
                    self.wfile.write(payload)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _relay

        return Handler
