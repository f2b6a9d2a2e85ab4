"""Connections cannot reach forbidden networks, tests are rate-limited, and servers' raw replies are not echoed."""

from __future__ import annotations

import http.server
import threading

import pytest

from tests.webapp.heavy import answered
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
    settings.CONNECTION_REQUESTS_PER_MINUTE = 3
    unsaved = {"name": "x", "host": "127.0.0.1", "port": 1}
    codes = [api.post(f"{CLICKHOUSE}test/", unsaved, format="json").status_code for _ in range(5)]
    assert codes == [502, 502, 502, 429, 429]
    assert api.post(f"{CLICKHOUSE}test/", unsaved, format="json")["Retry-After"]
    assert other_api.post(f"{CLICKHOUSE}test/", unsaved, format="json").status_code == 502


def test_browsing_a_server_shares_the_connection_tests_limit(api, settings, ch_conn, kafka_conn):
    """A list of databases or topics connects to a host the user chose, like a test: one limit for all of them,
    else the browse endpoints make a port scanner of the app."""
    settings.CONNECTION_REQUESTS_PER_MINUTE = 3
    answers = [
        api.get(f"{CLICKHOUSE}{ch_conn.pk}/databases/"),
        api.get(f"{KAFKA}{kafka_conn.pk}/topics/"),
        api.post(f"{CLICKHOUSE}{ch_conn.pk}/test/"),
        api.get(f"{CLICKHOUSE}{ch_conn.pk}/databases/"),
        api.get(f"{CLICKHOUSE}{ch_conn.pk}/databases/default/tables/"),
        answered(api, api.post(f"{KAFKA}{kafka_conn.pk}/sample/", {"topics": ["t"]}, format="json")),
    ]
    assert [a.status_code for a in answers] == [200, 200, 200, 429, 429, 429], [a.content for a in answers]
    refused = answers[3]
    assert refused["Retry-After"] and refused.json()["code"] == "throttled"
    assert "Too many requests that connect to a server" in refused.json()["message"]
    assert "at most 3 a minute" in refused.json()["message"]


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


@pytest.fixture
def private_off(settings):
    settings.CLEARFLOW_ALLOW_PRIVATE_NETWORKS = False
    # The operator's own Kafka and ClickHouse stay reachable: here, somewhere else than the addresses tried.
    settings.KAFKA_BOOTSTRAP_SERVERS = "kafka.invalid:9092"
    settings.CLICKHOUSE_HOST, settings.CLICKHOUSE_PORT = "clickhouse.invalid", 8123
    return settings


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", "10.1.2.3", "192.168.0.7", "172.17.0.2"])
def test_loopback_and_private_addresses_are_refused_unless_allowed(api, private_off, host):
    for url, data in (
        (f"{KAFKA}test/", {"name": "p", "bootstrap_servers": f"{host}:9092"}),
        (f"{CLICKHOUSE}test/", {"name": "p", "host": host, "port": 8123}),
        (KAFKA, {"name": "p", "bootstrap_servers": f"{host}:9092"}),
    ):
        response = api.post(url, data, format="json")
        assert response.status_code == 400, (url, response.content)
        assert "loopback or private address" in response.json()["errors"][0]["message"]
    assert not KafkaConnection.objects.exists() and not ClickHouseConnection.objects.exists()


def test_an_open_and_a_closed_loopback_port_get_the_same_answer(api, private_off, kafka_bootstrap):
    open_port = int(kafka_bootstrap.rsplit(":", 1)[1])
    answers = [
        api.post(f"{KAFKA}test/", {"name": "p", "bootstrap_servers": f"127.0.0.1:{port}"}, format="json")
        for port in (open_port, _closed_port())
    ]
    assert [a.status_code for a in answers] == [400, 400]
    assert answers[0].json()["errors"] == answers[1].json()["errors"]


def test_a_saved_loopback_connection_is_refused_when_used(api, kafka_conn, ch_conn, request):
    request.getfixturevalue("private_off")  # after the connections were saved (allowed then)
    for url in (f"{KAFKA}{kafka_conn.pk}/test/", f"{CLICKHOUSE}{ch_conn.pk}/test/"):
        response = api.post(url)
        assert response.status_code == 400 and response.json()["code"] == "forbidden_address"


def test_the_configured_kafka_and_clickhouse_stay_reachable(api, private_off, kafka_bootstrap, clickhouse_server):
    private_off.KAFKA_BOOTSTRAP_SERVERS = kafka_bootstrap
    private_off.CLICKHOUSE_HOST, private_off.CLICKHOUSE_PORT = clickhouse_server.host, clickhouse_server.port
    kafka = api.post(f"{KAFKA}test/", {"name": "k", "bootstrap_servers": kafka_bootstrap}, format="json")
    clickhouse_data = {"name": "c", "host": clickhouse_server.host, "port": clickhouse_server.port}
    clickhouse = api.post(f"{CLICKHOUSE}test/", clickhouse_data, format="json")
    assert (kafka.status_code, clickhouse.status_code) == (200, 200), (kafka.content, clickhouse.content)
    # Another port of the same host is not the configured endpoint.
    other = api.post(f"{KAFKA}test/", {"name": "k", "bootstrap_servers": f"127.0.0.1:{_closed_port()}"}, format="json")
    assert other.status_code == 400


@pytest.fixture
def raw_banner_server():
    """A TCP server that answers anything with a few bytes of its own, then closes (not Kafka, not HTTP)."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.recv(200)
                conn.sendall(b"ZQXJ SECRET-INTERNAL-BANNER\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(timeout=5)
    server.close()


def test_a_kafka_test_against_another_server_does_not_echo_its_bytes(api, raw_banner_server):
    response = api.post(
        f"{KAFKA}test/", {"name": "b", "bootstrap_servers": f"127.0.0.1:{raw_banner_server}"}, format="json"
    )
    assert response.status_code == 502, response.content
    text = response.content.decode()
    # "ZQXJ" read as a big-endian length is 1515280458: neither the bytes nor that number come back.
    assert "ZQXJ" not in text and "SECRET" not in text and "1515280458" not in text
    assert "does not answer in Kafka's protocol" in response.json()["message"]


def test_production_compose_does_not_allow_private_networks():
    import yaml

    from tests.test_deployment import REPO

    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    value = compose["x-app-env"]["CLEARFLOW_ALLOW_PRIVATE_NETWORKS"]
    assert value.endswith(":-false}"), value


REGISTRY = "/api/v1/connections/schema-registry/"


@pytest.mark.parametrize("url", [REGISTRY, f"{REGISTRY}test/"])
def test_a_registry_connection_holds_one_url(api, url):
    from webapp.connections.models import SchemaRegistryConnection

    listed = {"name": "r", "url": f"http://127.0.0.1:1/x,http://{METADATA}/latest/meta-data/"}
    response = api.post(url, listed, format="json")
    assert response.status_code == 400, response.content
    text = response.content.decode()
    assert "may not connect to" in text or "one URL per registry connection" in text, text
    assert not SchemaRegistryConnection.objects.exists()


def test_a_registry_url_with_a_comma_is_refused_in_words(api):
    from webapp.connections.models import SchemaRegistryConnection

    response = api.post(REGISTRY, {"name": "r", "url": "http://127.0.0.1:1/x,http://127.0.0.1:2/"}, format="json")
    assert response.status_code == 400, response.content
    assert "one URL per registry connection" in response.content.decode()
    assert not SchemaRegistryConnection.objects.exists()


@pytest.mark.fast
def test_the_guard_names_every_host_of_a_url_list():
    from webapp.connections.network_guard import url_endpoints

    assert url_endpoints(f"http://127.0.0.1:1/x,http://{METADATA}/y") == [("127.0.0.1", 1), (METADATA, 80)]


class _NotFoundPage(_Banner):
    def _answer(self) -> None:
        body = b"<html><h1>404</h1>SECRET-INTERNAL-PAGE build 4.5.6</html>"
        self.send_response(404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def not_found_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFoundPage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_registry_test_names_the_status_not_the_page(api, not_found_server):
    response = api.post(f"{REGISTRY}test/", {"name": "r", "url": f"http://127.0.0.1:{not_found_server}"}, format="json")
    assert response.status_code == 502, response.content
    text = response.content.decode()
    assert "SECRET-INTERNAL-PAGE" not in text and "4.5.6" not in text and "<html>" not in text
    assert "answered 404 (Not Found)" in response.json()["message"]
