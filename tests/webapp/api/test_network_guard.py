"""Connections cannot reach forbidden networks, tests are rate-limited, and servers' raw replies are not echoed."""

from __future__ import annotations

import http.server
import threading

import pytest

from webapp.connections.models import ClickHouseConnection, KafkaConnection
from webapp.connections.services import clickhouse_connection_create

KAFKA = "/api/v1/connections/kafka/"
CLICKHOUSE = "/api/v1/connections/clickhouse/"
METADATA = "169.254.169.254"


@pytest.mark.parametrize(
    ("url", "data"),
    [
        (CLICKHOUSE, {"name": "m", "host": METADATA, "port": 80}),
        (f"{CLICKHOUSE}test/", {"name": "m", "host": METADATA, "port": 80}),
        (KAFKA, {"name": "m", "bootstrap_servers": f"{METADATA}:80"}),
        (f"{KAFKA}test/", {"name": "m", "bootstrap_servers": f"127.0.0.1:9092,{METADATA}:80"}),
        (f"{KAFKA}test/", {"name": "m", "bootstrap_servers": "[fd00:ec2::254]:80"}),
        (f"{CLICKHOUSE}test/", {"name": "m", "host": "[::ffff:169.254.169.254]", "port": 80}),
    ],
)
def test_the_metadata_service_is_out_of_reach(api, url, data):
    response = api.post(url, data, format="json")
    assert response.status_code == 400, response.content
    assert "may not connect to" in response.json()["errors"][0]["message"]
    assert not KafkaConnection.objects.exists() and not ClickHouseConnection.objects.exists()


def test_a_saved_connection_is_checked_again_when_used(api, owner, settings, kafka_conn, ch_conn):
    # Loopback is allowed by default (the local stack); production forbids it with one setting.
    assert api.post(f"{KAFKA}{kafka_conn.pk}/test/").status_code == 200
    settings.CLEARFLOW_FORBIDDEN_NETWORKS = [*settings.CLEARFLOW_FORBIDDEN_NETWORKS, "127.0.0.0/8", "::1/128"]
    for url in (f"{KAFKA}{kafka_conn.pk}/test/", f"{KAFKA}{kafka_conn.pk}/topics/", f"{CLICKHOUSE}{ch_conn.pk}/test/"):
        response = api.post(url) if url.endswith("test/") else api.get(url)
        assert response.status_code == 400, (url, response.content)
        assert response.json()["code"] == "forbidden_address"


def test_a_job_spec_is_not_built_for_a_forbidden_host(owner, settings, kafka_conn, ch_conn):
    from tests.webapp.conftest import orders_spec
    from webapp.connections.network_guard import ForbiddenAddressError
    from webapp.pipelines.stored_specs import parse, with_connections

    spec = parse(orders_spec("t", "db"), name="p", kafka_connection=kafka_conn, clickhouse_connection=ch_conn)
    settings.CLEARFLOW_FORBIDDEN_NETWORKS = ["127.0.0.0/8", "::1/128"]
    with pytest.raises(ForbiddenAddressError):
        with_connections(spec, name="p", kafka_connection=kafka_conn, clickhouse_connection=ch_conn)


def test_connection_tests_are_rate_limited_per_user(api, other_api, settings):
    settings.CONNECTION_TESTS_PER_MINUTE = 3
    unsaved = {"name": "x", "host": "127.0.0.1", "port": 1}
    codes = [api.post(f"{CLICKHOUSE}test/", unsaved, format="json").status_code for _ in range(5)]
    assert codes == [502, 502, 502, 429, 429]
    assert api.post(f"{CLICKHOUSE}test/", unsaved, format="json")["Retry-After"]
    assert other_api.post(f"{CLICKHOUSE}test/", unsaved, format="json").status_code == 502


class _Banner(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        body = b"<html>SECRET-INTERNAL-BANNER nginx/1.2.3</html>"
        self.send_response(500)
        self.send_header("Server", "internal-admin/9.9")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def banner_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Banner)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_server_that_is_not_clickhouse_is_not_echoed(api, owner, banner_server):
    connection = clickhouse_connection_create(
        owner=owner, data={"name": "b", "host": "127.0.0.1", "port": banner_server}
    )
    response = api.post(f"{CLICKHOUSE}{connection.pk}/test/")
    assert response.status_code == 502
    text = response.content.decode()
    assert "SECRET-INTERNAL-BANNER" not in text and "nginx" not in text and "internal-admin" not in text
