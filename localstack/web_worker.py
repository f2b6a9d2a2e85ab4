"""gunicorn's threaded worker for the local stack, with a read timeout on every client socket.

gunicorn's own threaded worker hands an idle new connection back to its poller after a few seconds, but a client
that has sent part of a request and then waits keeps a thread reading: 8 such sockets held every thread of the
2 workers x 4 threads of `make up`, and the app stopped answering. Here each read of a request (and each write
of its answer) that waits longer than READ_TIMEOUT_SECONDS fails, and gunicorn closes that connection. In
docker-compose nginx sits in front and buffers requests, so the app's gunicorn needs none of this.
"""

from __future__ import annotations

from typing import Any

from gunicorn.workers.gthread import ThreadWorker

READ_TIMEOUT_SECONDS = 10.0


class ReadTimeoutThreadWorker(ThreadWorker):
    def handle(self, conn: Any) -> Any:
        """gunicorn's `handle`, the connection's socket given a timeout once it is set up for this request."""
        set_up = conn.init

        def init() -> None:
            set_up()
            conn.sock.settimeout(READ_TIMEOUT_SECONDS)  # after init: it may wrap the socket (TLS)

        conn.init = init
        try:
            return super().handle(conn)
        finally:
            conn.init = set_up
